// ACP content as the chat shows it (chatTypes.ts): content blocks as markdown or shown blocks
// without binary data, and tool call content with caps per item and per entry. Pure functions;
// the caps are parameters so the model's limits live in one place (chatModel.ts).
import type * as acp from "@agentclientprotocol/sdk";
import type { ShownBlock, ToolContent } from "./chatTypes.js";

export interface ToolContentLimits {
  /** Characters of one text item; beyond it the end is kept (outputs end with what matters). */
  textChars: number;
  /** Characters of one diff (old and new text together); beyond it the diff is omitted. */
  diffChars: number;
  /** Characters of all items of one tool call together; items past it are shortened or omitted. */
  entryChars: number;
  /** Items of one tool call; the rest are dropped (counted). */
  items: number;
}

/** A content block as markdown text (agent messages, thoughts, tool text). Binary data is never copied. */
export function blockMarkdown(block: acp.ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "resource_link":
      return `[${block.title ?? block.name}](${block.uri})`;
    case "resource":
      return "text" in block.resource ? block.resource.text : `[${block.resource.uri}](${block.resource.uri})`;
    case "image":
      return `*(image${block.mimeType ? `, ${block.mimeType}` : ""})*`;
    case "audio":
      return `*(audio${block.mimeType ? `, ${block.mimeType}` : ""})*`;
    default:
      return "";
  }
}

/** A content block of a user message, without binary data. */
export function shownBlock(block: acp.ContentBlock): ShownBlock {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "resource_link":
      return { type: "link", uri: block.uri, name: block.title ?? block.name };
    case "resource": {
      const r = block.resource;
      return { type: "resource", uri: r.uri, text: "text" in r ? r.text : null, mimeType: r.mimeType ?? null };
    }
    case "image":
      return { type: "image", mimeType: block.mimeType, uri: block.uri ?? null };
    case "audio":
      return { type: "audio", mimeType: block.mimeType };
    default:
      return { type: "text", text: "" };
  }
}

/** Characters a shown block holds (for the model's budget). */
export function shownChars(b: ShownBlock): number {
  switch (b.type) {
    case "text":
      return b.text.length;
    case "resource":
      return b.uri.length + (b.text?.length ?? 0);
    case "link":
      return b.uri.length + b.name.length;
    default:
      return 16;
  }
}

/** A user message's blocks, their text cut to `maxChars` in all (head kept). */
export function shownBlocks(blocks: acp.ContentBlock[], maxChars: number): { content: ShownBlock[]; truncatedChars: number } {
  let left = maxChars;
  let truncatedChars = 0;
  const content: ShownBlock[] = [];
  for (const block of blocks) {
    const shown = shownBlock(block);
    const size = shownChars(shown);
    if (size <= left) {
      content.push(shown);
      left -= size;
    } else if (shown.type === "text" && left > 0) {
      content.push({ type: "text", text: shown.text.slice(0, left) });
      truncatedChars += shown.text.length - left;
      left = 0;
    } else if (shown.type === "resource" && shown.text !== null) {
      truncatedChars += shown.text.length;
      content.push({ ...shown, text: null });
    } else {
      truncatedChars += size;
    }
  }
  return { content, truncatedChars };
}

/** A tool call's content within the limits, and how many items were dropped. */
export function toolContent(items: acp.ToolCallContent[], limits: ToolContentLimits): { content: ToolContent[]; dropped: number } {
  let left = limits.entryChars;
  const content: ToolContent[] = [];
  for (const item of items.slice(0, limits.items)) {
    if (item.type === "diff") {
      const oldText = item.oldText ?? null;
      const size = (oldText?.length ?? 0) + item.newText.length;
      const isNewFile = oldText === null;
      if (size > limits.diffChars || size > left) {
        content.push({ type: "diff", path: item.path, oldText: null, newText: null, isNewFile, omittedChars: size });
      } else {
        content.push({ type: "diff", path: item.path, oldText, newText: item.newText, isNewFile });
        left -= size;
      }
    } else if (item.type === "terminal") {
      content.push({ type: "terminal", terminalId: item.terminalId });
    } else {
      const text = blockMarkdown(item.content);
      const keep = Math.max(0, Math.min(text.length, limits.textChars, left));
      if (keep < text.length) content.push({ type: "text", text: text.slice(text.length - keep), truncatedChars: text.length - keep });
      else content.push({ type: "text", text });
      left -= keep;
    }
  }
  return { content, dropped: Math.max(0, items.length - limits.items) };
}

/** Characters a tool call's content holds. */
export function toolContentChars(content: ToolContent[]): number {
  let n = 0;
  for (const c of content) {
    if (c.type === "text") n += c.text.length;
    else if (c.type === "diff") n += c.path.length + (c.oldText?.length ?? 0) + (c.newText?.length ?? 0);
    else n += c.terminalId.length;
  }
  return n;
}
