// ApplyOutcome: what an accept (a worktree changes/apply) did, file by file, in the form a UI
// says in one notification: applied, merged with the user's edits, already as in the sandbox,
// conflicts (with the merge text; nothing written to those), refused (with the reason).
package dev.lockroom.core.review;

import dev.lockroom.protocol.ApplyStatus;
import dev.lockroom.protocol.ChangesApplyResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.stream.Collectors;

public record ApplyOutcome(List<String> applied, List<String> merged, List<String> unchanged, List<Conflict> conflicts,
    List<Refused> refused) {
  /** A file whose three-way merge conflicted: the text with conflict markers, for the merge dialog. */
  public record Conflict(String path, String text) {}

  public record Refused(String path, String reason) {}

  public static ApplyOutcome of(ChangesApplyResult result) {
    List<String> applied = new ArrayList<>();
    List<String> merged = new ArrayList<>();
    List<String> unchanged = new ArrayList<>();
    List<Conflict> conflicts = new ArrayList<>();
    List<Refused> refused = new ArrayList<>();
    if (result.files() != null) {
      for (ChangesApplyResult.File f : result.files()) {
        ApplyStatus s = f.status();
        if (s == ApplyStatus.APPLIED) applied.add(f.path());
        else if (s == ApplyStatus.MERGED) merged.add(f.path());
        else if (s == ApplyStatus.UNCHANGED) unchanged.add(f.path());
        else if (s == ApplyStatus.CONFLICT) conflicts.add(new Conflict(f.path(), decode(f.conflict(), f.conflictEncoding())));
        else refused.add(new Refused(f.path(), f.reason() != null ? f.reason() : "refused"));
      }
    }
    return new ApplyOutcome(List.copyOf(applied), List.copyOf(merged), List.copyOf(unchanged), List.copyOf(conflicts), List.copyOf(refused));
  }

  static String decode(String text, String encoding) {
    if (text == null) return "";
    if ("base64".equals(encoding)) return new String(Base64.getDecoder().decode(text), StandardCharsets.UTF_8);
    return text;
  }

  private static String n(int k, String one) {
    return k + " " + (k == 1 ? one : one + "s");
  }

  /** One sentence: "Applied 2 files; 1 conflict (a.txt), nothing written to it." */
  public String describe() {
    List<String> parts = new ArrayList<>();
    if (!applied.isEmpty()) parts.add("applied " + n(applied.size(), "file"));
    if (!merged.isEmpty()) parts.add("merged " + n(merged.size(), "file") + " with your edits");
    if (!unchanged.isEmpty()) parts.add(n(unchanged.size(), "file") + " already as in the sandbox");
    if (!conflicts.isEmpty()) {
      parts.add(n(conflicts.size(), "conflict") + " (" + conflicts.stream().map(Conflict::path).collect(Collectors.joining(", "))
          + "), nothing written to " + (conflicts.size() == 1 ? "it" : "them"));
    }
    if (!refused.isEmpty()) {
      parts.add(n(refused.size(), "file") + " refused (" + refused.stream().map(r -> r.path() + ": " + r.reason())
          .collect(Collectors.joining("; ")) + ")");
    }
    if (parts.isEmpty()) return "Nothing was applied.";
    String text = String.join("; ", parts);
    return Character.toUpperCase(text.charAt(0)) + text.substring(1) + ".";
  }
}
