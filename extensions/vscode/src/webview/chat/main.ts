// The chat view's page (bundled to dist/webview/chat.js): the agent picker and the start's
// progress or problem, the transcript (a Transcript fed by the extension's snapshots and patches,
// each changed entry re-rendered by render.ts), a "working" line, and the prompt box with Send /
// Stop and the agent's modes. Messages both ways are protocol.ts's. The draft, the picked agent
// and the opened thoughts survive the view being hidden (getState/setState); everything else
// comes again from the extension, which sends a snapshot whenever this page says `ready`.
import type { ChatSessionState } from "../../core/acp/chatTypes.js";
import { append, button, h } from "./dom.js";
import { formatCount, formatTokens, latestTurnStart } from "./present.js";
import type { AgentChoice, FileActions, FromWebview, Phase, Problem, ToWebview } from "./protocol.js";
import { renderEntry, type RenderContext } from "./render.js";
import { Transcript, type TranscriptChange } from "./transcript.js";

interface SavedState {
  draft: string;
  agent: string | null;
  openThoughts: number[];
}

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): SavedState | undefined;
  setState(state: SavedState): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const saved: SavedState = vscode.getState() ?? { draft: "", agent: null, openThoughts: [] };

let agents: AgentChoice[] = [];
let selectedAgent: string | null = saved.agent;
let workspace: string | null = null;
let phase: Phase = { state: "idle" };
let fileActions: FileActions = {};
let initialized = false;
const transcript = new Transcript();
const openThoughts = new Set<number>(saved.openThoughts);
let lastSession: ChatSessionState | null = null;
let startTimer: ReturnType<typeof setInterval> | undefined;

const send = (m: FromWebview) => vscode.postMessage(m);
const save = () => vscode.setState({ draft: prompt.value, agent: selectedAgent, openThoughts: [...openThoughts].slice(-200) });

// --- the page's fixed parts ---------------------------------------------------------------------

const status = h("div", { class: "status-strip", hidden: true });
const intro = h("section", { class: "intro", "aria-live": "polite" });
const log = h("div", { class: "transcript", role: "log", "aria-live": "polite", "aria-relevant": "additions text", "aria-label": "Conversation with the agent" });
const droppedNote = h("div", { class: "muted small dropped", hidden: true });
const working = h("div", { class: "working", role: "status", hidden: true });
const ended = h("div", { class: "ended-banner", hidden: true });
const scroller = h("main", { class: "scroller" }, intro, droppedNote, log, working, ended);
const prompt = h("textarea", { class: "prompt", rows: 1, "aria-label": "Message to the agent", disabled: true, spellcheck: "true" });
const modeSelect = h("select", { class: "mode-select", "aria-label": "The agent's mode", title: "The agent's mode", hidden: true });
const usage = h("span", { class: "usage muted small", hidden: true });
const sendButton = button("Send", () => submit(), { variant: "primary", class: "send", ariaLabel: "Send the message" });
const stopButton = button("Stop", () => send({ type: "cancel" }), { class: "stop", ariaLabel: "Stop the agent's turn", title: "Stop the agent's turn" });
stopButton.hidden = true;
const composer = h("div", { class: "composer" }, prompt, h("div", { class: "composer-bar" }, modeSelect, usage, h("span", { class: "spacer" }), stopButton, sendButton));

document.getElementById("app")!.append(status, scroller, composer);
prompt.value = saved.draft;

prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  }
});
prompt.addEventListener("input", () => {
  growPrompt();
  save();
});
modeSelect.addEventListener("change", () => send({ type: "setMode", modeId: modeSelect.value }));

// Links in the agent's markdown open through the extension (http/https only), never in here.
document.addEventListener("click", (e) => {
  const a = e.target instanceof Element ? e.target.closest("a") : null;
  if (!a) return;
  e.preventDefault();
  const href = a.getAttribute("href");
  if (href) send({ type: "openLink", href });
});

window.addEventListener("message", (e: MessageEvent<ToWebview>) => receive(e.data));
send({ type: "ready" });

// --- messages -----------------------------------------------------------------------------------

function receive(m: ToWebview): void {
  switch (m.type) {
    case "init":
      initialized = true;
      agents = m.agents;
      workspace = m.workspace;
      if (!selectedAgent || !agents.some((a) => a.name === selectedAgent)) selectedAgent = m.selectedAgent;
      fileActions = m.fileActions;
      setPhase(m.phase);
      return;
    case "agents":
      agents = m.agents;
      if (!selectedAgent || !agents.some((a) => a.name === selectedAgent)) selectedAgent = m.selectedAgent;
      return renderIntro();
    case "phase":
      return setPhase(m.phase);
    case "snapshot":
      return showChange(transcript.applySnapshot(m.snapshot));
    case "patch": {
      const change = transcript.applyPatch(m.patch);
      if (change) showChange(change);
      else send({ type: "resync" });
      return;
    }
    case "fileActions":
      fileActions = m.fileActions;
      return rerenderReviews();
    case "focus":
      return focusMain();
  }
}

