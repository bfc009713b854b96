// SandboxManager: creates sandboxes fast, routes process operations, and ends them all.
//
// The first create for a resource shape builds the default guest image if needed (on a worker
// thread, with progress) and gets the template for that machine from the TemplatePool (found in
// lockroom's cache from an earlier run, or booted and snapshotted); every create restores a
// fresh VM from it (copy-on-write RAM), connects to its agent, gives it the wall-clock time and
// fresh entropy, and sets its process limit. A create with a workspace restores from that
// workspace's template when there is one and sends only what changed since; after an import the
// pool (re)builds that template in the background. A restore that fails from a cached template
// drops it and tries once more from a fresh one. Templates are never used as sandboxes and
// restored sandboxes are never reused. Process ids are unique per manager ("p-7", never reused)
// and map to their sandbox; every started process is told (process_started) right after its
// start answered.
// Loop thread only.
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <uv.h>

#include "server/common/paths.h"
#include "server/core/resources.h"
#include "server/core/sandbox.h"
#include "server/core/sandbox_events.h"
#include "server/core/sandbox_network.h"
#include "server/core/sandbox_workspace.h"
#include "server/core/template_pool.h"
#include "server/core/wait_list.h"
#include "server/vm/accel.h"
#include "server/vm/image/image_store.h"
#include "server/vm/image/progress.h"
#include "server/vm/vm_template.h"

namespace lockroom::core {

struct ManagerConfig {
  Paths paths;
  vm::Accel accel = vm::Accel::kTcg;
  std::filesystem::path agent;  // lockroom-agent on the host, packed into the image
  std::chrono::milliseconds boot_timeout{180000};
  std::chrono::milliseconds restore_timeout{30000};
  // Templates kept in the cache for later runs (vm/template_store.h); default dirs when unset.
  bool persistent_templates = true;
  std::optional<vm::TemplateDirs> template_dirs;
  // PEM files of further CAs the egress proxy trusts for upstream TLS, besides the host's store
  // (`serve --upstream-ca`; a corporate CA, or a test's CA). Each sandbox's NetworkRequest gets them.
  std::vector<std::filesystem::path> upstream_ca_files;
};

struct CreateRequest {
  ResourceRequest resources;
  std::map<std::string, std::string> env;
  std::optional<WorkspaceRequest> workspace;  // a host folder to copy in at /workspace
  std::optional<NetworkRequest> network;      // egress through the policy proxy; none: no way out at all
  std::vector<std::string> packages{};        // Debian packages (from kits): the guest boots a package image
  std::vector<std::string> npm{};             // npm specs (from kits): an npm layer on that image (vm/image/npm_image.h)
  // The caller finishes the create itself (kits' setup) and then calls announce(): until then the
  // sandbox's state changes are held back, so a create that fails in the caller's part, too,
  // leaves no word of a sandbox the editor never got.
  bool caller_announces = false;
  // For sandbox/list: the kits named, and the editor's label (already checked: bounded, printable).
  std::vector<std::string> kits{};
  std::string label{};
};

struct CreateTimings {
  std::int64_t total_ms = 0;
  std::int64_t template_ms = 0;  // image (built or found) + template (found in the cache, or booted and snapshotted)
  std::int64_t restore_ms = 0;   // QEMU start to agent ready
  std::int64_t snapshot_ms = 0;  // the workspace snapshot (runs while the guest starts)
  std::int64_t import_ms = 0;    // the workspace into the guest (pack, send, checkout)
};

// The workspace a sandbox got: its snapshot (with what was withheld) and the transfer.
struct WorkspaceSummary {
  workspace::snapshot::SnapshotResult snapshot;
  WorkspaceTransfer transfer;
};

// Where a create's guest came from.
enum class TemplateSource {
  kMemory,     // a template this process already had
  kCache,      // a template an earlier process stored
  kBooted,     // a template booted for this create
  kWorkspace,  // this workspace's template (only the changes since were sent)
};
const char* template_source_name(TemplateSource source);

struct CreateResult {
  std::string sandbox_id;
  vm::Accel accel;
  Resources limits;
  CreateTimings timings;
  std::optional<WorkspaceSummary> workspace;
  std::optional<std::filesystem::path> audit_log;  // with networking: the sandbox's egress audit log
  TemplateSource template_source = TemplateSource::kMemory;
};

struct SandboxSummary {
  std::string id;
  SandboxState state;
  StopReason reason;
  std::int64_t age_ms;
  std::size_t processes;
  Resources limits;
  int qemu_pid = 0;  // 0 when no VM runs
  SandboxFacts facts;
};

using CreateProgress = std::function<void(const std::string& message, int percent)>;

class SandboxManager : private SandboxEvents {
 public:
  SandboxManager(uv_loop_t* loop, ManagerConfig config, SandboxEvents& events);
  ~SandboxManager() override;
  SandboxManager(const SandboxManager&) = delete;
  SandboxManager& operator=(const SandboxManager&) = delete;

