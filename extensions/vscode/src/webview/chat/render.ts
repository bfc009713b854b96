// One transcript entry as elements: user messages, the agent's markdown, thoughts (collapsed),
// tool-call cards (kind, title, status, clickable locations, output, changed files with "Open
// diff"), permission questions as buttons, lockroom's review card (files with +/- counts, Apply /
// Keep, then per-file Apply / Discard and their results), plans as checklists, mode changes,
// notices, and how each turn ended. main.ts replaces an entry's element whenever it changes.
import type { ChatEntry, ChatSessionState, PermissionQuestion, PlanEntry, TextEntry, ToolContent, ToolEntry, UserEntry } from "../../core/acp/chatTypes.js";
import { button, h, type Child } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import {
  displayPath,
  exitText,
  fileRows,
  formatCount,
  offersFileActions,
  reviewNotes,
  stopReasonText,
  toolKindLabel,
  toolStatusLabel,
  type FileRow,
} from "./present.js";
import { fileActionKey, type FileActions, type FromWebview } from "./protocol.js";

export interface RenderContext {
  /** The workspace folder: paths under it are shown relative, and are clickable. */
  root: string | null;
  agentName: string;
  session: ChatSessionState;
  /** Id of the latest user message. */
  turnStart: number;
  fileActions: FileActions;
  /** Thoughts the user opened (kept open across re-renders). */
  openThoughts: Set<number>;
  send(message: FromWebview): void;
}

/** The element for `entry`; `startsResponse` when it is the first after a user message. */
export function renderEntry(entry: ChatEntry, ctx: RenderContext, startsResponse: boolean): HTMLElement {
  const el = h("div", { class: `entry entry-${entry.kind}`, "data-id": entry.id },
    startsResponse && entry.kind !== "user" ? h("div", { class: "who who-agent" }, ctx.agentName) : null,
    renderBody(entry, ctx));
  return el;
}

function renderBody(entry: ChatEntry, ctx: RenderContext): HTMLElement {
  switch (entry.kind) {
    case "user":
      return renderUser(entry);
    case "agent":
      return h("div", { class: "agent" }, markdown(entry), truncated(entry));
    case "thought":
      return renderThought(entry, ctx);
    case "tool":
      return entry.review ? renderReview(entry, ctx) : renderTool(entry, ctx);
    case "plan":
      return renderPlan(entry);
    case "mode":
      return h("div", { class: "divider" }, h("span", {}, `Mode: ${entry.name ?? entry.modeId}`));
    case "notice":
      return h("div", { class: `notice notice-${entry.severity === "error" ? "error" : entry.severity === "warning" ? "warning" : "info"}`, role: "note" },
        h("div", { class: "notice-title" }, entry.title),
        entry.description ? h("div", { class: "notice-text" }, entry.description) : null);
    case "turnEnd": {
      const text = stopReasonText(entry.stopReason);
      return h("div", { class: `turn-end${text ? " turn-end-said" : ""}` }, text);
    }
    case "turnError":
      return h("div", { class: "notice notice-error", role: "alert" },
        h("div", { class: "notice-title" }, "The turn failed"),
        h("div", { class: "notice-text" }, entry.message));
    case "exit": {
      const { text, error } = exitText(entry);
      const tail = error ? entry.stderrTail.filter((l) => l.trim()).slice(-6) : [];
      return h("div", { class: error ? "notice notice-error" : "divider", role: error ? "alert" : null },
        error ? h("div", { class: "notice-title" }, text) : h("span", {}, text),
        tail.length ? h("pre", { class: "tool-text" }, tail.join("\n")) : null);
    }
  }
}

function renderUser(entry: UserEntry): HTMLElement {
  const parts = entry.content.map((b): Child => {
    switch (b.type) {
      case "text":
        return b.text;
      case "link":
        return h("span", { class: "chip", title: b.uri }, b.name);
      case "resource":
        return h("span", { class: "chip", title: b.uri }, b.uri.split("/").pop() ?? b.uri);
      case "image":
        return h("span", { class: "chip" }, "image");
      case "audio":
        return h("span", { class: "chip" }, "audio");
    }
  });
  return h("div", { class: "user" },
    h("div", { class: "who" }, "You"),
    h("div", { class: "user-text" }, ...parts),
    entry.truncatedChars ? h("div", { class: "muted small" }, `${formatCount(entry.truncatedChars)} more characters not shown`) : null);
}

