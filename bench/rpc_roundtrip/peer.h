// PeerProcess: a JSON-RPC server under test, spawned as a child with Content-Length framed pipes.
//
// The benchmark driver (driver.cpp) owns one per run. The child gets our pipes as stdin and
// stdout and /dev/null as stderr, the way an editor spawns a language server. Everything here is
// blocking from the caller's point of view, built on non-blocking descriptors and poll(2) so that
// the driver can keep writing requests while replies arrive (the pipelined mode) without either
// side stalling on a full pipe. Every wait is bounded: a silent or dead server is an error
// (PeerError), never a hang. Single-threaded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lockroom::bench {

struct PeerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class PeerProcess {
 public:
  // Starts argv[0] (searched in PATH) with argv as its arguments.
  PeerProcess(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);
  ~PeerProcess();  // kills the child if it is still running
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Frames `body` with a Content-Length header and appends it to the outgoing buffer.
  void queue(std::string_view body);
  bool has_queued() const { return out_pos_ < out_.size(); }
  // Writes everything queued: at once while the pipe takes it, waiting (and reading) when it is full.
  void flush();

  // The next complete message body, or an empty view when none is buffered. The view stays valid
  // until the next call that reads or takes a message.
  std::string_view take_message();
  // Waits until at least one message is buffered and returns it.
  std::string_view wait_message();
  // One poll(2) round: writes what the pipe takes of the queue and reads what has arrived.
  // Returns once some progress was made.
  void pump();

  // Closes the child's stdin, waits for it to exit, and returns its exit code (or throws when it
  // died of a signal or did not exit in time).
  int close_and_wait();

 private:
  void read_available();
  // Throws `why`, plus how the child ended if it has (it gets a moment to do so).
  [[noreturn]] void fail_dead(std::string why);

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::chrono::milliseconds timeout_;
  std::string out_;
  std::size_t out_pos_ = 0;
  std::string in_;
  std::size_t in_pos_ = 0;
  bool eof_ = false;
};

}  // namespace lockroom::bench
