// Process: one process started by process.start, and the streams that carry its I/O.
//
// Pipes: three streams the agent opens — stdin (host → process; the agent closes its own
// direction at once), stdout and stderr (process → host). A pty: one stream both ways.
// Output is read only while the host has granted credit on its stream, so a slow host stalls
// the process on a full pipe instead of growing memory; input is held (at most one stream
// window) until the pipe or terminal takes it, and credit goes back as it is written.
// process.exited is sent after the process is reaped AND everything it wrote has been sent:
// for pipes, each output pipe is at EOF or empty; for a pty, the terminal is at EOF or 250 ms
// have passed with nothing left to read (a background job may keep it open).
// Loop thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "guest/connection.h"
#include "guest/errors.h"
#include "guest/poll_set.h"
#include "guest/spawn.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

class Process final : public StreamOwner {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPtyGrace{250};

  Process(Connection& connection, bool pty);
  ~Process() override;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Opens the process's streams (before spawning, so a full stream table refuses the start).
  Result<protocol::channel::ProcessStreams> open_streams();
  // After a failed spawn: takes the streams back.
  void refuse(const std::string& why);
  void attach(const Spawned& spawned, std::string cgroup);

  pid_t pid() const { return pid_; }
  bool pty() const { return pty_; }
  bool reaped() const { return reaped_; }
  const std::string& cgroup() const { return cgroup_; }

  void add_polls(PollSet& set);
  void on_reaped(int status);
  // Sends process.exited when due. Returns true when nothing of the process is left.
  bool advance(Clock::time_point now);
  // When advance() next needs to run without any I/O (the pty grace), if ever.
  std::optional<Clock::time_point> deadline() const;
  // The session is gone: kill the process group, close everything, send nothing more.
  void abandon();

  Outcome resize(std::int64_t cols, std::int64_t rows);
  Outcome signal(int sig, bool group);

  void on_stream_data(std::uint32_t stream, std::string_view bytes) override;
  void on_stream_closed(std::uint32_t stream) override;
  void on_stream_reset(std::uint32_t stream, std::uint32_t code, std::string_view reason) override;

 private:
  struct Output {
    int fd = -1;
    std::uint32_t stream = 0;
    bool stream_open = false;  // false: the host reset it; output is read and dropped
  };
  void read_output(Output& out);
  void finish_output(Output& out);
  void write_input();
  void end_input(std::uint32_t code, const std::string& why);
  bool drained(const Output& out, Clock::time_point now) const;
  int input_fd() const { return pty_ ? terminal_.fd : stdin_fd_; }

  Connection& connection_;
  bool pty_;
  pid_t pid_ = -1;
  std::string cgroup_;
  Output stdout_, stderr_, terminal_;
  int stdin_fd_ = -1;
  std::uint32_t stdin_stream_ = 0;
  bool stdin_open_ = false;      // the host may still send input
  bool stdin_closing_ = false;   // the host half-closed: close the pipe once `input_` is written
  std::string input_;
  bool reaped_ = false;
  int status_ = 0;
  Clock::time_point reaped_at_{};
  bool exit_sent_ = false;
  bool abandoned_ = false;
};

}  // namespace lockroom::agent