function markdown(entry: TextEntry): HTMLElement {
  const el = h("div", { class: "markdown" });
  el.innerHTML = renderMarkdown(entry.markdown); // markdown-it with html off escapes all text
  return el;
}

function truncated(entry: TextEntry): Child {
  return entry.truncatedChars ? h("div", { class: "muted small" }, `${formatCount(entry.truncatedChars)} more characters not shown`) : null;
}

function renderThought(entry: TextEntry, ctx: RenderContext): HTMLElement {
  const details = h("details", { class: "thought", open: ctx.openThoughts.has(entry.id) },
    h("summary", {}, "Thinking"),
    markdown(entry),
    truncated(entry));
  details.addEventListener("toggle", () => {
    if (details.open) ctx.openThoughts.add(entry.id);
    else ctx.openThoughts.delete(entry.id);
  });
  return details;
}

function toolHead(entry: ToolEntry, label: string): HTMLElement {
  return h("div", { class: "tool-head" },
    h("span", { class: `status-icon status-${entry.status}`, "aria-hidden": "true" }),
    h("span", { class: "tool-kind" }, label),
    h("span", { class: "tool-title", title: entry.title }, entry.title),
    h("span", { class: `tool-status status-text-${entry.status}` }, toolStatusLabel(entry.status)));
}

function renderTool(entry: ToolEntry, ctx: RenderContext): HTMLElement {
  const rows = fileRows(entry, ctx.root);
  const shownPaths = new Set(rows.map((r) => r.path));
  const locations = entry.locations.filter((l) => !shownPaths.has(displayPath(l.path, ctx.root)));
  return h("div", { class: `tool tool-${entry.status}` },
    toolHead(entry, toolKindLabel(entry.toolKind)),
    locations.length ? h("div", { class: "tool-locations" }, ...locations.map((l) => location(l.path, l.line, ctx))) : null,
    ...entry.content.map((c) => toolContent(c)),
    rows.length ? fileList(entry, rows, ctx, false) : null,
    entry.droppedContent ? h("div", { class: "muted small" }, `${formatCount(entry.droppedContent)} more items not kept`) : null,
    question(entry, ctx));
}

function location(path: string, line: number | null, ctx: RenderContext): HTMLElement {
  const isRoot = ctx.root !== null && path === ctx.root;
  const shown = isRoot ? `${path.split("/").pop() ?? path}/` : `${displayPath(path, ctx.root)}${line ? `:${line}` : ""}`;
  const onHost = isRoot || (ctx.root !== null && path.startsWith(`${ctx.root}/`));
  if (!onHost) return h("span", { class: "location", title: `${path} (in the sandbox)` }, shown);
  return button(shown, () => ctx.send({ type: "openFile", path, line }), {
    variant: "link",
    class: "location",
    title: `Open ${path}${line ? ` at line ${line}` : ""}`,
  });
}

function toolContent(c: ToolContent): Child {
  switch (c.type) {
    case "text":
      return c.text.trim()
        ? h("pre", { class: "tool-text", tabindex: "0" }, c.truncatedChars ? `… (${formatCount(c.truncatedChars)} characters before not kept)\n${c.text}` : c.text)
        : null;
    case "terminal":
      return h("div", { class: "muted small" }, "A terminal the editor cannot show.");
    case "diff":
      return null; // in the file list
  }
}

function renderReview(entry: ToolEntry, ctx: RenderContext): HTMLElement {
  const review = entry.review!;
  const rows = fileRows(entry, ctx.root);
  const actions = offersFileActions(entry, ctx.turnStart, ctx.session);
  const outcome = review.outcome;
  return h("div", { class: `tool review tool-${entry.status}`, role: "group", "aria-label": "Review of the sandbox's changes" },
    h("div", { class: "review-head" },
      h("span", { class: "review-badge" }, "Review"),
      h("span", { class: "tool-title", title: entry.title }, entry.title)),
    h("div", { class: "muted small review-sub" },
      entry.question?.state === "pending" ? "The agent changed these files in its sandbox. Your files are unchanged until you apply them." : null),
    fileList(entry, rows, ctx, actions),
    ...reviewNotes(entry).filter((n) => n !== outcome).map((n) => h("div", { class: "muted small" }, n)),
    question(entry, ctx),
    outcome ? h("div", { class: `review-outcome outcome-${entry.status}`, role: "status" }, outcome) : null);
}

