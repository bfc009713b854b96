// find_control_target and ControlClient; see control_client.h.
#include "server/api/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace lockroom::api {

namespace fs = std::filesystem;
using protocol::json;

namespace {

std::string owner_text(const core::SandboxRecord& r) { return "process " + std::to_string(r.owner_pid); }

std::string list_of(const std::vector<core::SandboxRecord>& records) {
  std::string text;
  for (const auto& r : records) text += (text.empty() ? "" : ", ") + r.id + " (" + owner_text(r) + ")";
  return text;
}

ErrorCode code_of_kind(const json& data) {
  std::string kind = data.is_object() && data.contains("kind") && data["kind"].is_string() ? data["kind"].get<std::string>() : "";
  if (kind == "notFound") return ErrorCode::kNotFound;
  if (kind == "wrongState") return ErrorCode::kWrongState;
  if (kind == "limitExceeded") return ErrorCode::kLimitExceeded;
  if (kind == "unavailable") return ErrorCode::kUnavailable;
  return ErrorCode::kInternal;
}

}  // namespace

Result<core::SandboxRecord> find_control_target(const fs::path& state_root, const std::string& id_or_prefix,
                                                const std::function<bool(int)>& owner_alive) {
  std::vector<core::SandboxRecord> live, dead;
  for (auto& r : core::read_sandbox_records(state_root)) (owner_alive(r.owner_pid) ? live : dead).push_back(std::move(r));
  auto found = core::find_sandbox_record(live, id_or_prefix);
  if (found) {
    if (found->control_socket.empty())
      return make_error(ErrorCode::kUnavailable, "sandbox " + found->id + " is owned by " + owner_text(*found) +
                                                     ", which serves no control socket for it (a lockroom without `lockroom diff`, "
                                                     "or it could not make one: see its log)");
    return found;
  }
  if (found.error().code != ErrorCode::kNotFound) return found.error();  // ambiguous, or no id
  if (auto gone = core::find_sandbox_record(dead, id_or_prefix); gone)
    return make_error(ErrorCode::kNotFound, "sandbox " + gone->id + " is gone: its owner, " + owner_text(*gone) +
                                                ", no longer runs (its changes went with it)");
  if (live.empty()) return make_error(ErrorCode::kNotFound, "no sandbox '" + id_or_prefix + "': no sandboxes are running");
  return make_error(ErrorCode::kNotFound, "no sandbox '" + id_or_prefix + "'; running: " + list_of(live));
}

ControlClient::ControlClient(int fd, std::string sandbox_id, int owner_pid)
    : fd_(fd), sandbox_id_(std::move(sandbox_id)), owner_pid_(owner_pid) {}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(other.fd_), sandbox_id_(std::move(other.sandbox_id_)), owner_pid_(other.owner_pid_), next_id_(other.next_id_) {
  other.fd_ = -1;
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) ::close(fd_);
}

Result<ControlClient> ControlClient::connect(const core::SandboxRecord& record) {
  const fs::path& path = record.control_socket;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof addr.sun_path)
    return make_error(ErrorCode::kInvalidInput, "the control socket path " + path.string() + " is too long");
  std::memcpy(addr.sun_path, path.c_str(), path.native().size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(ErrorCode::kUnavailable, std::string("cannot make a socket: ") + std::strerror(errno));
  ControlClient client(fd, record.id, record.owner_pid);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    if (err == ENOENT || err == ECONNREFUSED)
      return make_error(ErrorCode::kUnavailable, "sandbox " + record.id + "'s owner, " + owner_text(record) +
                                                     ", does not answer on " + path.string() + " (the sandbox is ending, or its owner is gone)");
    return make_error(ErrorCode::kUnavailable, "cannot connect to " + path.string() + ": " + std::strerror(err));
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != geteuid() || cred.pid != record.owner_pid)
    return make_error(ErrorCode::kUnavailable, "the control socket " + path.string() + " is not served by sandbox " + record.id +
                                                   "'s owner (" + owner_text(record) + ", uid " + std::to_string(geteuid()) +
                                                   "); it is served by process " + std::to_string(cred.pid) + ", uid " +
                                                   std::to_string(cred.uid));
  return client;
}

Result<void> ControlClient::send_all(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return make_error(ErrorCode::kUnavailable, "sandbox " + sandbox_id_ + "'s owner (process " + std::to_string(owner_pid_) +
                                                     ") closed the control connection: " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return {};
}

Result<json> ControlClient::call(std::string_view method, const json& params, std::chrono::milliseconds timeout) {
  if (fd_ < 0) return make_error(ErrorCode::kInternal, "bug: call on a moved-from ControlClient");
  protocol::Id id{next_id_++};
  if (auto sent = send_all(framing_.encode(protocol::encode_request(id, method, params))); !sent) return sent.error();

  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<rpc::FrameEvent> events;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0)
      return make_error(ErrorCode::kUnavailable, std::string(method) + " on sandbox " + sandbox_id_ + " got no answer within " +
                                                     std::to_string(timeout.count() / 1000) + " s");
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) return make_error(ErrorCode::kUnavailable, std::string("poll failed: ") + std::strerror(errno));
    if (ready <= 0) continue;
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0)
      return make_error(ErrorCode::kUnavailable, "sandbox " + sandbox_id_ + "'s owner (process " + std::to_string(owner_pid_) +
                                                     ") closed the control connection before answering " + std::string(method) +
                                                     " (the sandbox ended?)");
    events.clear();
    framing_.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)), events);
    for (auto& event : events) {
      if (event.kind == rpc::FrameEvent::Kind::kError)
        return make_error(ErrorCode::kLimitExceeded, "the answer to " + std::string(method) + " cannot be read: " + event.text +
                                                         " (name fewer paths)");
      auto message = protocol::classify(event.text);
      auto* response = std::get_if<protocol::Response>(&message);
      if (!response || response->id != id) continue;  // notifications, or a late reply to an abandoned call
      if (response->error) {
        ErrorCode code = response->error->code == protocol::rpc_error::kInvalidParams ? ErrorCode::kInvalidInput
                                                                                      : code_of_kind(response->error->data);
        return make_error(code, response->error->message);
      }
      return response->result ? std::move(*response->result) : json(nullptr);
    }
  }
}

}  // namespace lockroom::api
