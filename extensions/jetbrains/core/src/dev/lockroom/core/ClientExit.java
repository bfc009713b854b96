// ClientExit: why a connection to lockroom ended: the process's exit code or signal, its last
// stderr lines, and whether close() asked for it. describe() is the clause every failure names.
package dev.lockroom.core;

import java.util.List;

/**
 * @param code the exit code, or null when the process was killed by a signal (Java reports 128+N then; see signal)
 * @param signal the signal's number when the exit code says the process was killed (128+N), else null
 * @param stderrTail lockroom's last stderr lines (at most 20)
 * @param expected true when close() ended it
 */
public record ClientExit(Integer code, Integer signal, List<String> stderrTail, boolean expected) {
  static ClientExit of(int status, List<String> tail, boolean expected) {
    // Process.exitValue() is 128+N for a process killed by signal N on Linux.
    if (status > 128 && status < 128 + 65) return new ClientExit(null, status - 128, tail, expected);
    return new ClientExit(status, null, tail, expected);
  }

  /** "exit code 1; it said: …" or "killed by signal 9". */
  public String describe() {
    String how = signal != null ? "killed by signal " + signal : "exit code " + code;
    for (int i = stderrTail.size() - 1; i >= 0; i--) {
      if (!stderrTail.get(i).isBlank()) return how + "; it said: " + stderrTail.get(i).strip();
    }
    return how;
  }
}
