// lockroom-transcript: plays a JSON-RPC conversation (.test file) against the real server.
//
//   lockroom-transcript LOCKROOM_BINARY FILE.test
//
// It starts `LOCKROOM_BINARY serve --stdio --test-mode [args from the file]` with pipes on stdin,
// stdout and stderr, then plays the file top to bottom. Exit status: 0 passed, 1 failed (the
// message names the line of the file), 77 skipped (CTest reports it as skipped).
//
// The format, one directive per line:
//
//   # text                 a comment; blank lines are ignored too
//   args: A B ...          extra server arguments (optional; before every other directive),
//                          e.g. `args: --framing ndjson --max-message-size 2048`
//   >>> {json}             send one message, framed as the server expects: Content-Length header
//                          by default, one line with `--framing ndjson`
//   >>> raw: BYTES         send bytes as they are, unframed; C escapes \r \n \t \\ \" \0 \xNN,
//                          and \{N:TEXT} for TEXT repeated N times (for split headers, broken
//                          framing, invalid UTF-8, long padding)
//   >>> body: BYTES        send BYTES (same escapes) framed like a message, for bodies that are
//                          not valid JSON
//   >>> file: NAME         send the bytes of file NAME (relative to the transcript's folder) as
//                          they are, unframed: an input recorded with `serve --input-mirror`
//   <<< {json}             read the next message from the server and require it to equal this
//                          JSON exactly (object key order aside; 1 and 1.0 differ). In the
//                          expected value the string "{{any}}" matches any value and
//                          "{{contains:TEXT}}" any string containing TEXT. A read waits up to
//                          10 s (see `!!! timeout`), and a failure shows expected and received.
//   !!! close-stdin        close the server's stdin
//   !!! exit N             wait up to 10 s for the server to exit, and require exit code N
//   !!! stderr-contains T  require the server's stderr to contain T (checked at the end)
//   !!! sleep MS           wait MS milliseconds (output keeps being collected)
//   !!! timeout MS         from here on, a `<<<` read waits at most MS milliseconds (default
//                          10000); a small value proves that a reply comes promptly
//   !!! cork / !!! uncork  everything sent in between goes out in one write(2) at `uncork`
//   !!! skip REASON        do not run this file; the runner prints REASON and reports a skip
//
// A line starting with two spaces continues the directive above it: JSON continues on a new
// line (so long messages can be spread out), raw and body text continue with no separator.
//
// At the end the runner closes stdin (unless `!!! exit` already saw the server go) and requires
// the server to exit within 10 s, normally (not by a signal), with no sanitizer report on its
// stderr. Everything the server wrote to stdout must have been expected: stdout carries protocol
// only, so a message no `<<<` consumed, or bytes that are not a well-formed frame holding a
// JSON-RPC 2.0 object, fail the test, wherever they appear.
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "child.h"
#include "match.h"
#include "script.h"
#include "wire.h"

