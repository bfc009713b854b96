// The review model against the real lockroom (one sandbox for the class; the tests run in order
// and each works on files of its own): a branch, a sync of the host's edits, accept and reject
// per file and per hunk with the selection model (hunk ids surviving a partial accept), exactly
// the reviewed bytes applied, and a conflict with the user's edit with its merge inputs. The host
// folder is compared byte for byte around each decision; refreshes come from changes/changed.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lockroom.core.review.ApplyOutcome;
import dev.lockroom.core.review.BranchOutcome;
import dev.lockroom.core.review.ConflictSides;
import dev.lockroom.core.review.FileSides;
import dev.lockroom.core.review.ReviewSelection;
import dev.lockroom.core.review.ReviewView;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.protocol.FileChange;
import dev.lockroom.protocol.FileDiff;
import dev.lockroom.protocol.FileSelection;
import dev.lockroom.protocol.Hunk;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.ProcessStartParams;
import dev.lockroom.protocol.SandboxCreateParams;
import dev.lockroom.protocol.SandboxIdParams;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ReviewTest {
  static final String kTwentyLines = IntStream.rangeClosed(1, 20).mapToObj(i -> "line " + i + "\n").collect(Collectors.joining());

  private Path ws;
  private LockroomClient client;
  private ProcessHub hub;
  private SandboxReview review;
  private String sandboxId;

  @BeforeAll
  void createSandbox() throws Exception {
    ws = Support.gitWorkspace(Map.of("a.txt", kTwentyLines, "b.txt", "b\n", "keep.txt", "keep\n", "f.txt", "one\n",
        "c.txt", "first\nsecond\n", "r.txt", "r\n"));
    client = Support.startClient();
    hub = new ProcessHub(client);
    sandboxId = client.call(Methods.SANDBOX_CREATE, SandboxCreateParams.builder().workspace(Json.path(ws.toString())).build()).sandboxId();
    review = new SandboxReview(client, sandboxId);
  }

  @AfterAll
  void close() {
    review.close();
    hub.close();
    client.close(15_000);
    Support.deleteTree(ws);
  }

  private void guest(String script) {
    GuestProcess p = Support.await(hub.start(ProcessStartParams.builder().sandboxId(sandboxId).argv(List.of("sh", "-c", script))
        .cwd("/workspace").build()), "process/start");
    GuestProcess.Collected r = Support.await(p.collect(), script);
    assertEquals(0L, r.exit().exitCode(), "guest: " + script + ": " + r.stderr());
  }

  /** The next listing the model makes by itself (from changes/changed) that satisfies `ok`. */
  private CompletableFuture<ReviewView> nextView(Predicate<ReviewView> ok) {
    CompletableFuture<ReviewView> f = new CompletableFuture<>();
    Runnable[] stop = new Runnable[1];
    stop[0] = review.onDidChange(v -> {
      if (ok.test(v) && f.complete(v)) stop[0].run();
    });
    return f;
  }

  /** "status path" of the view's files among `paths`, sorted. */
  private static Set<String> of(ReviewView v, String... paths) {
    Set<String> wanted = Set.of(paths);
    return v.files().stream().filter(f -> wanted.contains(f.path())).map(f -> f.status().wire() + " " + f.path())
        .collect(Collectors.toCollection(TreeSet::new));
  }

  @Test
  @Order(1)
  void saveAsBranchCommitsWithoutTouchingTheCheckout() throws Exception {
    guest("echo 'r by the agent' > r.txt");
    Support.await(review.refresh(), "changes/list");
    Map<String, String> before = Support.snapshot(ws);
    String head = Support.git(ws, "rev-parse", "HEAD").strip();
    BranchOutcome b = Support.await(review.saveAsBranch("review-test", false), "branch apply");
    assertTrue(b.created(), "created: " + b);
    assertEquals("refs/heads/lockroom/review-test", b.branch());
    assertEquals("lockroom/review-test", b.shortName());
    assertEquals("r by the agent\n", Support.git(ws, "show", "lockroom/review-test:r.txt"));
    assertEquals(head, Support.git(ws, "rev-parse", "lockroom/review-test^").strip());
    assertEquals(head, Support.git(ws, "rev-parse", "HEAD").strip());
    Map<String, String> after = Support.snapshot(ws);
    for (Map.Entry<String, String> e : before.entrySet()) {
      if (!e.getKey().startsWith(".git/")) assertEquals(e.getValue(), after.get(e.getKey()), e.getKey() + " unchanged");
    }
    // An existing branch is refused unless forced.
    LockroomException again = assertThrows(LockroomException.class, () -> Support.await(review.saveAsBranch("review-test", false), "again"));
    assertEquals(ErrorKind.WRONG_STATE, again.kind());
    assertTrue(Support.await(review.saveAsBranch("review-test", true), "forced").created());
  }

  @Test
  @Order(2)
  void syncBringsTheHostsEditsIn() throws Exception {
    Files.writeString(ws.resolve("s.txt"), "from the host\n");
    var synced = client.call(Methods.WORKSPACE_SYNC, SandboxIdParams.builder().sandboxId(sandboxId).build());
    assertTrue(synced.files() >= 7, "files: " + synced.files());
    GuestProcess cat = Support.await(hub.start(ProcessStartParams.builder().sandboxId(sandboxId).argv(List.of("cat", "/workspace/s.txt")).build()), "cat");
    assertEquals("from the host\n", Support.await(cat.collect(), "cat").stdout());
    // The agent's own edit (r.txt) is still there to review; s.txt is the base now, not a change.
    ReviewView v = Support.await(review.refresh(), "changes/list");
    assertEquals(Set.of("modified r.txt"), of(v, "r.txt", "s.txt"));
  }

  @Test
  @Order(3)
  void acceptAndRejectPerFileAndPerHunk() throws Exception {
    CompletableFuture<ReviewView> listed = nextView(v -> of(v, "a.txt", "b.txt", "n.txt").size() == 3);
    guest("sed -i -e 's/^line 2$/line 2 by the agent/' -e 's/^line 18$/line 18 by the agent/' a.txt"
        + " && echo 'b by the agent' > b.txt && echo new > n.txt");
    ReviewView first = Support.await(listed, "the model's own refresh after changes/changed"); // no refresh() called
    assertEquals(Set.of("added n.txt", "modified a.txt", "modified b.txt"), of(first, "a.txt", "b.txt", "n.txt"));
    FileChange a = first.file("a.txt");
    assertEquals(2, a.added());
    assertEquals(2, a.removed());

    FileDiff diff = Support.await(review.diff("a.txt", null), "changes/diff");
    assertEquals(2, diff.hunks().size());
    Hunk top = diff.hunks().get(0);
    Hunk bottom = diff.hunks().get(1);
    assertEquals(top.id(), SandboxReview.hunkAtLine(diff, 2).id());
    assertEquals(bottom.id(), SandboxReview.hunkAtLine(diff, 18).id());
    assertTrue(top.id().matches("[0-9a-f]{16}"));

    // Tick the top hunk of a.txt only: the host gets exactly that; the bottom hunk stays to decide.
    ReviewSelection ticks = new ReviewSelection().hunk("a.txt", top.id(), true);
    assertEquals(List.of(FileSelection.builder().path("a.txt").hunks(List.of(top.id())).build()), ticks.toSelect());
    Map<String, String> before = Support.snapshot(ws);
    ApplyOutcome outcome = Support.await(review.accept(ticks.toSelect(), null), "accept a hunk");
    assertEquals(List.of("a.txt"), outcome.applied());
    assertEquals("Applied 1 file.", outcome.describe());
    assertEquals(kTwentyLines.replace("line 2\n", "line 2 by the agent\n"), Support.read(ws.resolve("a.txt")));
    Map<String, String> after = Support.snapshot(ws);
    for (Map.Entry<String, String> e : before.entrySet()) {
      if (!e.getKey().equals("a.txt")) assertEquals(e.getValue(), after.get(e.getKey()), e.getKey() + " unchanged");
    }
    assertEquals(Set.of("added n.txt", "modified a.txt", "modified b.txt"), of(review.view(), "a.txt", "b.txt", "n.txt"));
    FileDiff rest = Support.await(review.diff("a.txt", null), "changes/diff after the partial accept");
    assertEquals(List.of(bottom.id()), rest.hunks().stream().map(Hunk::id).toList(), "the hunk still to decide keeps its id");

    // Reject b.txt and the bottom hunk of a.txt: the guest goes back, the host does not move.
    before = Support.snapshot(ws);
    ReviewSelection rejects = new ReviewSelection().file("b.txt", true).hunk("a.txt", bottom.id(), true);
    assertEquals(2L, Support.await(review.reject(rejects.toSelect(), null), "reject"));
    assertEquals(before, Support.snapshot(ws));
    assertEquals(Set.of("added n.txt"), of(review.view(), "a.txt", "b.txt", "n.txt"));

    // Accept the new file.
    ApplyOutcome last = Support.await(review.accept(List.of(FileSelection.builder().path("n.txt").build()), null), "accept n.txt");
    assertEquals(List.of("n.txt"), last.applied());
    assertEquals("new\n", Support.read(ws.resolve("n.txt")));
    assertEquals("b\n", Support.read(ws.resolve("b.txt")));
    assertEquals("keep\n", Support.read(ws.resolve("keep.txt")));
    assertEquals(Set.of(), of(review.view(), "a.txt", "b.txt", "n.txt"));
  }

  @Test
  @Order(4)
  void anAcceptWritesTheBytesOfTheViewItNames() throws Exception {
    guest("echo reviewed > f.txt");
    ReviewView seen = Support.await(review.refresh(), "changes/list");
    FileSides sides = Support.await(review.sides("f.txt", seen.viewId()), "changes/content");
    assertEquals("one\n", sides.baseText());
    assertEquals("reviewed\n", sides.currentText());
    assertFalse(sides.binary());
    // The agent writes again; the model's listing follows by itself (changes/changed).
    guest("echo newer > f.txt");
    Support.until(() -> !review.view().viewId().equals(seen.viewId()), Support.kWaitMs, "the model's own refresh");
    String latest = "";
    for (int i = 0; i < 50 && !latest.equals("newer\n"); i++) {
      latest = Support.await(review.sides("f.txt", null), "changes/content").currentText();
      if (!latest.equals("newer\n")) Support.await(review.refresh(), "changes/list");
    }
    assertEquals("newer\n", latest);
    // The diff viewer still shows the view the user read: accepting from it writes those bytes.
    ApplyOutcome outcome = Support.await(review.accept(List.of(FileSelection.builder().path("f.txt").build()), seen.viewId()), "accept");
    assertEquals(List.of("f.txt"), outcome.applied());
    assertEquals("reviewed\n", Support.read(ws.resolve("f.txt")));
    // What the agent wrote after it is still to decide, against the new base.
    assertEquals(Set.of("modified f.txt"), of(review.view(), "f.txt"));
    assertEquals("reviewed\n", Support.await(review.sides("f.txt", null), "changes/content").baseText());
    // A view no longer kept is refused as wrongState (a reject drops every view).
    String old = review.view().viewId();
    Support.await(review.reject(List.of(FileSelection.builder().path("f.txt").build()), null), "reject f.txt");
    assertNotEquals(old, review.view().viewId());
    LockroomException stale = assertThrows(LockroomException.class,
        () -> Support.await(review.accept(List.of(FileSelection.builder().path("r.txt").build()), old), "accept from a dropped view"));
    assertEquals(ErrorKind.WRONG_STATE, stale.kind());
  }

  @Test
  @Order(5)
  void aConflictLeavesTheUsersFileAloneAndCarriesTheMergeInputs() throws Exception {
    guest("echo 'agent first' > c.txt && echo second >> c.txt");
    ReviewView v = Support.await(review.refresh(), "changes/list");
    Files.writeString(ws.resolve("c.txt"), "user first\nsecond\n", StandardCharsets.UTF_8);
    ApplyOutcome outcome = Support.await(review.accept(List.of(FileSelection.builder().path("c.txt").build()), v.viewId()), "accept c.txt");
    assertEquals(List.of(), outcome.applied());
    assertEquals(1, outcome.conflicts().size());
    ApplyOutcome.Conflict c = outcome.conflicts().get(0);
    assertEquals("c.txt", c.path());
    assertTrue(c.text().matches("(?s).*<<<<<<<.*user first.*=======.*agent first.*>>>>>>>.*"), c.text());
    assertEquals("user first\nsecond\n", Support.read(ws.resolve("c.txt")));
    assertTrue(outcome.describe().contains("1 conflict (c.txt), nothing written to it"), outcome.describe());

    ConflictSides merge = Support.await(review.conflictSides(ws, "c.txt", v.viewId()), "the merge inputs");
    assertEquals("first\nsecond\n", merge.baseText());
    assertEquals("user first\nsecond\n", merge.yoursText());
    assertEquals("agent first\nsecond\n", merge.sandboxText());
    assertEquals(ws.resolve("c.txt"), merge.hostFile());
    // A sync refuses a file both sides changed, naming it.
    LockroomException refused = assertThrows(LockroomException.class,
        () -> client.call(Methods.WORKSPACE_SYNC, SandboxIdParams.builder().sandboxId(sandboxId).build()));
    assertEquals(ErrorKind.WRONG_STATE, refused.kind());
    assertTrue(refused.getMessage().contains("c.txt"), refused.getMessage());
  }
}
