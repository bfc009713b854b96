// The file.* methods and streamed transfers; see file_service.h.
#include "guest/file_service.h"
#include "guest/write_all.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "guest/guest_user.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace channel = protocol::channel;
namespace agent_error = channel::agent_error;

namespace {

constexpr std::size_t kChunk = 64u << 10;

const char* type_of(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "dir";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

// Opens a regular file without ever blocking on a FIFO or device; returns the fd or an error.
std::variant<int, RpcError> open_regular(const std::string& method, const std::string& path, int flags, mode_t mode, struct stat& st) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);
  if (fd < 0) return errno_error(errno, method + ": " + path);
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return errno_error(err, method + ": " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) return make_rpc_error(agent_error::kWrongType, method + ": " + path + " is a directory");
    return make_rpc_error(agent_error::kWrongType, method + ": " + path + " is not a regular file (" + type_of(st.st_mode) + ")");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::optional<RpcError> make_parents(const std::string& path) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return errno_error(errno, "file.write: creating " + dir);
  }
  return std::nullopt;
}

}  // namespace

// One streamed read or write.
class FileService::Transfer final : public StreamOwner {
 public:
  Transfer(Connection& connection, int fd, bool reading, std::string path)
      : connection_(connection), fd_(fd), reading_(reading), path_(std::move(path)) {}
  ~Transfer() override {
    if (fd_ >= 0) ::close(fd_);
    if (stream_) connection_.release(stream_);
  }
  void set_stream(std::uint32_t stream) { stream_ = stream; }
  bool done() const { return done_; }
  bool ready() const { return reading_ && !done_ && connection_.credit(stream_) > 0 && !connection_.backlogged(); }

