// The agent's markdown as HTML: markdown-it with raw HTML off (the agent's text cannot add
// elements or scripts), linkify on, images shown as their links (the CSP would block remote ones
// anyway), and every link marked so the click handler in main.ts sends it to the extension,
// which opens only http(s) links. markdown-it's own link check already drops javascript:,
// vbscript:, file: and data: (but images) URLs.
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
md.disable("image");

const defaultLinkOpen = md.renderer.rules.link_open;
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  token.attrSet("class", "md-link");
  token.attrSet("title", token.attrGet("href") ?? "");
  return defaultLinkOpen ? defaultLinkOpen(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
};

/** HTML for `markdown` (safe to set as innerHTML: markdown-it escapes all text). */
export function renderMarkdown(markdown: string): string {
  return md.render(markdown);
}
