// Test support: the lockroom binary under test (-Dlockroom.bin, which extensions/jetbrains/run
// passes), temporary git workspaces, byte-for-byte folder snapshots, a started client that the
// test closes, and waiting for a condition with a message naming it.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

public final class Support {
  private Support() {}

  /** Guest work under TCG is slow: generous bounds, each failure naming what it waited for. */
  public static final long kWaitMs = 120_000;

  public static String lockroom() {
    String bin = System.getProperty("lockroom.bin", System.getenv("LOCKROOM"));
    if (bin == null || bin.isEmpty()) throw new IllegalStateException("set -Dlockroom.bin (extensions/jetbrains/run --lockroom BIN does)");
    return bin;
  }

  /** The repository's top folder (the run script passes it). */
  public static Path repo() {
    return Path.of(System.getProperty("lockroom.repo", "../.."));
  }

  public static final List<String> kTrace = Collections.synchronizedList(new ArrayList<>());

  /** A standalone lockroom (its sandboxes end with it). */
  public static LockroomClient startClient(boolean networkApproval, List<String> serveArgs) {
    List<String> args = new ArrayList<>(List.of("--standalone"));
    args.addAll(serveArgs);
    return LockroomClient.start(ClientOptions.builder(lockroom()).serveArgs(args).networkApproval(networkApproval)
        .onLog(line -> {
          if (System.getenv("LOCKROOM_TEST_TRACE") != null) System.err.println("lockroom: " + line);
        }).build());
  }

  public static LockroomClient startClient() {
    return startClient(false, List.of());
  }

  public static Path tempDir(String prefix) throws IOException {
    return Files.createTempDirectory(prefix).toRealPath();
  }

  public static void deleteTree(Path dir) {
    if (dir == null || !Files.exists(dir)) return;
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort
    }
  }

  /** A git repository with one commit holding `files`. */
  public static Path gitWorkspace(Map<String, String> files) throws Exception {
    Path dir = tempDir("lockroom-jetbrains-ws-");
    for (Map.Entry<String, String> f : files.entrySet()) {
      Path p = dir.resolve(f.getKey());
      Files.createDirectories(p.getParent());
      Files.writeString(p, f.getValue(), StandardCharsets.UTF_8);
    }
    git(dir, "init", "-q", "-b", "main");
    git(dir, "add", "-A");
    git(dir, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "--allow-empty", "-m", "start");
    return dir;
  }

  public static String git(Path dir, String... args) throws Exception {
    List<String> argv = new ArrayList<>(List.of("git"));
    argv.addAll(List.of(args));
    Process p = new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), "git " + String.join(" ", args) + ": " + out);
    return out;
  }

  /** Every file under `dir` (.git included) with its bytes, for exact before/after comparisons. */
  public static Map<String, String> snapshot(Path dir) throws IOException {
    Map<String, String> out = new TreeMap<>();
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        if (Files.isSymbolicLink(p)) out.put(dir.relativize(p).toString(), "-> " + Files.readSymbolicLink(p));
        else if (Files.isRegularFile(p)) out.put(dir.relativize(p).toString(), Base64.getEncoder().encodeToString(Files.readAllBytes(p)));
      }
    }
    return out;
  }

  public static String read(Path p) throws IOException {
    return Files.readString(p, StandardCharsets.UTF_8);
  }

  public static <T> T await(CompletableFuture<T> f, String what) {
    try {
      return f.get(kWaitMs, TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("timed out after " + kWaitMs + " ms waiting for " + what);
    } catch (Exception e) {
      throw LockroomException.from(e);
    }
  }

  /** Waits until `condition` holds, polling every 20 ms; fails naming `what`. */
  public static void until(BooleanSupplier condition, long timeoutMs, String what) throws InterruptedException {
    long end = System.currentTimeMillis() + timeoutMs;
    while (!condition.getAsBoolean()) {
      if (System.currentTimeMillis() > end) throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what);
      Thread.sleep(20);
    }
  }
}