  void pump() {
    char buf[kChunk];
    while (ready()) {
      ssize_t n = ::read(fd_, buf, std::min(kChunk, connection_.credit(stream_)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(std::string("reading ") + path_ + " failed: " + std::strerror(errno));
      if (n == 0) {
        connection_.close_stream(stream_);
        return finish();
      }
      connection_.send(stream_, std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  void on_stream_data(std::uint32_t, std::string_view bytes) override {
    if (done_ || reading_) return connection_.consumed(stream_, bytes.size());
    if (!write_all(fd_, bytes)) return fail(std::string("writing ") + path_ + " failed: " + std::strerror(errno));
    connection_.consumed(stream_, bytes.size());
  }
  void on_stream_closed(std::uint32_t) override {
    if (done_ || reading_) return;
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return fail(std::string("closing ") + path_ + " failed: " + std::strerror(errno));
    connection_.close_stream(stream_);
    finish();
  }
  void on_stream_reset(std::uint32_t, std::uint32_t, std::string_view) override {
    stream_ = 0;  // already forgotten by the connection
    finish();
  }

 private:
  void fail(const std::string& why) {
    connection_.reset_stream(stream_, channel::reset_code::kIoError, why);
    finish();
  }
  void finish() {
    done_ = true;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  Connection& connection_;
  int fd_;
  bool reading_;
  std::string path_;
  std::uint32_t stream_ = 0;
  bool done_ = false;
};

FileService::FileService(Connection& connection) : connection_(connection) {}
FileService::~FileService() = default;

Outcome FileService::start_transfer(int fd, bool reading, const std::string& path, std::int64_t size) {
  if (transfers_.size() >= kMaxTransfers) {
    ::close(fd);
    return make_rpc_error(agent_error::kLimitReached, "too many streamed file transfers (" + std::to_string(transfers_.size()) + ") are running");
  }
  auto transfer = std::make_unique<Transfer>(connection_, fd, reading, path);
  auto stream = connection_.open_stream(transfer.get());
  if (!stream) return make_rpc_error(agent_error::kLimitReached, (reading ? "file.read: " : "file.write: ") + stream.error().message);
  transfer->set_stream(*stream);
  transfers_[*stream] = std::move(transfer);
  if (reading) return channel::to_json(channel::FileReadResult{{}, size, false, *stream});
  return channel::to_json(channel::FileWriteResult{0, *stream});
}

Outcome FileService::read(const json& params) {
  auto parsed = channel::parse_file_read_params(params);
  if (!parsed) return invalid_params(parsed.error());
  struct stat st{};
  auto opened = open_regular("file.read", parsed->path, O_RDONLY, 0, st);
  if (auto* error = std::get_if<RpcError>(&opened)) return *error;
  int fd = std::get<int>(opened);
  if (parsed->stream) return start_transfer(fd, true, parsed->path, st.st_size);

  channel::FileReadResult result;
  result.size = st.st_size;
  result.data.resize(static_cast<std::size_t>(parsed->length));
  std::size_t got = 0;
  while (got < result.data.size()) {
    ssize_t n = ::pread(fd, result.data.data() + got, result.data.size() - got, parsed->offset + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return errno_error(err, "file.read: " + parsed->path);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  result.data.resize(got);
  result.eof = got < static_cast<std::size_t>(parsed->length) || (result.size > 0 && parsed->offset + static_cast<std::int64_t>(got) >= result.size);
  return channel::to_json(result);
}

Outcome FileService::write(const json& params) {
  auto parsed = channel::parse_file_write_params(params);
  if (!parsed) return invalid_params(parsed.error());
  // Created, opened and its mode set as the user it is written for; the bytes go to the open file.
  ActAs as(guest_user(parsed->user));
  if (parsed->mkdirs)
    if (auto error = make_parents(parsed->path)) return *error;
  struct stat st{};
  int flags = O_WRONLY | O_CREAT | (parsed->append ? O_APPEND : O_TRUNC);
  auto opened = open_regular("file.write", parsed->path, flags, static_cast<mode_t>(parsed->mode), st);
  if (auto* error = std::get_if<RpcError>(&opened)) return *error;
  int fd = std::get<int>(opened);
  if (::fchmod(fd, static_cast<mode_t>(parsed->mode)) != 0) {
    int err = errno;
    ::close(fd);
    return errno_error(err, "file.write: setting the mode of " + parsed->path);
  }
  if (parsed->stream) return start_transfer(fd, false, parsed->path, 0);
  bool ok = write_all(fd, parsed->data);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) return errno_error(err, "file.write: " + parsed->path);
  return channel::to_json(channel::FileWriteResult{static_cast<std::int64_t>(parsed->data.size()), 0});
}

Outcome FileService::stat(const json& params) {
  auto parsed = channel::parse_file_stat_params(params);
  if (!parsed) return invalid_params(parsed.error());
  struct stat st{};
  int rc = parsed->follow ? ::stat(parsed->path.c_str(), &st) : ::lstat(parsed->path.c_str(), &st);
  if (rc != 0) return errno_error(errno, "file.stat: " + parsed->path);
  channel::FileStat result;
  result.type = type_of(st.st_mode);
  result.size = st.st_size;
  result.mode = st.st_mode & 07777;
  result.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  if (S_ISLNK(st.st_mode)) {
    char target[channel::kMaxPath];
    ssize_t n = ::readlink(parsed->path.c_str(), target, sizeof target);
    if (n >= 0) result.target = std::string(target, static_cast<std::size_t>(n));
  }
  return channel::to_json(result);
}

Outcome FileService::list(const json& params) {
  auto parsed = channel::parse_file_list_params(params);
  if (!parsed) return invalid_params(parsed.error());
  int dfd = ::open(parsed->path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errno_error(errno, "file.list: " + parsed->path);
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    int err = errno;
    ::close(dfd);
    return errno_error(err, "file.list: " + parsed->path);
  }
  channel::FileListResult result;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (result.entries.size() >= static_cast<std::size_t>(parsed->limit)) {
      result.truncated = true;
      break;
    }
    struct stat st{};
    channel::DirEntry item{name, "other", 0, 0};
    if (::fstatat(dfd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      item.type = type_of(st.st_mode);
      item.size = st.st_size;
      item.mode = st.st_mode & 07777;
    }
    result.entries.push_back(std::move(item));
  }
  ::closedir(dir);
  std::sort(result.entries.begin(), result.entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return channel::to_json(result);
}

void FileService::pump() {
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    it->second->pump();
    if (it->second->done()) {
      it = transfers_.erase(it);
    } else {
      ++it;
    }
  }
}

bool FileService::ready() const {
  return std::any_of(transfers_.begin(), transfers_.end(), [](const auto& t) { return t.second->ready() || t.second->done(); });
}

void FileService::abandon_all() {
  for (auto& [id, transfer] : transfers_) transfer->on_stream_reset(id, channel::reset_code::kCancelled, "session lost");
  transfers_.clear();
}

}  // namespace lockroom::agent
