// ConflictSides: the three inputs of a merge dialog for a file whose apply conflicted: the
// review's base, the user's file as it is now on the host, and the sandbox's version (as the
// view showed it); the result is written to `hostFile`. Nothing else changes: the sandbox's
// change stays in the review until the user decides it.
package dev.lockroom.core.review;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

public record ConflictSides(String path, Path hostFile, byte[] base, byte[] yours, byte[] sandbox) {
  public String baseText() {
    return text(base);
  }

  public String yoursText() {
    return text(yours);
  }

  public String sandboxText() {
    return text(sandbox);
  }

  private static String text(byte[] b) {
    return b == null ? "" : new String(b, StandardCharsets.UTF_8);
  }
}