function setPhase(next: Phase): void {
  const chatGone = next.state === "idle" || next.state === "starting" || next.state === "failed";
  phase = next;
  if (chatGone && transcript.version >= 0) {
    showChange(transcript.clear());
    fileActions = {};
  }
  renderIntro();
  renderChrome();
}

// --- the intro: picker, start progress, start problems ------------------------------------------

function renderIntro(): void {
  if (!initialized) return;
  if (startTimer) clearInterval(startTimer);
  startTimer = undefined;
  const p = phase;
  intro.hidden = p.state === "running" || p.state === "ended";
  if (intro.hidden) return intro.replaceChildren();
  if (p.state === "starting") {
    const elapsed = h("span", { "aria-hidden": "true" });
    const slow = h("div", { class: "muted small", hidden: true },
      "The first start of an agent can take a few minutes: lockroom prepares its image once, and later starts are quick.");
    intro.replaceChildren(
      h("div", { class: "starting" },
        h("div", { class: "starting-title" }, h("span", { class: "spinner", "aria-hidden": "true" }), h("span", {}, `Starting ${p.agent} in a sandbox…`)),
        h("div", { class: "muted small" }, "lockroom boots a microVM with a copy of this folder; the agent runs inside it. ", elapsed),
        slow,
        h("div", { class: "row" }, button("Cancel", () => send({ type: "cancelStart" }), { ariaLabel: "Cancel the start" }))),
    );
    // Only the clock changes each second (no re-render: focus and screen readers stay put).
    const tick = () => {
      const seconds = Math.max(0, Math.round((Date.now() - p.startedAt) / 1000));
      elapsed.textContent = seconds >= 2 ? `(${seconds} s)` : "";
      slow.hidden = seconds < 8;
    };
    tick();
    startTimer = setInterval(tick, 1000);
    return;
  }
  if (p.state === "failed") intro.replaceChildren(problemBox(p.problem, p.agent), welcome(true));
  else intro.replaceChildren(welcome(false));
}

function welcome(afterProblem: boolean): HTMLElement {
  const box = h("div", { class: "welcome" });
  if (!afterProblem) {
    box.append(
      h("h2", { class: "welcome-title" }, "Chat with a coding agent in a sandbox"),
      h("p", { class: "muted" }, "The agent works on a copy of this folder inside a disposable microVM. Nothing it changes reaches your files until you apply it."),
    );
  }
  if (!workspace) {
    box.append(
      h("p", {}, "Open a folder to start a chat about it."),
      h("div", { class: "row" }, button("Open Folder", () => send({ type: "command", name: "openFolder" }), { variant: "primary" })),
    );
    return box;
  }
  if (!agents.length) {
    box.append(h("p", {}, "No agent is configured."), h("div", { class: "row" }, button("Open Agent Settings", () => send({ type: "command", name: "openAgentSettings" }))));
    return box;
  }
  const select = h("select", { class: "agent-select", id: "agent-select", "aria-label": "Agent" });
  for (const a of agents) {
    const option = h("option", { value: a.name, title: a.detail }, a.name);
    option.selected = a.name === selectedAgent;
    select.append(option);
  }
  if (!agents.some((a) => a.name === selectedAgent)) selectedAgent = agents[0]!.name;
  const detail = h("div", { class: "muted small agent-detail" }, agents.find((a) => a.name === selectedAgent)?.detail ?? "");
  select.addEventListener("change", () => {
    selectedAgent = select.value;
    detail.textContent = agents.find((a) => a.name === selectedAgent)?.detail ?? "";
    save();
  });
  const start = button("Start", () => selectedAgent && send({ type: "start", agent: selectedAgent }), { variant: "primary", class: "start", ariaLabel: "Start the agent" });
  box.append(
    h("label", { class: "field-label", for: "agent-select" }, afterProblem ? "Try again, or pick another agent" : "Agent"),
    h("div", { class: "row picker" }, select, start),
    detail,
  );
  return box;
}

function problemBox(problem: Problem, agent: string): HTMLElement {
  return h("div", { class: "notice notice-error problem", role: "alert" },
    h("div", { class: "notice-title" }, problem.title),
    h("div", { class: "notice-text" }, problem.detail),
    problem.hint ? h("div", { class: "notice-text" }, problem.hint) : null,
    h("div", { class: "row" },
      ...problem.actions.map((a, i) =>
        button(a.label, () => send(a.command === "retry" ? { type: "start", agent } : { type: "command", name: a.command }), { variant: i === 0 ? "primary" : "secondary" }))));
}

// --- the transcript -------------------------------------------------------------------------------

function context(): RenderContext {
  return {
    root: workspace,
    agentName: phase.state === "idle" ? "Agent" : phase.agent,
    session: transcript.session,
    turnStart: latestTurnStart(transcript.entries),
    fileActions,
    openThoughts,
    send: (m) => {
      if (m.type === "answer" || m.type === "fileAction") disableButtonsOf(m);
      send(m);
    },
  };
}

