// BranchOutcome: what "save as branch" (changes/apply mode branch) did: the branch and commit
// when created, else the files that conflict with the user's HEAD; files left out.
package dev.lockroom.core.review;

import dev.lockroom.protocol.Refusal;
import java.util.List;

public record BranchOutcome(boolean created, String branch, String commit, List<String> conflicts, List<Refusal> refused) {
  /** The branch's short name (`lockroom/NAME`), or null. */
  public String shortName() {
    return branch == null ? null : branch.replaceFirst("^refs/heads/", "");
  }
}
