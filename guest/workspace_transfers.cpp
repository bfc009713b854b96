// The workspace streams; see workspace_transfers.h.
#include "guest/workspace_transfers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "guest/guest_user.h"
#include "guest/log.h"
#include "guest/workspace_git.h"
#include "guest/workspace_index.h"
#include "guest/workspace_objects.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace channel = protocol::channel;

namespace {
constexpr std::size_t kChunk = 64u << 10;
}  // namespace

// ---- base

WorkspaceTransfer::~WorkspaceTransfer() {
  if (stream_) connection_.release(stream_);
}

void WorkspaceTransfer::on_stream_reset(std::uint32_t, std::uint32_t, std::string_view) {
  stream_ = 0;  // already forgotten by the connection
  finish();
}

void WorkspaceTransfer::fail(std::uint32_t code, const std::string& why) {
  if (done_) return;
  std::string reason = why.size() > channel::kMaxResetReason ? why.substr(0, channel::kMaxResetReason - 3) + "..." : why;
  connection_.reset_stream(stream_, code, reason);
  finish();
}

void WorkspaceTransfer::finish() {
  if (done_) return;
  done_ = true;
  cleanup();
}

// ---- import

PackReceiver::PackReceiver(Connection& connection, std::string workspace, std::string temp_path, int fd, std::int64_t size)
    : WorkspaceTransfer(connection), workspace_(std::move(workspace)), temp_path_(std::move(temp_path)), fd_(fd), size_(size) {}

void PackReceiver::cleanup() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_path_.c_str());
}

void PackReceiver::on_stream_data(std::uint32_t, std::string_view bytes) {
  if (done_) return connection_.consumed(stream_, bytes.size());
  received_ += static_cast<std::int64_t>(bytes.size());
  if (received_ > size_) return fail(channel::reset_code::kTooMuch, "the pack is longer than the " + std::to_string(size_) + " bytes announced");
  std::string_view left = bytes;
  while (!left.empty()) {
    ssize_t n = ::write(fd_, left.data(), left.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(channel::reset_code::kIoError, std::string("storing the pack failed: ") + std::strerror(errno));
    left.remove_prefix(static_cast<std::size_t>(n));
  }
  connection_.consumed(stream_, bytes.size());
}

void PackReceiver::on_stream_closed(std::uint32_t) {
  if (done_) return;
  if (received_ != size_)
    return fail(channel::reset_code::kIoError, "the pack ended after " + std::to_string(received_) + " of the " + std::to_string(size_) + " bytes announced");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return fail(channel::reset_code::kIoError, std::string("storing the pack failed: ") + std::strerror(errno));
  ActAs owner(default_user());  // the pack and its index belong to the workspace's user
  if (size_ > 0 && !store_small_pack()) {
    GitOptions options;
    options.stdin_path = temp_path_;
    options.max_out = 4096;
    // --fix-thin: a sync's pack may hold deltas against objects the guest already has.
    auto indexed = run_git(workspace_, {"index-pack", "--stdin", "--fix-thin"}, options);
    if (!indexed) return fail(channel::reset_code::kIoError, indexed.error().message);
    if (!indexed->ok()) return fail(channel::reset_code::kIoError, "git index-pack refused the pack: " + indexed->problem());
  }
  connection_.close_stream(stream_);
  finish();
}

// A small pack is indexed here (no git process); false leaves it to `git index-pack`: a thin
// pack, a large one, or anything this code does not understand.
bool PackReceiver::store_small_pack() {
  if (size_ > kMaxSelfIndexedPack) return false;
  auto pack = read_regular_file(temp_path_, static_cast<std::size_t>(size_), true);
  if (!pack) return false;
  auto indexed = index_pack(*pack);
  if (!indexed) {
    log_debug("workspace.import: indexing the pack with git: " + indexed.error().message);
    return false;
  }
  std::string dir = workspace_ + "/.git/objects/pack/", name = dir + "pack-" + indexed->checksum_hex;
  ::mkdir(dir.c_str(), 0777);
  std::string idx_temp = name + ".idx.lockroom-tmp";
  int fd = ::open(idx_temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
  if (fd < 0) return false;
  bool ok = ::write(fd, indexed->idx.data(), indexed->idx.size()) == static_cast<ssize_t>(indexed->idx.size());
  ok = ::close(fd) == 0 && ok;
  // The pack first, then its index: git only looks at a pack that has one.
  ok = ok && ::chmod(temp_path_.c_str(), 0444) == 0 && ::rename(temp_path_.c_str(), (name + ".pack").c_str()) == 0 &&
       ::rename(idx_temp.c_str(), (name + ".idx").c_str()) == 0;
  if (!ok) ::unlink(idx_temp.c_str());
  return ok;
}

// ---- manifest

void BufferSender::pump() {
  while (can_send() && sent_ < bytes_.size()) {
    std::size_t n = std::min({kChunk, connection_.credit(stream_), bytes_.size() - sent_});
    sent_ += connection_.send(stream_, std::string_view(bytes_).substr(sent_, n));
  }
  if (!done_ && sent_ == bytes_.size()) {
    connection_.close_stream(stream_);
    finish();
  }
}

// ---- export

ExportSender::ExportSender(Connection& connection, int workspace_fd, std::vector<Item> items, std::int64_t max_file_bytes,
                           std::int64_t max_total_bytes)
    : WorkspaceTransfer(connection),
      dir_(workspace_fd),
      items_(std::move(items)),
      max_file_bytes_(max_file_bytes),
      max_total_bytes_(max_total_bytes) {}

bool ExportSender::within_bounds(const Item& item, std::uint64_t size, std::uint64_t max) {
  total_ += size;
  if (size > max) {
    fail(channel::reset_code::kTooMuch, item.path + " is now " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max));
    return false;
  }
  if (total_ > static_cast<std::uint64_t>(max_total_bytes_)) {
    fail(channel::reset_code::kTooMuch, "with " + item.path + " the export is over its limit of " + std::to_string(max_total_bytes_) + " bytes");
    return false;
  }
  return true;
}

void ExportSender::cleanup() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (dir_ >= 0) ::close(dir_);
  dir_ = -1;
}

