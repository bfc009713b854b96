// Lines added and removed between two texts, for the "+3 −1" beside each file of a change. The
// common head and tail are trimmed, then Myers' algorithm finds the shortest edit script's length
// within a work budget; past it (huge, very different files) the counts are estimated by lines
// that do not occur on the other side, and flagged `approximate`. Pure.

export interface LineCounts {
  added: number;
  removed: number;
  approximate: boolean;
}

/** A text's lines; a final newline does not make an empty last line. null and "" have none. */
export function splitLines(text: string | null): string[] {
  if (!text) return [];
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** Work (cells of Myers' search) allowed per count: keeps a click on a large diff quick. */
const defaultBudget = 20_000_000;

export function lineCounts(oldText: string | null, newText: string | null, budget = defaultBudget): LineCounts {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - start;
  const m = endB - start;
  if (n === 0 || m === 0) return { added: m, removed: n, approximate: false };
  const ids = new Map<string, number>();
  const id = (line: string) => {
    let v = ids.get(line);
    if (v === undefined) ids.set(line, (v = ids.size));
    return v;
  };
  const x = Int32Array.from(a.slice(start, endA), id);
  const y = Int32Array.from(b.slice(start, endB), id);
  const d = editDistance(x, y, Math.max(1, Math.floor(budget / (n + m))));
  if (d === null) return { ...estimate(x, y), approximate: true };
  return { added: (d + m - n) / 2, removed: (d - m + n) / 2, approximate: false };
}

/** Myers: the fewest inserts plus deletes turning `a` into `b`, or null beyond `maxD`. */
function editDistance(a: Int32Array, b: Int32Array, maxD: number): number | null {
  const n = a.length;
  const m = b.length;
  const limit = Math.min(maxD, n + m);
  const offset = limit + 1;
  const v = new Int32Array(2 * limit + 3);
  for (let d = 0; d <= limit; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return d;
    }
  }
  return null;
}

/** Lines of each side beyond what the other side has of the same line. */
function estimate(a: Int32Array, b: Int32Array): { added: number; removed: number } {
  const counts = new Map<number, number>();
  for (const line of a) counts.set(line, (counts.get(line) ?? 0) + 1);
  let added = 0;
  for (const line of b) {
    const c = counts.get(line) ?? 0;
    if (c > 0) counts.set(line, c - 1);
    else added++;
  }
  let removed = 0;
  for (const c of counts.values()) removed += c;
  return { added, removed };
}
