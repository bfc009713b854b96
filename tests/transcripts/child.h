// The server under test as a child process: fork/exec with pipes on stdin, stdout and stderr,
// and a poll(2) loop that keeps both outputs drained while the runner writes or waits.
//
// Draining stderr all the time matters: a server blocked on a full stderr pipe would look like
// a server that stopped answering. Used only by the runner, on its one thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace transcript {

class Child {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts argv[0] with argv. Throws std::runtime_error when it cannot be started.
  explicit Child(const std::vector<std::string>& argv);
  ~Child();  // a child still running is killed and reaped
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Writes all of `bytes` to the child's stdin (one write(2) when the pipe has room), reading its
  // output meanwhile. Returns a description of the problem, or "" on success.
  std::string write(std::string_view bytes, Clock::time_point deadline);
  void close_stdin();
  // Reads output until `done()` holds, `deadline` passes, or nothing more can arrive (the child
  // exited and closed both outputs). Returns the final value of done().
  bool pump(Clock::time_point deadline, const std::function<bool()>& done);
  // Waits for the child to exit and close its outputs; false on timeout.
  bool wait_exit(Clock::time_point deadline);

  std::string take_stdout();  // bytes read from stdout since the last call
  const std::string& stderr_text() const { return err_text_; }
  bool exited() const { return exited_; }
  // "exit code N" or "killed by signal N"; exit_code() is -1 unless it exited normally.
  std::string describe_status() const;
  int exit_code() const;
  pid_t pid() const { return pid_; }

 private:
  void reap();
  // One poll(2) round: until `deadline` at most, and never longer than a short tick so that an
  // exit is noticed; `want_write` adds stdin to the set.
  void poll_once(Clock::time_point deadline, bool want_write, bool& can_write);

  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string out_text_, err_text_;
};

}  // namespace transcript
