// AgentClient: the typed API the server uses to drive one guest's agent.
//
// Wraps a ready GuestChannel: every method sends one control request and reports a Result
// through its callback; processes bring their output through per-process callbacks and streams.
// Errors the agent answers with become lockroom ErrorCodes (not found, limit, ...) with the
// agent's message; a reply that does not parse, names streams the agent never opened, or a
// process.exited for an unknown pid is a lying agent and fails the whole channel.
//
// Processes: output is delivered as it arrives (stdout/stderr, or one pty stream); on_exit
// runs when process.exited arrives, which the agent sends after everything the process itself
// wrote. A process's background children may still write after that, until on_output_end.
// pause_output() applies backpressure all the way to the process in the guest.
//
// Loop thread only. Must not outlive its GuestChannel. Callbacks never run after the client is
// destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/channel/messages.h"
#include "server/channel/guest_channel.h"
#include "server/channel/guest_connection.h"
#include "server/common/result.h"

namespace lockroom::channel {

enum class OutputKind { kStdout, kStderr, kPty };

struct ProcessEvents {
  std::function<void(OutputKind kind, std::string_view bytes)> on_output;
  std::function<void(OutputKind kind)> on_output_end;  // that stream ended (EOF, reset, or channel gone)
  std::function<void(const wire::ProcessExited& exited)> on_exit;
};

// A workspace manifest as received and checked: the agent's summary and its entries, sorted.
// When the host asked with `since` and `summary.since` is set, the manifest is partial: only the
// paths that changed since that manifest, and `entries` may hold removal records (mode
// wire::kModeRemoved) for paths that are gone. When the host also asked for inline content,
// `inlined` holds the content of some of those entries (`entry` indexes `entries`, increasing),
// each verified here: its blob id, computed by the host, is its entry's id.
struct WorkspaceManifest {
  wire::WorkspaceManifestResult summary;  // summary.data is emptied once decoded
  std::vector<wire::ManifestEntry> entries;
  std::vector<wire::InlinedContent> inlined;
};

// One file of a workspace.export, whole. `id` is the blob id of `content` as the host computed it
// (the agent's own claim was checked against it); compare it with the manifest's id to see
// whether the file changed since. mode 0: the file was gone (or no longer a file) when sent.
struct ExportedFile {
  std::int64_t entry = 0;
  std::uint32_t mode = 0;
  std::string id;
  std::string content;
};

struct AgentTimeouts {
  std::chrono::milliseconds control{10000};
  std::chrono::milliseconds process_start{30000};
  std::chrono::milliseconds files{60000};
};

class AgentClient {
 public:
  template <typename T>
  using Done = std::function<void(Result<T>)>;

  explicit AgentClient(GuestChannel& channel, AgentTimeouts timeouts = {});
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  void health(Done<wire::HealthResult> done);
  void resume(const wire::ResumeParams& params, Done<wire::ResumeResult> done);
  void set_limits(const wire::LimitsParams& params, Done<wire::LimitsResult> done);
  // The agent's limit.reached notifications, checked (a malformed one fails the channel).
  void on_limit_reached(std::function<void(const wire::LimitReached&)> handler) { on_limit_reached_ = std::move(handler); }
  // The agent's workspace.changed notifications (the watch of a workspace saw something), for
  // workspaces this client checked out; a malformed one fails the channel, one for a path this
  // client never checked out is dropped (a guest restored from a workspace template may tell
  // before the new checkout).
  void on_workspace_changed(std::function<void(const std::string& path)> handler) { on_workspace_changed_ = std::move(handler); }

  void start_process(const wire::ProcessStartParams& params, ProcessEvents events, Done<wire::ProcessStartResult> done);
  // Bytes for the process's stdin (or terminal). kLimitExceeded when too much is already
  // waiting: retry after on_stdin_writable.
  Result<void> write_stdin(std::int64_t pid, std::string_view bytes);
  void on_stdin_writable(std::int64_t pid, std::function<void()> fn);
  // End of input (pipes). A pty has no end of input: send "\x04" instead.
  Result<void> close_stdin(std::int64_t pid);
  void pause_output(std::int64_t pid, bool paused);
  void signal(std::int64_t pid, int signal, Done<void> done);
  void resize(std::int64_t pid, wire::TerminalSize size, Done<void> done);

