// FileService: the file.* methods.
//
// Inline reads and writes move at most 256 KiB in the control message itself. With
// `stream: true` the content travels on a stream the agent opens instead, with flow control:
// a read sends the file and then CLOSE (or RESET with the errno text if reading fails); a write
// takes the host's DATA until its CLOSE, then answers with its own CLOSE once the file is
// closed without error (or RESET with the reason). Only regular files are read or written (a
// FIFO or device would block the agent). Paths are used as given: the host is trusted, and the
// guest is its own machine. Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "guest/connection.h"
#include "guest/errors.h"

namespace lockroom::agent {

class FileService {
 public:
  static constexpr std::size_t kMaxTransfers = 64;

  explicit FileService(Connection& connection);
  ~FileService();

  Outcome read(const json& params);
  Outcome write(const json& params);
  Outcome stat(const json& params);
  Outcome list(const json& params);

  // Moves streamed reads forward within credit; forgets finished transfers.
  void pump();
  // True when pump() could make progress right now (the loop must not sleep).
  bool ready() const;
  void abandon_all();
  std::size_t transfers() const { return transfers_.size(); }

 private:
  class Transfer;
  Outcome start_transfer(int fd, bool reading, const std::string& path, std::int64_t size);

  Connection& connection_;
  std::map<std::uint32_t, std::unique_ptr<Transfer>> transfers_;
};

}  // namespace lockroom::agent
