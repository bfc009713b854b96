// What a ChatModel may hold and how it keeps time: its bounds (ChatModel's header says what
// each does when reached) and its options, with the defaults the chat panel uses.

export interface ChatLimits {
  entries: number;
  totalChars: number;
  textChars: number;
  toolItems: number;
  toolTextChars: number;
  diffChars: number;
  toolEntryChars: number;
  planItems: number;
  commands: number;
  locations: number;
}

export const defaultChatLimits: Readonly<ChatLimits> = Object.freeze({
  entries: 2000,
  totalChars: 32 * 1024 * 1024,
  textChars: 200 * 1024,
  toolItems: 500,
  toolTextChars: 64 * 1024,
  diffChars: 2 * 1024 * 1024,
  toolEntryChars: 16 * 1024 * 1024,
  planItems: 200,
  commands: 500,
  locations: 200,
});

/** Timers, replaceable in tests. */
export interface ChatScheduler {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realScheduler: ChatScheduler = {
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface ChatModelOptions {
  /** The shortest time between two change events (default 50 ms). */
  coalesceMs?: number;
  limits?: Partial<ChatLimits>;
  scheduler?: ChatScheduler;
}
