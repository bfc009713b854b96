// @ts-check
// A tiny TAP-like reporter for the e2e tests: steps run in order against one workbench, each
// printing "ok N - name" or "not ok N - name" with the error (then the onFailure hook runs, e.g.
// a screenshot); finish() prints the closing "N passed, N failed" line and sets the exit status.
// After a failed step the rest are skipped, unless a step says it is independent (like close).

let number = 0;
let passed = 0;
let failed = 0;
let skipped = 0;
let broken = false;
/** @type {(number: number) => Promise<unknown>} */
let failureHook = async () => undefined;

/**
 * Sets what runs after a step fails, given the step's number (e.g. a screenshot).
 * @param {(number: number) => Promise<unknown>} hook
 */
export function onFailure(hook) {
  failureHook = hook;
}

/**
 * Runs one step and reports it.
 * @param {string} name
 * @param {() => Promise<unknown>} fn
 * @param {{ independent?: boolean }} [options] run even after an earlier step failed
 */
export async function step(name, fn, options = {}) {
  number++;
  if (broken && !options.independent) {
    skipped++;
    console.log(`ok ${number} - ${name} # SKIP an earlier step failed`);
    return;
  }
  const started = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok ${number} - ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    failed++;
    broken = true;
    console.log(`not ok ${number} - ${name}`);
    const text = error instanceof Error ? error.stack || error.message : String(error);
    // eslint-disable-next-line no-control-regex
    for (const line of text.replace(/\x1b\[[0-9;]*m/g, "").split("\n")) console.log(`  # ${line}`);
    await failureHook(number).catch((hookError) => console.log(`  # and on failure: ${hookError}`));
  }
}

/** Prints the plan and the closing line; the exit status is 1 when a step failed. */
export function finish() {
  console.log(`1..${number}`);
  console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
  process.exitCode = failed ? 1 : 0;
}

/**
 * Throws unless `condition`.
 * @param {unknown} condition
 * @param {string} message
 * @returns {asserts condition}
 */
export function check(condition, message) {
  if (!condition) throw new Error(message);
}
