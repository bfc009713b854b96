// A small element builder for the chat webview: h("div", {class: "x"}, child, "text") with
// attributes set as attributes (strings, or true for a bare one) and text always as text nodes,
// and button() for a real <button> with a label and a click handler.

export type Child = Node | string | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
}

export interface ButtonOptions {
  /** "primary" (the main action), "secondary", or "link" (text-only). */
  variant?: "primary" | "secondary" | "link";
  title?: string;
  /** An accessible name when the label alone is not clear (e.g. "Open diff of a.txt"). */
  ariaLabel?: string;
  disabled?: boolean;
  class?: string;
}

export function button(label: string, onClick: (e: MouseEvent) => void, options: ButtonOptions = {}): HTMLButtonElement {
  const b = h("button", {
    type: "button",
    class: [`btn`, `btn-${options.variant ?? "secondary"}`, options.class].filter(Boolean).join(" "),
    title: options.title,
    "aria-label": options.ariaLabel,
    disabled: options.disabled,
  }, label);
  b.addEventListener("click", onClick);
  return b;
}