function showChange(change: TranscriptChange): void {
  const stick = nearBottom();
  const ctx = context();
  if (change.reset) log.replaceChildren();
  for (const id of change.removed) log.querySelector(`:scope > [data-id="${id}"]`)?.remove();
  const index = new Map(transcript.entries.map((e, i) => [e.id, i]));
  for (const id of change.changed) {
    const i = index.get(id);
    if (i === undefined) continue;
    const entry = transcript.entries[i]!;
    const el = renderEntry(entry, ctx, i > 0 && transcript.entries[i - 1]!.kind === "user");
    const old = log.querySelector(`:scope > [data-id="${id}"]`);
    if (old) old.replaceWith(el);
    else log.append(el);
  }
  const s = transcript.session;
  if (lastSession && (lastSession.busy !== s.busy || lastSession.ended !== s.ended)) rerenderReviews();
  lastSession = s;
  renderChrome();
  if (stick) scroller.scrollTop = scroller.scrollHeight;
  save();
}

function rerenderReviews(): void {
  const ctx = context();
  transcript.entries.forEach((entry, i) => {
    if (entry.kind !== "tool" || !entry.review) return;
    log.querySelector(`:scope > [data-id="${entry.id}"]`)?.replaceWith(renderEntry(entry, ctx, i > 0 && transcript.entries[i - 1]!.kind === "user"));
  });
}

/** A click on an answer or file action: its buttons go inactive until the extension's update. */
function disableButtonsOf(m: FromWebview): void {
  if (m.type !== "answer" && m.type !== "fileAction") return;
  const el = document.activeElement;
  const group = el instanceof HTMLElement ? el.closest(".question, .file-actions") : null;
  group?.querySelectorAll("button").forEach((b) => {
    if (m.type === "answer" || b.textContent !== "Open Diff") b.disabled = true;
  });
}

function nearBottom(): boolean {
  return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
}

// --- status, working line, prompt box -------------------------------------------------------------

function renderChrome(): void {
  const s = transcript.session;
  const live = phase.state === "running" && !s.ended;
  const agent = phase.state === "idle" ? "" : phase.agent;

  status.hidden = phase.state !== "running" && phase.state !== "ended";
  if (!status.hidden) {
    const state = !live ? "Ended" : s.busy ? "Working" : "Ready";
    status.replaceChildren();
    append(status, [
      h("span", { class: `dot dot-${state.toLowerCase()}`, "aria-hidden": "true" }),
      h("span", { class: "status-agent" }, agent),
      s.title ? h("span", { class: "muted status-title", title: s.title }, s.title) : null,
      h("span", { class: "spacer" }),
      h("span", { class: "muted small" }, state),
    ]);
  }

  const dropped = transcript.dropped.entries;
  droppedNote.hidden = dropped === 0;
  droppedNote.textContent = `${formatCount(dropped)} earlier ${dropped === 1 ? "entry is" : "entries are"} no longer kept (the chat keeps the latest ones).`;

  const waiting = transcript.pendingQuestions.length > 0;
  working.hidden = !(live && s.busy);
  if (!working.hidden)
    working.replaceChildren(
      h("span", { class: waiting ? "status-icon status-pending" : "spinner", "aria-hidden": "true" }),
      h("span", {}, waiting ? "Waiting for your answer above" : `${agent} is working…`),
    );

  ended.hidden = phase.state !== "ended";
  if (!ended.hidden)
    ended.replaceChildren(
      h("span", {}, "To go on, start a new chat."),
      button("New Chat", () => send({ type: "command", name: "newChat" }), { variant: "primary" }),
    );

  composer.hidden = phase.state !== "running";
  prompt.disabled = !live;
  prompt.placeholder = live ? `Message ${agent} (Enter to send, Shift+Enter for a new line)` : phase.state === "starting" ? "Starting…" : "Start an agent to chat";
  sendButton.hidden = live && s.busy;
  sendButton.disabled = !live;
  stopButton.hidden = !(live && s.busy);

  const modes = s.modes?.availableModes ?? [];
  modeSelect.hidden = !live || modes.length < 2;
  if (!modeSelect.hidden) {
    const key = modes.map((m) => m.id).join("\n");
    if (modeSelect.dataset.key !== key) {
      modeSelect.replaceChildren(...modes.map((m) => h("option", { value: m.id, title: m.description ?? "" }, m.name)));
      modeSelect.dataset.key = key;
    }
    modeSelect.value = s.modes!.currentModeId;
  }

  usage.hidden = !live || !s.usage;
  if (s.usage) usage.textContent = `${formatTokens(s.usage.used)} / ${formatTokens(s.usage.size)} tokens`;
  growPrompt();
}

function submit(): void {
  const text = prompt.value;
  if (!text.trim() || prompt.disabled || transcript.session.busy) return;
  send({ type: "prompt", text });
  prompt.value = "";
  growPrompt();
  save();
  scroller.scrollTop = scroller.scrollHeight;
}

function growPrompt(): void {
  prompt.style.height = "auto";
  prompt.style.height = `${Math.min(prompt.scrollHeight, 240)}px`;
}

function focusMain(): void {
  if (!prompt.disabled) prompt.focus();
  else intro.querySelector<HTMLElement>("button.start, select")?.focus();
}
