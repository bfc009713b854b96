// A project reopened (or the IDE restarted) at the protocol level, against the real lockroom in
// its shared-server mode: a first connection makes a sandbox with a command still running and a
// change to review, and goes away; a second one finds the sandbox detached, attaches it, gets the
// command's output written meanwhile, and reviews the same change.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lockroom.core.review.ReviewView;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.protocol.ProcessStartParams;
import dev.lockroom.protocol.SandboxAttachResult;
import dev.lockroom.protocol.SandboxCreateParams;
import dev.lockroom.protocol.SandboxState;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReloadTest {
  @Test
  void theSandboxItsRunningCommandAndItsChangesSurviveTheConnection() throws Exception {
    Path ws = Support.gitWorkspace(Map.of("f.txt", "one\n"));
    Path serverDir = Support.tempDir("lockroom-jetbrains-server-");
    // Shared (not --standalone), with short graces: a failing run leaves nothing behind for long.
    List<String> shared = List.of("--server-dir", serverDir.toString(), "--idle-exit", "2", "--detached-grace", "30",
        "--detached-changes-grace", "60");
    ClientOptions.Builder options = ClientOptions.builder(Support.lockroom()).serveArgs(shared);
    LockroomClient first = LockroomClient.start(options.build());
    String sandboxId;
    String late;
    try (ProcessHub hub = new ProcessHub(first); SandboxesModel model = new SandboxesModel(first, hub)) {
      sandboxId = Support.await(model.create(SandboxCreateParams.builder().workspace(Json.path(ws.toString())).label("reload test").build(),
          RequestOptions.kNone), "sandbox/create").sandboxId();
      GuestProcess edit = Support.await(hub.start(ProcessStartParams.builder().sandboxId(sandboxId)
          .argv(List.of("sh", "-c", "echo two > /workspace/f.txt")).build()), "edit");
      assertEquals(0L, Support.await(edit.exited(), "edit").exitCode());
      late = Support.await(hub.start(ProcessStartParams.builder().sandboxId(sandboxId)
          .argv(List.of("sh", "-c", "sleep 4; echo written-while-detached")).build()), "late").processId();
    }
    first.close(15_000);

    LockroomClient second = LockroomClient.start(options.build());
    try (ProcessHub hub = new ProcessHub(second); SandboxesModel model = new SandboxesModel(second, hub);
        SandboxReview review = new SandboxReview(second, sandboxId)) {
      List<SandboxAttachResult> attached = Support.await(model.reattach(ws.toString()), "reattach");
      assertEquals(List.of(sandboxId), attached.stream().map(a -> a.sandbox().sandboxId()).toList());
      assertEquals("reload test", model.get(sandboxId).entry().label());
      assertEquals(Boolean.TRUE, model.get(sandboxId).entry().attached());

      GuestProcess lateAgain = hub.adopt(sandboxId, late);
      GuestProcess.Collected out = Support.await(lateAgain.collect(), "the detached command's output");
      assertEquals("written-while-detached\n", out.stdout());
      assertEquals(0L, out.exit().exitCode());

      ReviewView view = Support.await(review.refresh(), "changes/list");
      assertEquals(List.of("modified f.txt"), view.files().stream().map(f -> f.status().wire() + " " + f.path()).toList());

      assertTrue(Support.await(model.reattach(ws.toString()), "nothing more").isEmpty());
      Support.await(model.destroy(sandboxId), "sandbox/destroy");
      Support.until(() -> model.get(sandboxId).entry().state() == SandboxState.GONE, 20_000, "the sandbox gone in the model");
    } finally {
      second.close(15_000);
      Support.deleteTree(ws);
      Support.deleteTree(serverDir);
    }
  }
}
