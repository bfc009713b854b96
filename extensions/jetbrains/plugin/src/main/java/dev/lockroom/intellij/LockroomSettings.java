// LockroomSettings: the plugin's settings (Settings | Tools | lockroom), kept by the IDE in
// lockroom.xml: the binary, extra `serve` arguments, and what a new sandbox gets. defaults()
// hands them to the core (SandboxDefaults), which turns them into sandbox/create params.
package dev.lockroom.intellij;

import com.intellij.openapi.application.ApplicationManager;
import com.intellij.openapi.components.PersistentStateComponent;
import com.intellij.openapi.components.Service;
import com.intellij.openapi.components.State;
import com.intellij.openapi.components.Storage;
import dev.lockroom.core.SandboxDefaults;
import java.util.Arrays;
import java.util.List;

@Service(Service.Level.APP)
@State(name = "LockroomSettings", storages = @Storage("lockroom.xml"))
public final class LockroomSettings implements PersistentStateComponent<LockroomSettings.Data> {
  /** The stored form: plain fields, as the IDE's XML serializer wants them. */
  public static final class Data {
    public String path = "lockroom";
    public String serverArgs = "";
    public String kits = "";
    public int cpus = 2;
    public int memoryMiB = 1024;
    public String allow = "";
    public boolean ask = true;
    public String agentCommand = "bash";
  }

  private Data data = new Data();

  public static LockroomSettings getInstance() {
    return ApplicationManager.getApplication().getService(LockroomSettings.class);
  }

  @Override
  public Data getState() {
    return data;
  }

  @Override
  public void loadState(Data state) {
    data = state;
  }

  static List<String> words(String s) {
    return Arrays.stream(s.split("[\\s,]+")).filter(w -> !w.isEmpty()).toList();
  }

  public SandboxDefaults defaults() {
    return new SandboxDefaults(words(data.kits), data.cpus, data.memoryMiB, words(data.allow), data.ask);
  }
}