namespace transcript {
namespace {

using Clock = Child::Clock;
using namespace std::chrono_literals;

constexpr auto kExitWait = 10s;
constexpr int kSkipped = 77;
constexpr int kEndOfFile = -1;
// Reports of sanitizer builds: a transcript that triggers one fails even if every message matched.
constexpr const char* kSanitizerAlarms[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", ": runtime error: "};

struct Failure {
  int line;  // or kEndOfFile for the checks after the last directive
  std::string message;
};

// A message text for the log, cut short.
std::string clip(const std::string& text, std::size_t limit = 300) {
  return text.size() > limit ? text.substr(0, limit - 3) + "..." : text;
}

std::string show(const json& value, std::size_t limit = 300) {
  return clip(value.dump(-1, ' ', false, json::error_handler_t::replace), limit);
}

class Player {
 public:
  Player(const Script& script, Framing framing, Child& child)
      : script_(script), framing_(framing), child_(child), reader_(framing) {}

  void play() {
    for (const Step& step : script_.steps) run(step);
    finish();
  }
  int received() const { return received_; }

 private:
  [[noreturn]] void fail(int line, std::string message) { throw Failure{line, std::move(message)}; }

  void run(const Step& step) {
    switch (step.kind) {
      case Step::Kind::kSendJson: return send(step, frame(framing_, step.text), ">>> " + clip(step.text));
      case Step::Kind::kSendBody: return send(step, frame(framing_, step.text), ">>> body: " + escape(step.text, 300));
      case Step::Kind::kSendRaw: return send(step, step.text, ">>> raw: " + escape(step.text, 300));
      case Step::Kind::kSendFile:
        return send(step, step.text, ">>> file: " + step.value.get<std::string>() + " (" + std::to_string(step.text.size()) + " bytes)");
      case Step::Kind::kExpect: return expect(step);
      case Step::Kind::kCloseStdin:
        if (corked_) fail(step.line, "close-stdin between cork and uncork");
        std::cout << "!!! close-stdin\n";
        return child_.close_stdin();
      case Step::Kind::kExit: return expect_exit(step);
      case Step::Kind::kStderrContains: return;  // checked at the end, once stderr is complete
      case Step::Kind::kSleep:
        child_.pump(Clock::now() + std::chrono::milliseconds(step.number), [] { return false; });
        return;
      case Step::Kind::kTimeout: read_timeout_ = std::chrono::milliseconds(step.number); return;
      case Step::Kind::kCork:
        if (corked_) fail(step.line, "cork twice without uncork");
        corked_ = true;
        return;
      case Step::Kind::kUncork:
        if (!corked_) fail(step.line, "uncork without cork");
        corked_ = false;
        std::cout << "!!! uncork: one write of " << cork_.size() << " bytes\n";
        return write(step.line, std::exchange(cork_, std::string()));
      case Step::Kind::kSkip: return;
    }
  }

  void send(const Step& step, const std::string& bytes, const std::string& log) {
    std::cout << log << "\n";
    if (exited_) fail(step.line, "cannot send: the server has already exited");
    if (corked_) {
      cork_ += bytes;
      return;
    }
    write(step.line, bytes);
  }

  void write(int line, const std::string& bytes) {
    if (std::string problem = child_.write(bytes, Clock::now() + kExitWait); !problem.empty())
      fail(line, problem + server_state());
  }

  // Takes the next message off stdout, waiting up to `wait`. Malformed output fails at `line`.
  std::optional<json> next_message(int line, Clock::duration wait) {
    auto deadline = Clock::now() + wait;
    std::optional<json> message;
    std::string problem;
    auto ready = [&] {
      reader_.append(child_.take_stdout());
      json value;
      switch (reader_.next(value, problem)) {
        case FrameReader::Status::kMessage: message = std::move(value); return true;
        case FrameReader::Status::kMalformed: return true;
        case FrameReader::Status::kIncomplete: return false;
      }
      return false;
    };
    child_.pump(deadline, ready);
    if (!problem.empty())
      fail(line, "the server wrote " + problem + " to stdout:\n  " + escape(reader_.pending()) + server_state());
    return message;
  }

  void expect(const Step& step) {
    if (corked_) fail(step.line, "<<< between cork and uncork (uncork first)");
    std::optional<json> got = next_message(step.line, read_timeout_);
    if (!got) {
      std::string pending = reader_.pending().empty() ? "" : "\n  unfinished output: " + escape(reader_.pending());
      std::string why = child_.exited() ? "the server exited before sending it"
                                        : "none arrived within " + std::to_string(read_timeout_.count()) + " ms";
      fail(step.line, "expected a message, but " + why + "\n  expected: " + show(step.value, 2000) + pending + server_state());
    }
    ++received_;
    std::cout << "<<< " << clip(reader_.last_body()) << "\n";
    if (std::string why = mismatch(step.value, *got); !why.empty())
      fail(step.line, "the message differs " + why + "\n  expected: " + show(step.value, 2000) +
                          "\n  received: " + clip(reader_.last_body(), 2000));
  }

  void expect_exit(const Step& step) {
    if (corked_) fail(step.line, "exit between cork and uncork");
    std::cout << "!!! exit " << step.number << "\n";
    if (!child_.wait_exit(Clock::now() + kExitWait))
      fail(step.line, "the server did not exit within 10 s" + server_state());
    exited_ = true;
    if (child_.exit_code() != step.number)
      fail(step.line, "expected exit code " + std::to_string(step.number) + ", got " + child_.describe_status() + server_state());
  }

  void finish() {
    if (corked_) fail(kEndOfFile, "the file ends between cork and uncork");
    if (!exited_) {
      child_.close_stdin();
      if (!child_.wait_exit(Clock::now() + kExitWait))
        fail(kEndOfFile, "the server did not exit within 10 s of its stdin being closed" + server_state());
      exited_ = true;
    }
    if (child_.exit_code() < 0) fail(kEndOfFile, "the server did not exit normally: " + child_.describe_status() + server_state());
    for (const char* alarm : kSanitizerAlarms) {
      if (child_.stderr_text().find(alarm) != std::string::npos)
        fail(kEndOfFile, std::string("the server's stderr reports \"") + alarm + "\"" + server_state());
    }
    if (auto extra = next_message(kEndOfFile, 0s))
      fail(kEndOfFile, "the server sent a message that no <<< expected:\n  " + clip(reader_.last_body(), 2000) + server_state());
    if (!reader_.pending().empty())
      fail(kEndOfFile, "the server left unfinished bytes on stdout:\n  " + escape(reader_.pending()) + server_state());
    for (const Step& step : script_.steps) {
      if (step.kind == Step::Kind::kStderrContains && child_.stderr_text().find(step.text) == std::string::npos)
        fail(step.line, "the server's stderr does not contain \"" + step.text + "\"" + server_state());
    }
  }

  std::string server_state() const {
    const std::string& err = child_.stderr_text();
    std::string tail = err.size() > 3000 ? "...\n" + err.substr(err.size() - 3000) : err;
    std::string out = "\n  server: " + child_.describe_status() + "\n  server stderr:";
    std::istringstream lines(tail);
    for (std::string l; std::getline(lines, l);) out += "\n    | " + l;
    return out;
  }

  const Script& script_;
  Framing framing_;
  Child& child_;
  FrameReader reader_;
  std::chrono::milliseconds read_timeout_ = 10s;
  bool corked_ = false;
  bool exited_ = false;
  std::string cork_;
  int received_ = 0;
};

Framing framing_of(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--framing=ndjson" || (args[i] == "--framing" && i + 1 < args.size() && args[i + 1] == "ndjson"))
      return Framing::kNdjson;
  }
  return Framing::kContentLength;
}

int run(const std::string& binary, const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cout << name << ": cannot read " << path << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  Script script;
  try {
    script = parse_script(text.str());
  } catch (const ScriptError& e) {
    std::cout << name << ":" << e.what() << " (an error in the transcript itself)\n";
    return 1;
  }
  std::string folder = path.find('/') == std::string::npos ? std::string(".") : path.substr(0, path.find_last_of('/'));
  for (Step& step : script.steps) {
    if (step.kind != Step::Kind::kSendFile) continue;
    std::string file = folder + "/" + step.value.get<std::string>();
    std::ifstream bytes(file, std::ios::binary);
    if (!bytes) {
      std::cout << name << ":line " << step.line << ": cannot read " << file << " (an error in the transcript itself)\n";
      return 1;
    }
    std::stringstream all;
    all << bytes.rdbuf();
    step.text = all.str();
  }
  for (const Step& step : script.steps) {
    if (step.kind == Step::Kind::kSkip) {
      std::cout << "SKIPPED " << name << ":" << step.line << ": " << step.text << "\n";
      return kSkipped;
    }
  }

  std::vector<std::string> argv{binary, "serve", "--stdio", "--test-mode"};
  argv.insert(argv.end(), script.args.begin(), script.args.end());
  std::cout << "# lockroom serve --stdio --test-mode";
  for (const auto& a : script.args) std::cout << " " << a;
  std::cout << "\n";

  auto started = Clock::now();
  try {
    Child child(argv);
    Player player(script, framing_of(script.args), child);
    player.play();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
    std::cout << "PASSED " << name << " (" << player.received() << " messages checked, " << ms << " ms)\n";
    return 0;
  } catch (const Failure& f) {
    if (f.line == kEndOfFile)
      std::cout << "FAILED " << name << ", at the end of the file: " << f.message << "\n";
    else
      std::cout << "FAILED " << name << ":" << f.line << ": " << f.message << "\n";
  } catch (const std::exception& e) {
    std::cout << "FAILED " << name << ": " << e.what() << "\n";
  }
  return 1;
}

}  // namespace
}  // namespace transcript

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: lockroom-transcript LOCKROOM_BINARY FILE.test\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a server that closed stdin shows up as EPIPE on write
  std::cout << std::unitbuf;      // interleave sensibly with anything CTest shows
  return transcript::run(argv[1], argv[2]);
}
