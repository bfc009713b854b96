// SandboxStarter: sandbox/create behind a cancellable background task. lockroom's `$/progress`
// (booting, building an image or a kit's package layer on a first create, kit setup commands)
// becomes the task's text and fraction; Cancel sends $/cancelRequest, and lockroom destroys the
// half-made sandbox (protocol/sandboxes.md, "Cancellation").
package dev.lockroom.intellij;

import com.intellij.openapi.progress.ProgressIndicator;
import com.intellij.openapi.progress.ProgressManager;
import com.intellij.openapi.progress.Task;
import com.intellij.openapi.project.Project;
import dev.lockroom.core.LockroomException;
import dev.lockroom.core.RequestOptions;
import dev.lockroom.core.rpc.CancelToken;
import dev.lockroom.protocol.SandboxCreateParams;
import dev.lockroom.protocol.SandboxCreateResult;
import com.intellij.notification.NotificationType;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public final class SandboxStarter {
  private SandboxStarter() {}

  /** Starts a sandbox on the project's folder with the settings' kits, size and network; completes with it. */
  public static CompletableFuture<SandboxCreateResult> start(Project project, String label) {
    LockroomProjectService service = LockroomProjectService.getInstance(project);
    String ws = service.workspace();
    CompletableFuture<SandboxCreateResult> result = new CompletableFuture<>();
    ProgressManager.getInstance().run(new Task.Backgroundable(project, "Starting a lockroom sandbox", true) {
      @Override
      public void run(ProgressIndicator indicator) {
        indicator.setIndeterminate(true);
        CancelToken cancel = new CancelToken();
        try {
          LockroomProjectService.Connection c = service.connect().get();
          SandboxCreateParams params = LockroomSettings.getInstance().defaults().createParams(ws == null ? null : Path.of(ws), null, label);
          CompletableFuture<SandboxCreateResult> create = c.model().create(params, new RequestOptions(p -> {
            if (p.title() != null) indicator.setText(p.title());
            if (p.message() != null) indicator.setText2(p.message());
            if (p.percentage() != null) {
              indicator.setIndeterminate(false);
              indicator.setFraction(p.percentage() / 100.0);
            }
          }, cancel));
          while (true) {
            if (indicator.isCanceled()) cancel.cancel();
            try {
              SandboxCreateResult r = create.get(100, TimeUnit.MILLISECONDS);
              service.select(r.sandboxId());
              result.complete(r);
              return;
            } catch (TimeoutException e) {
              // still starting
            }
          }
        } catch (Exception e) {
          LockroomException le = LockroomException.from(e);
          if (le.kind() != dev.lockroom.core.ErrorKind.CANCELLED) service.notify("No sandbox: " + le.getMessage(), NotificationType.ERROR);
          result.completeExceptionally(le);
        }
      }
    });
    return result;
  }
}
