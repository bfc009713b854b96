// ClientOptions: how LockroomClient starts `lockroom serve --stdio` and what it declares at
// initialize. A record with a builder; only `lockroom` is required.
package dev.lockroom.core;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * @param lockroom the lockroom binary (a path, or a name looked up on PATH)
 * @param serveArgs arguments after `serve --stdio` (`--standalone`, `--server-dir DIR`, ...)
 * @param globalArgs arguments before `serve` (`--log-level debug`)
 * @param env variables added to this process's environment for lockroom (secrets read `from: {env}` come from it)
 * @param cwd the working folder of the process, or null for this one's
 * @param clientName the name sent as clientInfo.name
 * @param clientVersion the version sent as clientInfo.version
 * @param networkApproval whether this client answers network/approve (else lockroom decides by its policy alone)
 * @param onLog each line lockroom writes on stderr (called on a reader thread), or null
 */
public record ClientOptions(
    String lockroom,
    List<String> serveArgs,
    List<String> globalArgs,
    Map<String, String> env,
    Path cwd,
    String clientName,
    String clientVersion,
    boolean networkApproval,
    Consumer<String> onLog) {

  public static Builder builder(String lockroom) {
    return new Builder(lockroom);
  }

  public static final class Builder {
    private final String lockroom;
    private List<String> serveArgs = List.of();
    private List<String> globalArgs = List.of();
    private Map<String, String> env = Map.of();
    private Path cwd;
    private String clientName = "lockroom-jetbrains";
    private String clientVersion = "0.1.0";
    private boolean networkApproval;
    private Consumer<String> onLog;

    Builder(String lockroom) {
      this.lockroom = lockroom;
    }

    public Builder serveArgs(List<String> v) {
      serveArgs = List.copyOf(v);
      return this;
    }

    public Builder globalArgs(List<String> v) {
      globalArgs = List.copyOf(v);
      return this;
    }

    public Builder env(Map<String, String> v) {
      env = Map.copyOf(v);
      return this;
    }

    public Builder cwd(Path v) {
      cwd = v;
      return this;
    }

    public Builder client(String name, String version) {
      clientName = name;
      clientVersion = version;
      return this;
    }

    public Builder networkApproval(boolean v) {
      networkApproval = v;
      return this;
    }

    public Builder onLog(Consumer<String> v) {
      onLog = v;
      return this;
    }

    public ClientOptions build() {
      return new ClientOptions(lockroom, serveArgs, globalArgs, env, cwd, clientName, clientVersion, networkApproval, onLog);
    }
  }
}
