// SandboxReview: the review of one sandbox's changes, as the plugin's Changes view, diff viewer
// and hunk actions use it. It holds the view the user is looking at (the viewId of the last
// listing and the diffs fetched for it), and every decision names that view, so lockroom applies
// exactly what was shown or refuses with "changed since you reviewed it"
// (protocol/workspace.md, "Views"):
//   accept → changes/apply {viewId, select: [{path, hunks?}]}     (the host's file changes)
//   reject → changes/discard {viewId, select: [{path, hunks?}]}   (the guest's file goes back)
//   branch → changes/apply {viewId, mode: "branch", branch}
// After each decision the listing is refreshed (the review's base moved). Refreshes are driven
// by changes/changed (debounced), never by a poll. The mirror of the VS Code client's review.ts.
package dev.lockroom.core.review;

import dev.lockroom.core.ErrorKind;
import dev.lockroom.core.LockroomClient;
import dev.lockroom.core.LockroomException;
import dev.lockroom.protocol.ChangesApplyParams;
import dev.lockroom.protocol.ChangesContentParams;
import dev.lockroom.protocol.ChangesContentResult;
import dev.lockroom.protocol.ChangesDiffParams;
import dev.lockroom.protocol.ChangesDiscardParams;
import dev.lockroom.protocol.ChangesListParams;
import dev.lockroom.protocol.FileDiff;
import dev.lockroom.protocol.FileSelection;
import dev.lockroom.protocol.Hunk;
import dev.lockroom.protocol.Methods;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

public final class SandboxReview implements AutoCloseable {
  static final long kRefreshDebounceMs = 150;

