// Approvals: answers lockroom's `network/approve` on a client by asking an Asker (the plugin's
// notification with buttons; a test's script). lockroom holds the guest's connection while it
// waits and gives up at `deadline` (then sends $/cancelRequest): the question is withdrawn at
// that moment — the asker's CancelToken fires — so no button answers a request that is gone.
// A dismissed question, a choice lockroom did not offer, or an asker that fails is a deny.
package dev.lockroom.core.approvals;

import dev.lockroom.core.LockroomClient;
import dev.lockroom.core.rpc.CancelToken;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.NetworkApproveParams;
import dev.lockroom.protocol.NetworkApproveResult;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

public final class Approvals {
  private Approvals() {}

  /** Shows the question; completes with the decision, or null when dismissed. `withdrawn` fires when the question is gone. */
  public interface Asker {
    CompletableFuture<NetworkApproveResult.Decision> ask(ApprovalQuestion question, CancelToken withdrawn);
  }

  /** Serves network/approve on `client`; `sandboxName` gives a sandbox's label for the message (may return null). Returns an unsubscribe function. */
  public static Runnable serve(LockroomClient client, Asker asker, Function<String, String> sandboxName) {
    return client.handle(Methods.NETWORK_APPROVE, (params, cancelled) -> answer(params, cancelled, asker, sandboxName));
  }

  static CompletableFuture<NetworkApproveResult> answer(NetworkApproveParams params, CancelToken cancelled, Asker asker,
      Function<String, String> sandboxName) {
    ApprovalQuestion q = ApprovalQuestion.of(params, System.currentTimeMillis(), sandboxName == null ? null : sandboxName.apply(params.sandboxId()));
    CancelToken withdraw = new CancelToken();
    cancelled.onCancel(withdraw::cancel);
    CompletableFuture<NetworkApproveResult.Decision> asked;
    try {
      asked = asker.ask(q, withdraw);
    } catch (RuntimeException e) {
      asked = CompletableFuture.completedFuture(null);
    }
    CompletableFuture<NetworkApproveResult.Decision> gone = new CompletableFuture<>();
    withdraw.onCancel(() -> gone.complete(null));
    CompletableFuture<NetworkApproveResult.Decision> deadline =
        new CompletableFuture<NetworkApproveResult.Decision>().completeOnTimeout(null, q.remainingMs(), TimeUnit.MILLISECONDS);
    return asked.exceptionally(e -> null).applyToEither(gone, d -> d).applyToEither(deadline, d -> d).thenApply(d -> {
      withdraw.cancel();
      boolean offered = d != null && q.choices().stream().anyMatch(c -> c.decision() == d);
      return NetworkApproveResult.builder().decision(offered ? d : NetworkApproveResult.Decision.DENY).build();
    });
  }
}
