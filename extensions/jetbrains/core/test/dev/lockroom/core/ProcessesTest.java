// A sandbox on a git workspace and its processes, against the real lockroom (one sandbox for the
// class, guests being slow under TCG): the create's progress and the model's entry, a command
// with pipes (stdout, stderr, exit code, stdin), a shell on a pty that resizes, a signal,
// process/list and the model following exits, a guest file read and written, the label.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.lockroom.protocol.FileReadParams;
import dev.lockroom.protocol.FileWriteParams;
import dev.lockroom.protocol.Methods;
import dev.lockroom.protocol.ProcessInfo;
import dev.lockroom.protocol.ProcessStartParams;
import dev.lockroom.protocol.ProgressParams;
import dev.lockroom.protocol.SandboxCreateParams;
import dev.lockroom.protocol.SandboxCreateResult;
import dev.lockroom.protocol.SandboxIdParams;
import dev.lockroom.protocol.SandboxState;
import dev.lockroom.protocol.SetLabelParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ProcessesTest {
  private Path ws;
  private LockroomClient client;
  private ProcessHub hub;
  private SandboxesModel model;
  private SandboxCreateResult created;
  private final List<ProgressParams.Value> progress = Collections.synchronizedList(new ArrayList<>());

  @BeforeAll
  void createSandbox() throws Exception {
    ws = Support.gitWorkspace(Map.of("README.md", "# demo\n"));
    client = Support.startClient();
    hub = new ProcessHub(client);
    model = new SandboxesModel(client, hub);
    created = Support.await(model.create(SandboxCreateParams.builder().workspace(Json.path(ws.toString())).label("processes test").build(),
        RequestOptions.progress(progress::add)), "sandbox/create");
  }

  @AfterAll
  void close() {
    model.close();
    hub.close();
    client.close(15_000);
    Support.deleteTree(ws);
  }

  private GuestProcess start(ProcessStartParams.Builder p) {
    return Support.await(hub.start(p.sandboxId(created.sandboxId()).build()), "process/start");
  }

  @Test
  void theCreateReportedProgressAndTheModelHasTheSandbox() {
    assertTrue(created.sandboxId().startsWith("sb-"));
    assertEquals("ready", created.state());
    assertEquals(dev.lockroom.protocol.WorkspaceSummary.Host.GIT, created.workspace().host());
    assertEquals(ProgressParams.Value.Kind.BEGIN, progress.get(0).kind());
    assertEquals(ProgressParams.Value.Kind.END, progress.get(progress.size() - 1).kind());
    SandboxItem item = model.get(created.sandboxId());
    assertNotNull(item, "the model lists the new sandbox");
    assertEquals(SandboxState.READY, item.entry().state());
    assertEquals("processes test", item.title());
    assertEquals(ws.toString(), item.entry().workspace());
  }

  @Test
  void aCommandWithPipes() {
    GuestProcess p = start(ProcessStartParams.builder().argv(List.of("sh", "-c", "cat README.md; echo oops >&2; exit 3")));
    GuestProcess.Collected r = Support.await(p.collect(), "the command's exit");
    assertEquals("# demo\n", r.stdout());
    assertEquals("oops\n", r.stderr());
    assertEquals(3L, r.exit().exitCode());

    GuestProcess cat = start(ProcessStartParams.builder().argv(List.of("sh", "-c", "tr a-z A-Z")));
    var collected = cat.collect();
    Support.await(cat.write("hello from the host\n"), "process/write");
    Support.await(cat.closeStdin(), "process/closeStdin");
    assertEquals("HELLO FROM THE HOST\n", Support.await(collected, "tr's exit").stdout());
  }

  @Test
  void aShellOnAPtyThatResizes() throws Exception {
    GuestProcess shell = start(ProcessStartParams.builder().argv(List.of("sh")).pty(ProcessStartParams.Pty.builder().cols(80).rows(24).build()));
    StringBuilder screen = new StringBuilder();
    List<String> streams = Collections.synchronizedList(new ArrayList<>());
    shell.onOutput(o -> {
      synchronized (screen) {
        screen.append(new String(o.data(), java.nio.charset.StandardCharsets.UTF_8));
      }
      streams.add(o.stream().wire());
    });
    Support.await(shell.resize(132, 40), "process/resize");
    Support.await(shell.write("stty size; exit 7\n"), "process/write");
    assertEquals(7L, Support.await(shell.exited(), "the shell's exit").exitCode());
    synchronized (screen) {
      assertTrue(screen.toString().contains("40 132"), "stty size after the resize: " + screen);
    }
    assertTrue(streams.stream().allMatch("pty"::equals), "a pty has one stream: " + streams);
  }

  @Test
  void aSignalEndsAProcessAndTheModelFollows() throws Exception {
    GuestProcess sleeper = start(ProcessStartParams.builder().argv(List.of("sleep", "600")));
    Support.until(() -> model.get(created.sandboxId()).process(sleeper.processId()) != null, 10_000, "the model's process entry");
    assertTrue(model.get(created.sandboxId()).process(sleeper.processId()).running());
    var listed = client.call(Methods.PROCESS_LIST, SandboxIdParams.builder().sandboxId(created.sandboxId()).build());
    ProcessInfo info = listed.processes().stream().filter(p -> p.processId().equals(sleeper.processId())).findFirst().orElseThrow();
    assertEquals(List.of("sleep", "600"), info.argv());
    assertEquals(ProcessInfo.Origin.CLIENT, info.origin());
    Support.await(sleeper.signal("SIGTERM"), "process/signal");
    assertEquals("SIGTERM", Support.await(sleeper.exited(), "the signalled exit").signal());
    Support.until(() -> !model.get(created.sandboxId()).process(sleeper.processId()).running(), 10_000, "the model's exit");
  }

  @Test
  void guestFilesAndTheLabel() {
    var written = client.call(Methods.FILE_WRITE, FileWriteParams.builder().sandboxId(created.sandboxId()).path("/tmp/notes/todo.txt")
        .data("ship it\n").mkdirs(true).build());
    assertEquals(8, written.written());
    var read = client.call(Methods.FILE_READ, FileReadParams.builder().sandboxId(created.sandboxId()).path("/tmp/notes/todo.txt").build());
    assertEquals("ship it\n", read.data());
    assertTrue(read.eof());
    LockroomException missing = org.junit.jupiter.api.Assertions.assertThrows(LockroomException.class, () -> client.call(Methods.FILE_READ,
        FileReadParams.builder().sandboxId(created.sandboxId()).path("/tmp/nothing-here").build()));
    assertEquals(ErrorKind.NOT_FOUND, missing.kind());

    client.call(Methods.SANDBOX_SET_LABEL, SetLabelParams.builder().sandboxId(created.sandboxId()).label("renamed").build());
    var list = client.call(Methods.SANDBOX_LIST, new dev.lockroom.protocol.Empty());
    assertTrue(list.sandboxes().stream().anyMatch(s -> s.sandboxId().equals(created.sandboxId()) && "renamed".equals(s.label())));
  }
}
