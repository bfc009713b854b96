// ApprovalQuestion: lockroom's `network/approve` as a question a person answers with buttons:
// one line saying who wants to reach what, the choices in lockroom's order with short labels,
// and the time left before lockroom stops waiting (a notification shows a countdown and closes
// then). Pure: made from the params and a clock.
package dev.lockroom.core.approvals;

import dev.lockroom.protocol.NetworkApproveParams;
import dev.lockroom.protocol.NetworkApproveResult;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;

public record ApprovalQuestion(NetworkApproveParams params, String message, List<Choice> choices, long remainingMs) {
  public record Choice(NetworkApproveResult.Decision decision, String label) {}

  public static String label(NetworkApproveResult.Decision d) {
    switch (d) {
      case ALLOW_ONCE:
        return "Allow once";
      case ALLOW_SANDBOX:
        return "Allow in sandbox";
      case ALLOW_HOST:
        return "Allow host";
      default:
        return "Deny";
    }
  }

  /** "wget (pid 412) in fix the test wants to reach api.example.org:443 over https (GET /v1)." */
  public static String describe(NetworkApproveParams p, String sandboxName) {
    String who = p.process() != null ? p.process().command().split(" ")[0] + " (pid " + p.process().pid() + ")" : "A program";
    String where = sandboxName != null ? sandboxName : p.sandboxId();
    String what = p.method() != null && p.path() != null ? " (" + p.method() + " " + p.path() + ")" : "";
    return who + " in " + where + " wants to reach " + p.host() + ":" + p.port() + " over " + p.scheme() + what + ".";
  }

  public static ApprovalQuestion of(NetworkApproveParams p, long nowMs, String sandboxName) {
    long remaining;
    try {
      remaining = Math.max(0, Instant.parse(p.deadline()).toEpochMilli() - nowMs);
    } catch (DateTimeParseException | NullPointerException e) {
      remaining = p.timeoutMs();
    }
    List<Choice> choices = new ArrayList<>();
    for (NetworkApproveParams.Option o : p.options()) {
      NetworkApproveResult.Decision d = NetworkApproveResult.Decision.of(o.wire());
      if (d != null) choices.add(new Choice(d, label(d)));
    }
    return new ApprovalQuestion(p, describe(p, sandboxName), List.copyOf(choices), remaining);
  }
}