  private final LockroomClient client;
  private final String sandboxId;
  private final Map<String, FileDiff> diffs = new ConcurrentHashMap<>();
  private final List<Consumer<ReviewView>> listeners = new CopyOnWriteArrayList<>();
  private final Runnable unsubscribe;
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "lockroom-review");
    t.setDaemon(true);
    return t;
  });
  private volatile ReviewView current;
  private long latestVersion;
  private ScheduledFuture<?> scheduled;
  private CompletableFuture<ReviewView> refreshing;
  private boolean again;

  public SandboxReview(LockroomClient client, String sandboxId) {
    this.client = client;
    this.sandboxId = sandboxId;
    this.unsubscribe = client.on(Methods.CHANGES_CHANGED, p -> {
      synchronized (this) {
        if (!p.sandboxId().equals(sandboxId) || p.version() <= latestVersion) return;
        latestVersion = p.version();
      }
      scheduleRefresh();
    });
  }

  public String sandboxId() {
    return sandboxId;
  }

  /** The latest listing, or null before the first. */
  public ReviewView view() {
    return current;
  }

  /** Called with every new listing (on the client's event thread); returns a function that unsubscribes. */
  public Runnable onDidChange(Consumer<ReviewView> listener) {
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  /** Something outside lockroom's notifications says the sandbox changed: a debounced refresh. */
  public void poke() {
    scheduleRefresh();
  }

  /** A fresh look at the guest; concurrent calls share one request, and one more runs after it when asked meanwhile. */
  public synchronized CompletableFuture<ReviewView> refresh() {
    if (refreshing != null) {
      again = true;
      return refreshing;
    }
    CompletableFuture<ReviewView> f = list();
    refreshing = f;
    f.whenComplete((v, e) -> {
      boolean more;
      synchronized (this) {
        refreshing = null;
        more = again;
        again = false;
      }
      if (more) refresh();
    });
    return f;
  }

  /** The hunks of a file in the view `viewId` (null: the latest listing; fetched once per view). */
  public CompletableFuture<FileDiff> diff(String path, String viewId) {
    return viewOf(viewId).thenCompose(view -> {
      ReviewView now = current;
      boolean latest = now != null && view.equals(now.viewId());
      FileDiff known = latest ? diffs.get(path) : null;
      if (known != null) return CompletableFuture.completedFuture(known);
      return client.changesDiff(ChangesDiffParams.builder().sandboxId(sandboxId).viewId(view).path(path).build()).thenApply(answer -> {
        for (FileDiff f : answer.files()) {
          if (!f.path().equals(path)) continue;
          ReviewView still = current;
          if (latest && still != null && view.equals(still.viewId())) diffs.put(path, f);
          return f;
        }
        throw new LockroomException(path + " has no change in this review", ErrorKind.NOT_FOUND);
      });
    });
  }

  /** The base and sandbox sides of a file in the view `viewId` (null: the latest). */
  public CompletableFuture<FileSides> sides(String path, String viewId) {
    return viewOf(viewId).thenCompose(view -> {
      CompletableFuture<ChangesContentResult> base = content(path, view, ChangesContentParams.Side.BASE);
      CompletableFuture<ChangesContentResult> cur = content(path, view, ChangesContentParams.Side.CURRENT);
      return base.thenCombine(cur, (b, c) -> new FileSides(path, view, bytes(b), bytes(c),
          (b != null && b.binary()) || (c != null && c.binary())));
    });
  }

  /** The merge dialog's inputs for a conflicted file of a workspace whose host folder is `root`. */
  public CompletableFuture<ConflictSides> conflictSides(Path root, String path, String viewId) {
    Path host = root.resolve(path).normalize();
    if (!host.startsWith(root.normalize())) {
      return CompletableFuture.failedFuture(new LockroomException(path + " is outside the workspace " + root, ErrorKind.INVALID_PARAMS));
    }
    return sides(path, viewId).thenApply(s -> {
      byte[] yours;
      try {
        yours = Files.exists(host) ? Files.readAllBytes(host) : null;
      } catch (IOException e) {
        throw new LockroomException("cannot read " + host + ": " + e.getMessage(), ErrorKind.UNAVAILABLE);
      }
      return new ConflictSides(path, host, s.base(), yours, s.current());
    });
  }

  /**
   * Writes the chosen files or hunks (everything, with a null `select`) to the host folder,
   * exactly as the view `viewId` showed them (null: the latest listing; a diff viewer passes the
   * view it displayed, which may be older than the list).
   */
  public CompletableFuture<ApplyOutcome> accept(List<FileSelection> select, String viewId) {
    String view;
    try {
      view = viewId != null ? viewId : viewForDecision();
    } catch (LockroomException e) {
      return CompletableFuture.failedFuture(e);
    }
    ChangesApplyParams.Builder p = ChangesApplyParams.builder().sandboxId(sandboxId).viewId(view);
    if (select != null) p.select(select);
    return client.changesApply(p.build()).thenCompose(r -> afterDecision().thenApply(x -> ApplyOutcome.of(r)));
  }

  /** Undoes the chosen files or hunks (as `viewId` showed them) in the guest; the host is not touched. */
  public CompletableFuture<Long> reject(List<FileSelection> select, String viewId) {
    String view;
    try {
      view = viewId != null ? viewId : viewForDecision();
    } catch (LockroomException e) {
      return CompletableFuture.failedFuture(e);
    }
    return client.changesDiscard(ChangesDiscardParams.builder().sandboxId(sandboxId).viewId(view).select(select).build())
        .thenCompose(r -> afterDecision().thenApply(x -> r.discarded()));
  }

  /** Commits the latest view's changes to `lockroom/NAME` in the user's repository; the checkout is not touched. */
  public CompletableFuture<BranchOutcome> saveAsBranch(String name, boolean force) {
    String view;
    try {
      view = viewForDecision();
    } catch (LockroomException e) {
      return CompletableFuture.failedFuture(e);
    }
    return client.changesApply(ChangesApplyParams.builder().sandboxId(sandboxId).viewId(view).mode(ChangesApplyParams.Mode.BRANCH)
        .branch(name).force(force).build()).thenApply(r -> {
          if (r.mode() != dev.lockroom.protocol.ChangesApplyResult.Mode.BRANCH) {
            throw new LockroomException("lockroom answered a branch apply with a " + r.mode() + " result", ErrorKind.PROTOCOL);
          }
          return new BranchOutcome(Boolean.TRUE.equals(r.created()), r.branch(), r.commit(),
              r.conflicts() == null ? List.of() : r.conflicts(), r.refused() == null ? List.of() : r.refused());
        });
  }

  /** The hunk of a file diff whose new-side lines hold `line` (1-based), for "accept the hunk here". */
  public static Hunk hunkAtLine(FileDiff diff, long line) {
    for (Hunk h : diff.hunks()) if (line >= h.newStart() && line < h.newStart() + Math.max(h.newLines(), 1)) return h;
    return null;
  }

  @Override
  public void close() {
    unsubscribe.run();
    timer.shutdownNow();
    listeners.clear();
  }

  private CompletableFuture<String> viewOf(String viewId) {
    if (viewId != null) return CompletableFuture.completedFuture(viewId);
    ReviewView now = current;
    if (now != null) return CompletableFuture.completedFuture(now.viewId());
    return refresh().thenApply(ReviewView::viewId);
  }

  private CompletableFuture<ChangesContentResult> content(String path, String view, ChangesContentParams.Side side) {
    return client.changesContent(ChangesContentParams.builder().sandboxId(sandboxId).viewId(view).path(path).side(side).build())
        .exceptionally(e -> {
          LockroomException le = LockroomException.from(e);
          if (le.kind() == ErrorKind.NOT_FOUND) return null; // that side has no file
          throw le;
        });
  }

  private static byte[] bytes(ChangesContentResult c) {
    if (c == null) return null;
    if ("base64".equals(c.dataEncoding())) return Base64.getDecoder().decode(c.data());
    return c.data().getBytes(StandardCharsets.UTF_8);
  }

  private CompletableFuture<ReviewView> list() {
    long version;
    synchronized (this) {
      version = latestVersion;
    }
    return client.changesList(ChangesListParams.builder().sandboxId(sandboxId).build()).thenApply(answer -> {
      ReviewView view = new ReviewView(answer.viewId(), answer.files(), answer.refused(), version);
      ReviewView before = current;
      if (before == null || !before.viewId().equals(view.viewId())) diffs.clear();
      current = view;
      for (Consumer<ReviewView> l : listeners) l.accept(view);
      return view;
    });
  }

  private synchronized void scheduleRefresh() {
    if (scheduled != null) scheduled.cancel(false);
    try {
      scheduled = timer.schedule(() -> {
        refresh().exceptionally(e -> null); // a sandbox that ended: its owner reports that
      }, kRefreshDebounceMs, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closed
    }
  }

  private String viewForDecision() {
    ReviewView now = current;
    if (now == null) throw new LockroomException("nothing has been reviewed yet: list the changes first", ErrorKind.WRONG_STATE);
    return now.viewId();
  }

  private CompletableFuture<Void> afterDecision() {
    return refresh().handle((v, e) -> null); // the next changes/changed refreshes it
  }
}
