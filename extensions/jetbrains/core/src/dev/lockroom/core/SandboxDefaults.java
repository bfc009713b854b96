// SandboxDefaults: the plugin's settings for a new sandbox (kits, size, network) and the one
// pure function that turns them into sandbox/create's params, so the UI decides nothing.
// `allow` entries are `host` or `host:port` (`*.example.com` too); `ask` makes lockroom ask
// about every other host (network/approve) instead of denying it.
package dev.lockroom.core;

import dev.lockroom.protocol.Policy;
import dev.lockroom.protocol.Resources;
import dev.lockroom.protocol.Rule;
import dev.lockroom.protocol.SandboxCreateParams;
import com.google.gson.JsonPrimitive;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public record SandboxDefaults(List<String> kits, int cpus, int memoryMiB, List<String> allow, boolean ask) {
  private static final Pattern kHostPort = Pattern.compile("^(.*?)(?::(\\d+))?$");

  public static SandboxDefaults standard() {
    return new SandboxDefaults(List.of(), 2, 1024, List.of(), true);
  }

  /** `host` or `host:port` → an allow rule named `settings`; a blank entry is an error naming it. */
  public static Rule allowRule(String spec) {
    Matcher m = kHostPort.matcher(spec.trim());
    if (!m.matches() || m.group(1).isEmpty()) {
      throw new LockroomException("the network allow entry \"" + spec + "\" is not host or host:port", ErrorKind.INVALID_PARAMS);
    }
    Rule.Builder r = Rule.builder().action(Rule.Action.ALLOW).host(m.group(1)).name("settings");
    if (m.group(2) != null) r.ports(List.of(new JsonPrimitive(Long.parseLong(m.group(2)))));
    return r.build();
  }

  /** sandbox/create's params for `workspace` (null: none) with `kits` (null: these defaults'). */
  public SandboxCreateParams createParams(Path workspace, List<String> kitsOverride, String label) {
    List<Rule> rules = new ArrayList<>();
    for (String a : allow) if (!a.isBlank()) rules.add(allowRule(a));
    SandboxCreateParams.Builder p = SandboxCreateParams.builder()
        .kits(kitsOverride != null ? kitsOverride : kits)
        .resources(Resources.builder().cpus((long) cpus).memoryMiB((long) memoryMiB).build())
        .network(Json.tree(Policy.builder().rules(rules).unmatched(ask ? Policy.Unmatched.ASK : Policy.Unmatched.DENY).build()))
        .label(label != null ? label : workspace != null ? "IntelliJ: " + workspace.getFileName() : "IntelliJ");
    if (workspace != null) p.workspace(Json.path(workspace.toAbsolutePath().toString()));
    return p.build();
  }
}