// Begins the next record: its header, and for a symlink or a gone file the whole record.
void ExportSender::start_item() {
  const Item& item = items_[next_];
  out_.clear();
  out_pos_ = 0;
  struct stat st{};
  bool present = ::fstatat(dir_, item.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (present && S_ISLNK(st.st_mode)) {
    char target[channel::kMaxPath];
    ssize_t n = ::readlinkat(dir_, item.path.c_str(), target, sizeof target);
    if (n >= 0) {
      std::string_view bytes(target, static_cast<std::size_t>(n));
      if (!within_bounds(item, bytes.size(), channel::kMaxPath)) return;
      channel::append_export_header(out_, item.entry, channel::kModeSymlink, bytes.size());
      hasher_.begin(bytes.size());
      hasher_.update(bytes);
      out_ += bytes;
      out_ += hasher_.finish_raw();
      next_++;
      return;
    }
  } else if (present && S_ISREG(st.st_mode)) {
    fd_ = ::openat(dir_, item.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
      left_ = static_cast<std::uint64_t>(st.st_size);
      offset_ = 0;
      if (!within_bounds(item, left_, static_cast<std::uint64_t>(max_file_bytes_))) return;
      std::uint32_t mode = (st.st_mode & S_IXUSR) ? channel::kModeExecutable : channel::kModeFile;
      channel::append_export_header(out_, item.entry, mode, left_);
      hasher_.begin(left_);
      return;
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Gone since the manifest (or no longer a file or symlink): an empty record with mode 0.
  channel::append_export_header(out_, item.entry, 0, 0);
  out_.append(channel::kExportTrailerBytes, '\0');
  next_++;
}

// Puts the next piece of the current file (or its trailer) in out_.
void ExportSender::refill() {
  out_.clear();
  out_pos_ = 0;
  if (left_ > 0) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left_, kChunk));
    out_.resize(want);
    ssize_t n = -1;
    do {
      n = ::pread(fd_, out_.data(), want, static_cast<off_t>(offset_));
    } while (n < 0 && errno == EINTR);
    // A file that shrank (or fails to read) since its header is padded with zeros: the id in
    // the trailer then tells the host the content is not what the manifest listed.
    if (n <= 0) {
      std::fill(out_.begin(), out_.end(), '\0');
    } else {
      out_.resize(static_cast<std::size_t>(n));
    }
    hasher_.update(out_);
    left_ -= out_.size();
    offset_ += out_.size();
    return;
  }
  out_ = hasher_.finish_raw();
  ::close(fd_);
  fd_ = -1;
  next_++;
}

void ExportSender::pump() {
  while (!done_ && !connection_.backlogged()) {
    if (out_pos_ == out_.size()) {
      if (fd_ >= 0) {
        refill();
      } else if (next_ < items_.size()) {
        start_item();
        if (done_) return;
      } else {
        connection_.close_stream(stream_);
        return finish();
      }
    }
    std::size_t n = std::min(connection_.credit(stream_), out_.size() - out_pos_);
    if (n == 0) return;  // wait for the host's WINDOW
    out_pos_ += connection_.send(stream_, std::string_view(out_).substr(out_pos_, n));
  }
}

}  // namespace lockroom::agent