  void create(CreateRequest request, CreateProgress progress, std::function<void(Result<CreateResult>)> done);
  // Tells the world of a sandbox whose create had `caller_announces` (its current state, `ready`);
  // its state changes are reported from then on.
  void announce(const std::string& sandbox_id);
  void destroy(const std::string& sandbox_id, std::function<void(Result<void>)> done);
  // The same, for lockroom's own reasons (the reason and message go to sandbox/stateChanged).
  void destroy(const std::string& sandbox_id, StopReason reason, const std::string& message, std::function<void(Result<void>)> done);
  std::vector<SandboxSummary> list() const;

  void start_process(const std::string& sandbox_id, ProcessSpec spec, std::function<void(Result<std::string>)> done);
  // The sandbox's egress (network/policy), while it runs with networking.
  Result<SandboxNetwork*> network(const std::string& sandbox_id);
  // The sandbox's workspace and its agent, for one synchronous call that starts an operation.
  Result<std::pair<SandboxWorkspace*, channel::AgentClient*>> workspace(const std::string& sandbox_id);
  // The agent of a ready sandbox, for file/read and file/write (one synchronous call that starts one).
  Result<channel::AgentClient*> guest_files(const std::string& sandbox_id);
  // The sandbox a process runs in (also while its process_exited is being reported, and for the
  // last kMaxExitedOwners exited processes after).
  std::optional<std::string> sandbox_of(const std::string& process_id) const;
  Result<void> write_stdin(const std::string& process_id, std::string_view bytes);
  Result<void> close_stdin(const std::string& process_id);
  void resize(const std::string& process_id, int cols, int rows, std::function<void(Result<void>)> done);
  void signal(const std::string& process_id, int signal, std::function<void(Result<void>)> done);
  // Flow control of one process's output (Sandbox::pause_output); unknown ids are ignored.
  void pause_output(const std::string& process_id, bool paused);
  // The sandbox's processes, live and lately exited (Sandbox::processes).
  Result<std::vector<ProcessInfo>> processes(const std::string& sandbox_id);
  // The editor's label for a sandbox (checked by the caller: bounded, printable).
  Result<void> set_label(const std::string& sandbox_id, std::string label);

  // Ends every sandbox (reason serverShutdown), stops a background template build and drops the
  // templates; `done` runs after.
  void shutdown(std::function<void()> done);
  vm::Accel accel() const { return config_.accel; }
  TemplatePool& templates() { return *templates_; }

 private:
  // SandboxEvents, forwarded to the caller's, keeping the process map current.
  void state_changed(const std::string& id, SandboxState state, StopReason reason, const std::string& message) override;
  void process_output(const std::string& process_id, OutputStream stream, const OutputChunk& chunk) override;
  void process_bytes(const std::string& process_id, OutputStream stream, std::string_view bytes) override;
  void process_exited(const std::string& process_id, const ProcessExit& exit) override;
  void workspace_changed(const std::string& sandbox_id, std::uint64_t version) override {
    if (!unannounced_.count(sandbox_id)) events_.workspace_changed(sandbox_id, version);
  }
  void limit_reached(const std::string& sandbox_id, const LimitEvent& event) override { events_.limit_reached(sandbox_id, event); }
  void guest_misbehaved(const std::string& sandbox_id, const MisbehaviourEvent& event) override { events_.guest_misbehaved(sandbox_id, event); }

