// LockroomProjectService: one per open project; owns the connection to lockroom (a
// LockroomClient on `lockroom serve --stdio`, so sandboxes live in the user's shared server and
// survive the project closing), the core's models (ProcessHub, SandboxesModel, one SandboxReview
// per sandbox), and the answers to network questions (ApprovalNotifier). Connecting re-attaches
// this project's detached sandboxes. UI classes read the models and call the core; nothing here
// decides what the protocol means.
package dev.lockroom.intellij;

import com.intellij.notification.NotificationGroupManager;
import com.intellij.notification.NotificationType;
import com.intellij.openapi.Disposable;
import com.intellij.openapi.components.Service;
import com.intellij.openapi.project.Project;
import com.intellij.util.concurrency.AppExecutorUtil;
import dev.lockroom.core.ClientOptions;
import dev.lockroom.core.LockroomClient;
import dev.lockroom.core.ProcessHub;
import dev.lockroom.core.SandboxItem;
import dev.lockroom.core.SandboxesModel;
import dev.lockroom.core.approvals.Approvals;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.SandboxState;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

@Service(Service.Level.PROJECT)
public final class LockroomProjectService implements Disposable {
  /** A live connection and the models over it. */
  public record Connection(LockroomClient client, ProcessHub hub, SandboxesModel model) {}

  private final Project project;
  private final Map<String, SandboxReview> reviews = new ConcurrentHashMap<>();
  private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
  private CompletableFuture<Connection> connection;
  private volatile String selected;

  public LockroomProjectService(Project project) {
    this.project = project;
  }

  public static LockroomProjectService getInstance(Project project) {
    return project.getService(LockroomProjectService.class);
  }

  public Project project() {
    return project;
  }

  /** The project's folder (the sandbox's workspace), or null for a project without one. */
  public String workspace() {
    return project.getBasePath();
  }

  /** The connection, started (and this project's detached sandboxes re-attached) on first use or after lockroom went away. */
  public synchronized CompletableFuture<Connection> connect() {
    if (connection != null && !connection.isCompletedExceptionally()
        && (!connection.isDone() || connection.join().client().alive())) {
      return connection;
    }
    connection = CompletableFuture.supplyAsync(this::open, AppExecutorUtil.getAppExecutorService());
    return connection;
  }

  private Connection open() {
    LockroomSettings.Data s = LockroomSettings.getInstance().getState();
    LockroomClient client = LockroomClient.start(ClientOptions.builder(s.path).serveArgs(LockroomSettings.words(s.serverArgs))
        .client("lockroom-intellij", "0.1.0").networkApproval(true).build());
    ProcessHub hub = new ProcessHub(client);
    SandboxesModel model = new SandboxesModel(client, hub);
    model.onDidChange(() -> listeners.forEach(Runnable::run));
    Approvals.serve(client, new ApprovalNotifier(project), id -> {
      SandboxItem item = model.get(id);
      return item == null ? null : item.title();
    });
    client.on(Methods.WINDOW_LOG_MESSAGE, m -> {
      if (m.type() <= 2) notify(m.message(), m.type() == 1 ? NotificationType.ERROR : NotificationType.WARNING);
    });
    client.exited().thenAccept(exit -> {
      if (!exit.expected()) notify("lockroom went away (" + exit.describe() + "); it restarts on the next command", NotificationType.ERROR);
      listeners.forEach(Runnable::run);
    });
    model.reattach(workspace()).join();
    return new Connection(client, hub, model);
  }

  /** The review of a sandbox's changes, made once per sandbox. */
  public SandboxReview review(Connection c, String sandboxId) {
    return reviews.computeIfAbsent(sandboxId, id -> new SandboxReview(c.client(), id));
  }

  /** Called (off the EDT) when the models change; returns a function that unsubscribes. */
  public Runnable onChange(Runnable listener) {
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  public void select(String sandboxId) {
    selected = sandboxId;
  }

  /** The sandbox the user selected in the tool window, else the only live one, else null. */
  public String target(Connection c) {
    if (selected != null && c.model().get(selected) != null) return selected;
    List<SandboxItem> live = c.model().list().stream().filter(i -> i.entry().state() == SandboxState.READY).toList();
    return live.size() == 1 ? live.get(0).entry().sandboxId() : null;
  }

  public void notify(String text, NotificationType type) {
    NotificationGroupManager.getInstance().getNotificationGroup("lockroom").createNotification("lockroom", text, type).notify(project);
  }

  @Override
  public void dispose() {
    CompletableFuture<Connection> c = connection;
    reviews.values().forEach(SandboxReview::close);
    if (c == null || !c.isDone() || c.isCompletedExceptionally()) return;
    Connection conn = c.join();
    conn.model().close();
    conn.hub().close();
    // shutdown + exit; the sandboxes stay in the shared server for the next window (sandbox/attach)
    AppExecutorUtil.getAppExecutorService().execute(() -> conn.client().close(5_000));
  }
}
