// GuestFiles: ACP's fs/read_text_file and fs/write_text_file of the inner agent, served inside
// its sandbox through lockroom's file/read and file/write (the guest's agent does the I/O). The
// host's files are never read or written here: the agent's edits reach the host only through
// the review. Reads are bounded (kMaxReadBytes) and honour `line` (1-based) and `limit`; writes
// go in chunks (the first replaces the file, the rest append) and make missing folders.
// Loop thread only.
#pragma once

#include <memory>
#include <string>

#include "server/acp/lockroom_link.h"
#include "server/rpc/dispatcher.h"

namespace lockroom::acp {

class GuestFiles {
 public:
  static constexpr std::size_t kMaxReadBytes = 64u << 20;

  GuestFiles(LockroomLink& link, std::string sandbox_id) : link_(link), sandbox_id_(std::move(sandbox_id)) {}
  // Registers fs/* on the inner agent's dispatcher.
  void bind(rpc::Dispatcher& agent);

 private:
  struct Read;
  struct Write;
  void read_from(std::shared_ptr<Read> read);
  void write_from(std::shared_ptr<Write> write);

  LockroomLink& link_;
  std::string sandbox_id_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The lines [line, line + limit) of `text` (1-based; absent: from the start, to the end).
// (Exposed for tests.)
std::string select_lines(const std::string& text, std::optional<std::int64_t> line, std::optional<std::int64_t> limit);

}  // namespace lockroom::acp
