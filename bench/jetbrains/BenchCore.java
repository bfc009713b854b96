// The IntelliJ plugin's protocol core (extensions/jetbrains/core) against the real lockroom:
// request round trips as the plugin makes them, through LockroomClient and its models:
//   lockroom/echo          the connection alone (framing, JSON, one reply)
//   sandbox/list           a cheap lockroom request (the tool window's refresh)
//   process/start → exit   `true` in the guest: start's reply, then process/exited (ProcessHub)
//   changes/list           a fresh look at the guest's workspace, 3 of 20 files changed (SandboxReview)
// One standalone lockroom and one sandbox for all of it; `--warmup` rounds first (the JIT), then
// `--runs` measured. Prints one JSON object of samples (ms) on stdout for bench/jetbrains/table.mjs.
//   java -cp CORE:GSON:. BenchCore --lockroom BIN [--runs N] [--warmup N]
import dev.lockroom.core.ClientOptions;
import dev.lockroom.core.GuestProcess;
import dev.lockroom.core.Json;
import dev.lockroom.core.LockroomClient;
import dev.lockroom.core.ProcessHub;
import dev.lockroom.core.review.SandboxReview;
import dev.lockroom.protocol.Empty;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.ProcessStartParams;
import dev.lockroom.protocol.SandboxCreateParams;
import dev.lockroom.protocol.SandboxIdParams;
import com.google.gson.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

public final class BenchCore {
  static String arg(String[] args, String name, String dflt) {
    for (int i = 0; i + 1 < args.length; i++) if (args[i].equals(name)) return args[i + 1];
    return dflt;
  }

  static void git(Path dir, String... a) throws Exception {
    List<String> argv = new ArrayList<>(List.of("git"));
    argv.addAll(List.of(a));
    if (new ProcessBuilder(argv).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor() != 0)
      throw new IllegalStateException("git " + String.join(" ", a) + " failed in " + dir);
  }

  static List<Double> measure(int warmup, int runs, Callable<?> op) throws Exception {
    for (int i = 0; i < warmup; i++) op.call();
    List<Double> out = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      long t0 = System.nanoTime();
      op.call();
      out.add((System.nanoTime() - t0) / 1e6);
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    String lockroom = arg(args, "--lockroom", "build/bin/lockroom");
    int runs = Integer.parseInt(arg(args, "--runs", "30"));
    int warmup = Integer.parseInt(arg(args, "--warmup", "10"));
    Path ws = Files.createTempDirectory("lockroom-bench-jetbrains-");
    for (int i = 0; i < 20; i++) Files.writeString(ws.resolve(String.format("f%02d.txt", i)), "file " + i + "\n");
    git(ws, "init", "-q", "-b", "main");
    git(ws, "add", "-A");
    git(ws, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-q", "-m", "start");

    // A first start and close warms the JVM's classes (Gson, the generated records), as an IDE's
    // first connection does; the second start is measured.
    LockroomClient.start(ClientOptions.builder(lockroom).serveArgs(List.of("--standalone")).build()).close(15_000);
    long t0 = System.nanoTime();
    LockroomClient client = LockroomClient.start(ClientOptions.builder(lockroom).serveArgs(List.of("--standalone")).build());
    double startMs = (System.nanoTime() - t0) / 1e6;
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("client", "jetbrains");
    try (ProcessHub hub = new ProcessHub(client)) {
      var created = client.call(Methods.SANDBOX_CREATE, SandboxCreateParams.builder().workspace(Json.path(ws.toString())).build());
      String sandboxId = created.sandboxId();
      out.put("accel", created.accel().wire());
      GuestProcess edit = hub.start(ProcessStartParams.builder().sandboxId(sandboxId)
          .argv(List.of("sh", "-c", "cd /workspace && for f in f00.txt f01.txt f02.txt; do echo changed >> $f; done")).build()).join();
      edit.exited().join();
      SandboxReview review = new SandboxReview(client, sandboxId);
      JsonObject ping = new JsonObject();
      ping.addProperty("ping", 1);
      var echo = new dev.lockroom.core.rpc.RequestType<>("lockroom/echo", JsonObject.class, JsonObject.class);
      out.put("startMs", startMs);
      out.put("echo", measure(warmup * 5, runs * 5, () -> client.request(echo, ping).join()));
      out.put("sandboxList", measure(warmup * 5, runs * 5, () -> client.call(Methods.SANDBOX_LIST, new Empty())));
      out.put("processRun", measure(warmup, runs, () -> hub.start(ProcessStartParams.builder().sandboxId(sandboxId).argv(List.of("true")).build())
          .thenCompose(GuestProcess::exited).join()));
      out.put("changesList", measure(warmup, runs, () -> {
        var v = review.refresh().join();
        if (v.files().size() != 3) throw new IllegalStateException("expected 3 changed files, listed " + v.files().size());
        return v;
      }));
      review.close();
      client.call(Methods.SANDBOX_DESTROY, SandboxIdParams.builder().sandboxId(sandboxId).build());
    } finally {
      client.close(15_000);
      try (var s = Files.walk(ws)) {
        s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    System.out.println(Json.write(out));
  }
}