  void read_file(const wire::FileReadParams& params, Done<wire::FileReadResult> done);
  void write_file(const wire::FileWriteParams& params, Done<wire::FileWriteResult> done);
  void stat(const std::string& path, bool follow, Done<wire::FileStat> done);
  void list(const std::string& path, std::int64_t limit, Done<wire::FileListResult> done);
  // Whole files of any size, through a stream with flow control. `done` gets the byte count.
  void download(const std::string& path, std::function<void(std::string_view bytes)> on_data, Done<std::int64_t> done);
  void upload(const std::string& path, std::string content, std::int64_t mode, Done<std::int64_t> done);

  // --- workspace (agent_client_workspace.cpp; protocol/channel.md, "Workspace")
  // Sends `pack` (a git packfile of the objects the guest lacks; may be empty) with
  // workspace.import, then checks `checkout.commit` out with workspace.checkout (a sync when
  // `checkout.base` is set). kLimitExceeded, before anything is sent, for a pack over
  // `max_pack_bytes`; a sync that meets the guest's own conflicting edits fails with
  // kWrongState and a message naming the files.
  void import_workspace(const wire::WorkspaceCheckoutParams& checkout, std::string pack, std::int64_t max_pack_bytes,
                        Done<wire::WorkspaceCheckoutResult> done);
  // The same with several packs (each its own workspace.import, in order; none: checkout only).
  void import_workspace(const wire::WorkspaceCheckoutParams& checkout, std::vector<std::string> packs, std::int64_t max_pack_bytes,
                        Done<wire::WorkspaceCheckoutResult> done);
  // Lists the guest's workspace. Entries and sizes beyond `params.bounds`, malformed records or
  // totals that do not add up fail the channel (a lying agent), and so does inline content that
  // was not asked for, breaks `params.inline_content` or is not the bytes of its entry's id.
  void manifest(const wire::WorkspaceManifestParams& params, Done<WorkspaceManifest> done);
  // The content of the given entries of the latest manifest, one whole file per on_file call
  // (in request order); `done` gets the number of files. Bounded by `params.bounds`.
  void export_files(const wire::WorkspaceExportParams& params, std::function<void(ExportedFile file)> on_file, Done<std::int64_t> done);

  std::size_t tracked_processes() const { return processes_.size(); }

  // --- network (agent_client_net.cpp; protocol/channel.md, "Network")
  // Starts the agent's loopback proxies; the result names the ports bound. From then on every
  // connection a guest program makes arrives as a GuestConnection through on_connection (set it
  // first). Connections over `max_connections` open at once are reset at once (code 5); an
  // announcement of a stream the agent never opened, or already announced, fails the channel.
  void enable_network(const wire::NetEnableParams& params, Done<wire::NetEnableResult> done);
  void on_connection(std::function<void(std::unique_ptr<GuestConnection>)> handler);
  void set_max_connections(std::size_t max);
  std::size_t open_connections() const;
  // Installs a CA certificate (PEM, never a key) for processes started afterwards.
  void trust_certificate(const std::string& pem, Done<wire::NetTrustResult> done);

 private:
  struct Proc;
  struct Upload;
  void send_pack(const std::string& path, std::string pack, Done<void> done);
  template <typename T>
  void request(const char* method, const json& params, std::chrono::milliseconds timeout,
               std::function<Result<T>(const json&)> parse, Done<T> done);
  Result<void> on_exited(const json& params);
  Result<void> bind_process(const wire::ProcessStartResult& started, bool pty, ProcessEvents events);
  void output_ended(std::int64_t pid, OutputKind kind);
  void maybe_forget(std::int64_t pid);
  Proc* find(std::int64_t pid);

  struct Net;
  class Connection;
  Result<void> on_net_connection(const json& params);

  GuestChannel& channel_;
  AgentTimeouts timeouts_;
  std::shared_ptr<Net> net_;
  std::map<std::int64_t, std::unique_ptr<Proc>> processes_;
  std::function<void(const wire::LimitReached&)> on_limit_reached_;
  std::function<void(const std::string&)> on_workspace_changed_;
  std::set<std::string> checked_out_;  // workspace paths sent a workspace.checkout
  std::size_t lost_starts_ = 0;  // process.start calls we gave up on: their exits are unknown to us
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The lockroom error for an error the agent answered with (or the dispatcher made up).
Error agent_error_to_result(const std::string& method, const protocol::RpcError& error);

}  // namespace lockroom::channel
