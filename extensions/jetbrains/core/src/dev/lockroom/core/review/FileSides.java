// FileSides: a changed file's two sides for a diff viewer — the review's base and the sandbox's
// version — as bytes (null where that side has no file), as one view showed them.
package dev.lockroom.core.review;

import java.nio.charset.StandardCharsets;

public record FileSides(String path, String viewId, byte[] base, byte[] current, boolean binary) {
  public String baseText() {
    return base == null ? "" : new String(base, StandardCharsets.UTF_8);
  }

  public String currentText() {
    return current == null ? "" : new String(current, StandardCharsets.UTF_8);
  }
}
