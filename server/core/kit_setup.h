// KitSetup: a kit plan's files, setup commands and services, run in a sandbox that just started.
//
// Each step is an ordinary process of the sandbox (so it gets the sandbox's environment: the
// proxy, the CA, the secrets' sentinels, the kits' env), watched through ProcessWatch so its
// output is lockroom's, not the editor's:
//   files     written by `sh` from stdin (parent directories made, mode set)
//   setup     `sh -c RUN` in its directory, one at a time, each must exit 0 within its timeout
//             (then it is killed); a failure names the command, its kit, the exit status and the
//             last lines of its output
//   services  `sh -c "exec RUN"`, started last and left running as normal processes (their
//             output goes to the editor like any process's, origin kitService; the editor face
//             holds the sandbox's process events until its create answered: ProcessWatch::hold);
//             their process ids are reported
// The caller destroys the sandbox when setup fails. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/core/process_watch.h"
#include "server/core/sandbox_manager.h"
#include "server/kits/kit_plan.h"

namespace lockroom::core {

struct KitServiceStarted {
  std::string name;
  std::string kit;
  std::string process_id;
};

struct KitSetupReport {
  std::vector<KitServiceStarted> services;
  std::int64_t setup_ms = 0;
};

struct KitSetupHooks {
  std::function<void(const std::string& message)> step;  // "kit node: npm ci (2/3)"
  std::function<void(std::string_view bytes)> output;    // setup commands' output, as it comes
};

constexpr std::size_t kKitFailureTailBytes = 4096;

class KitSetup : public std::enable_shared_from_this<KitSetup> {
 public:
  using Done = std::function<void(Result<KitSetupReport>)>;

  // `has_workspace`: without one, steps whose directory is /workspace (the default) run in /.
  static void run(uv_loop_t* loop, SandboxManager& manager, ProcessWatch& watch, std::string sandbox_id, kits::KitPlan plan,
                  bool has_workspace, KitSetupHooks hooks, Done done);

  KitSetup(uv_loop_t* loop, SandboxManager& manager, ProcessWatch& watch, std::string sandbox_id, kits::KitPlan plan,
           bool has_workspace, KitSetupHooks hooks, Done done);

 private:
  void next();
  void write_file(const kits::KitFile& file);
  void run_command(const kits::KitCommand& command);
  void start_services(std::size_t index);
  void started(Result<std::string> process_id, std::string what, std::function<void(const std::string&)> then);
  void finish(Result<void> result);
  std::string directory(const std::string& cwd) const;

  uv_loop_t* loop_;
  SandboxManager& manager_;
  ProcessWatch& watch_;
  std::string sandbox_id_;
  kits::KitPlan plan_;
  bool has_workspace_;
  KitSetupHooks hooks_;
  Done done_;
  std::size_t step_ = 0;  // files first, then setup commands
  std::string tail_;      // the running command's last output
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  KitSetupReport report_;
};

}  // namespace lockroom::core