function fileList(entry: ToolEntry, rows: FileRow[], ctx: RenderContext, actions: boolean): HTMLElement {
  return h("ul", { class: "files", "aria-label": "Changed files" }, ...rows.map((row) => fileRow(entry, row, ctx, actions)));
}

function fileRow(entry: ToolEntry, row: FileRow, ctx: RenderContext, actions: boolean): HTMLElement {
  const slash = row.path.lastIndexOf("/");
  const name = row.path.slice(slash + 1);
  const dir = slash >= 0 ? row.path.slice(0, slash) : "";
  const state = ctx.fileActions[fileActionKey(entry.id, row.path)];
  const done = state?.state === "applied" || state?.state === "discarded";
  const letter = row.change === "added" ? "A" : row.change === "deleted" ? "D" : "M";
  const changeWord = row.change === "added" ? "added" : row.change === "deleted" ? "deleted" : "modified";
  const counts = row.note
    ? h("span", { class: "muted small" }, row.note)
    : h("span", { class: "counts", "aria-label": `${row.added} lines added, ${row.removed} removed${row.approximate ? " (about)" : ""}` },
        h("span", { class: "plus" }, `+${row.added}`),
        h("span", { class: "minus" }, `−${row.removed}`));
  const fileActionButtons: Child[] = [];
  if (actions && !done) {
    const working = state?.state === "working";
    fileActionButtons.push(
      button("Apply", () => ctx.send({ type: "fileAction", entryId: entry.id, path: row.path, action: "apply" }), {
        ariaLabel: `Apply ${row.path} to your file`, title: "Apply this file to your workspace", disabled: working }),
      button("Discard", () => ctx.send({ type: "fileAction", entryId: entry.id, path: row.path, action: "discard" }), {
        ariaLabel: `Discard the change of ${row.path} in the sandbox`, title: "Undo this change in the sandbox (your file is not touched)", disabled: working }),
    );
  }
  return h("li", { class: `file${done ? " file-done" : ""}` },
    h("div", { class: "file-line" },
      h("span", { class: `file-badge file-${row.change}`, title: changeWord, "aria-label": changeWord }, letter),
      h("span", { class: "file-name", title: row.path }, name),
      dir ? h("span", { class: "file-dir", title: row.path }, dir) : null,
      counts,
      h("span", { class: "file-actions" },
        row.diffIndex !== null
          ? button("Open Diff", () => ctx.send({ type: "openDiff", entryId: entry.id, index: row.diffIndex! }), { variant: "link", ariaLabel: `Open the diff of ${row.path}` })
          : null,
        ...fileActionButtons)),
    state ? h("div", { class: `file-state state-${state.state}`, role: "status" }, state.message) : null);
}

function question(entry: ToolEntry, ctx: RenderContext): Child {
  const q: PermissionQuestion | undefined = entry.question;
  if (!q || q.state === "cancelled") return null;
  if (q.state === "selected") {
    const chosen = q.options.find((o) => o.optionId === q.optionId);
    return h("div", { class: "muted small answered" }, `You chose: ${chosen?.name ?? q.optionId ?? ""}`);
  }
  const primary = q.options.find((o) => o.kind === "allow_once" || o.kind === "allow_always")?.optionId;
  return h("div", { class: "question", role: "group", "aria-label": entry.review ? "Apply the changes?" : entry.title },
    ...q.options.map((o) =>
      button(o.name, () => ctx.send({ type: "answer", questionId: q.questionId, optionId: o.optionId }), {
        variant: o.optionId === primary ? "primary" : "secondary",
      })));
}

function renderPlan(entry: PlanEntry): HTMLElement {
  const done = entry.entries.filter((e) => e.status === "completed").length;
  return h("div", { class: "plan" },
    h("div", { class: "plan-head" }, h("span", {}, "Plan"), h("span", { class: "muted small" }, `${done} of ${entry.entries.length} done`)),
    h("ul", { class: "plan-items" },
      ...entry.entries.map((e) =>
        h("li", { class: `plan-item plan-${e.status}` },
          h("span", { class: "plan-check", "aria-hidden": "true" }),
          h("span", { class: "plan-text" }, e.content),
          h("span", { class: "sr-only" }, e.status === "completed" ? " (done)" : e.status === "in_progress" ? " (in progress)" : " (to do)")))));
}