  void ensure_image(CreateProgress progress, std::function<void(Result<vm::image::GuestImage>)> done);
  using ImageParent = std::function<void(std::function<void(Result<vm::image::GuestImage>)>)>;
  using ImageLayerBuild = std::function<Result<vm::image::GuestImage>(const vm::image::GuestImage& parent, const vm::image::Progress&)>;
  void ensure_layer(const std::string& key, CreateProgress progress, ImageParent parent, ImageLayerBuild build,
                    std::function<void(Result<vm::image::GuestImage>)> done);
  void ensure_image(const std::vector<std::string>& packages, CreateProgress progress,
                    std::function<void(Result<vm::image::GuestImage>)> done);
  void ensure_image(const std::vector<std::string>& packages, const std::vector<std::string>& npm, CreateProgress progress,
                    std::function<void(Result<vm::image::GuestImage>)> done);
  void ensure_template(const Resources& limits, const std::vector<std::string>& packages, const std::vector<std::string>& npm,
                       CreateProgress progress, std::function<void(Result<BaseTemplate>)> done);
  struct Restoring;
  void restore_guest(std::shared_ptr<Restoring> r, bool retried);
  void build_workspace_template(const BaseTemplate& base, const WorkspaceRequest& request, const WorkspaceTransfer& transfer,
                                bool from_template);
  void finish_create(const std::string& id, std::unique_ptr<SandboxWorkspace> workspace, std::optional<NetworkRequest> network,
                     CreateResult result, std::chrono::steady_clock::time_point started,
                     std::function<void(Result<CreateResult>)> done);
  void import_workspace(const std::string& id, std::unique_ptr<SandboxWorkspace> workspace, CreateResult result,
                        std::chrono::steady_clock::time_point started, std::function<void(Result<CreateResult>)> done);
  // The workspace template the sandbox was restored from, and the base, by sandbox id (until its import).
  struct TemplateUse {
    BaseTemplate base;
    std::shared_ptr<vm::VmTemplate> workspace;
    TemplateSource source = TemplateSource::kMemory;
  };
  std::map<std::string, TemplateUse> template_use_;
  void restore(std::shared_ptr<vm::VmTemplate> tpl, Resources limits, std::map<std::string, std::string> env,
               std::function<void(Result<std::string>)> done);
  vm::VmSpec base_spec(const vm::image::GuestImage& image, const Resources& limits) const;
  Result<Sandbox*> sandbox_for(const std::string& sandbox_id);
  Result<Sandbox*> sandbox_of_process(const std::string& process_id);
  std::string new_sandbox_id();
  void publish_record(const std::string& id, const vm::Vm& vm, const Resources& limits) const;
  void forget(const std::string& sandbox_id);

  uv_loop_t* loop_;
  ManagerConfig config_;
  SandboxEvents& events_;
  std::optional<vm::image::GuestImage> image_;
  WaitList<vm::image::GuestImage> image_waiters_;
  std::map<std::string, vm::image::GuestImage> package_images_;  // by package set (and npm set: "jq |npm x@1 ")
  std::map<std::string, WaitList<vm::image::GuestImage>> package_image_waiters_;
  std::unique_ptr<TemplatePool> templates_;
  std::map<std::string, std::unique_ptr<Sandbox>> sandboxes_;
  std::map<std::string, std::pair<SandboxState, StopReason>> tombstones_;
  // Sandboxes whose create has not answered yet: their state changes are held back (a create
  // that fails answers with its error; the editor never hears of an id it was not given), and a
  // successful create announces `ready` right before its answer.
  std::set<std::string> unannounced_;
  std::function<void(Result<CreateResult>)> announce_when_created(bool caller_announces, std::function<void(Result<CreateResult>)> done);
  std::map<std::string, std::string> process_owner_;  // process id -> sandbox id
  // Exited processes' sandboxes, for events told after the exit (a held kit service's), bounded.
  std::map<std::string, std::string> exited_owner_;
  std::deque<std::string> exited_order_;
  static constexpr std::size_t kMaxExitedOwners = 4096;
  std::uint64_t next_process_ = 1;
  bool shutting_down_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace lockroom::core
