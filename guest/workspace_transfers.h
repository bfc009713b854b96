// The streams of the workspace methods, each a StreamOwner driven by the agent's loop:
//
//   PackReceiver   workspace.import: takes exactly the announced pack size from the host into a
//                  temporary file in .git, and at the host's CLOSE stores it: a small pack
//                  indexed by the agent itself, else with `git index-pack --stdin --fix-thin`
//                  (a thin pack is completed from the store); answers CLOSE when the objects are in, RESET (code
//                  3 with git's reason, or 5 for more bytes than announced) when not.
//   BufferSender   workspace.manifest: sends bytes held in memory, then CLOSE.
//   ExportSender   workspace.export: one record per requested entry (see messages.h), read from
//                  the file as credit allows and hashed as it goes; then CLOSE. A file that grew
//                  past the host's bounds since the manifest ends it with RESET code 5.
//
// Senders move data only within the host's credit and while the connection is not backlogged.
// Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "guest/connection.h"
#include "guest/workspace_hash.h"

namespace lockroom::agent {

class WorkspaceTransfer : public StreamOwner {
 public:
  explicit WorkspaceTransfer(Connection& connection) : connection_(connection) {}
  ~WorkspaceTransfer() override;
  void set_stream(std::uint32_t stream) { stream_ = stream; }
  bool done() const { return done_; }
  virtual bool ready() const { return false; }  // pump() could send now
  virtual void pump() {}

  void on_stream_data(std::uint32_t, std::string_view bytes) override { connection_.consumed(stream_, bytes.size()); }
  void on_stream_closed(std::uint32_t) override {}
  void on_stream_reset(std::uint32_t, std::uint32_t, std::string_view) override;

 protected:
  bool can_send() const { return !done_ && connection_.credit(stream_) > 0 && !connection_.backlogged(); }
  void fail(std::uint32_t code, const std::string& why);
  void finish();
  virtual void cleanup() {}

  Connection& connection_;
  std::uint32_t stream_ = 0;
  bool done_ = false;
};

class PackReceiver final : public WorkspaceTransfer {
 public:
  // Packs up to this size are indexed by the agent itself (workspace_objects.h), larger or thin
  // ones by `git index-pack`.
  static constexpr std::int64_t kMaxSelfIndexedPack = 8LL << 20;
  // `fd` is the open temporary file at `temp_path`; both are owned from here on.
  PackReceiver(Connection& connection, std::string workspace, std::string temp_path, int fd, std::int64_t size);
  ~PackReceiver() override { cleanup(); }
  void on_stream_data(std::uint32_t, std::string_view bytes) override;
  void on_stream_closed(std::uint32_t) override;

 private:
  void cleanup() override;
  bool store_small_pack();

  std::string workspace_;
  std::string temp_path_;
  int fd_;
  std::int64_t size_;
  std::int64_t received_ = 0;
};

class BufferSender final : public WorkspaceTransfer {
 public:
  BufferSender(Connection& connection, std::string bytes) : WorkspaceTransfer(connection), bytes_(std::move(bytes)) {}
  bool ready() const override { return can_send(); }
  void pump() override;

 private:
  std::string bytes_;
  std::size_t sent_ = 0;
};

class ExportSender final : public WorkspaceTransfer {
 public:
  struct Item {
    std::uint32_t entry;
    std::string path;  // relative to the workspace
  };
  // Files grown past the host's bounds since the manifest end the export with RESET code 5.
  ExportSender(Connection& connection, int workspace_fd, std::vector<Item> items, std::int64_t max_file_bytes, std::int64_t max_total_bytes);
  ~ExportSender() override { cleanup(); }
  bool ready() const override { return can_send(); }
  void pump() override;

 private:
  void cleanup() override;
  void start_item();
  void refill();
  bool within_bounds(const Item& item, std::uint64_t size, std::uint64_t max);

  int dir_;
  std::vector<Item> items_;
  std::int64_t max_file_bytes_;
  std::int64_t max_total_bytes_;
  std::uint64_t total_ = 0;
  std::size_t next_ = 0;
  std::string out_;           // bytes ready to send (one chunk at most)
  std::size_t out_pos_ = 0;
  int fd_ = -1;               // the file being sent
  std::uint64_t left_ = 0;    // its bytes still to send
  std::uint64_t offset_ = 0;
  BlobHasher hasher_;
};

}  // namespace lockroom::agent
