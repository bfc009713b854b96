// Transcript scripts: a .test file parsed into the steps the runner plays.
//
// The format itself is documented at the top of runner.cpp and in README.md. Parsing is pure
// (text in, steps out); a malformed file raises ScriptError naming the line, so a typo in a
// transcript fails loudly instead of testing something else. Used only by the runner.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace transcript {

using json = nlohmann::json;

class ScriptError : public std::runtime_error {
 public:
  ScriptError(int line, const std::string& what) : std::runtime_error("line " + std::to_string(line) + ": " + what), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

struct Step {
  enum class Kind {
    kSendJson,        // >>> {json}
    kSendBody,        // >>> body: TEXT    (framed, but not required to be JSON)
    kSendRaw,         // >>> raw: BYTES    (unframed)
    kSendFile,        // >>> file: NAME    (a file's bytes, unframed: e.g. an --input-mirror)
    kExpect,          // <<< {json}
    kCloseStdin,      // !!! close-stdin
    kExit,            // !!! exit N
    kStderrContains,  // !!! stderr-contains TEXT
    kSleep,           // !!! sleep MS
    kTimeout,         // !!! timeout MS
    kCork,            // !!! cork
    kUncork,          // !!! uncork
    kSkip,            // !!! skip REASON
  };
  Kind kind;
  int line = 0;
  std::string text;  // bytes to send (a JSON message compacted), TEXT, or REASON
  json value;        // the message to send or the expected message
  long number = 0;   // exit code or milliseconds
};

struct Script {
  std::vector<std::string> args;  // extra server arguments from `args:`
  std::vector<Step> steps;
};

Script parse_script(std::string_view text);

// Decodes \r \n \t \\ \" \0, \xNN and \{N:TEXT} (TEXT N times); any other escape is an error.
std::string unescape(std::string_view text, int line);

// Renders bytes readably for failure messages: printable ASCII as is, the rest as C escapes.
std::string escape(std::string_view bytes, std::size_t limit = 400);

}  // namespace transcript
