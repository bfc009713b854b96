// Parsing .test files; see script.h.
#include "script.h"

#include <cctype>
#include <charconv>

namespace transcript {

namespace {

// One directive with its continuation lines already gathered.
struct Directive {
  int line;
  std::string head;                // the first line
  std::vector<std::string> more;   // continuation lines, without their two leading spaces
};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<Directive> gather(std::string_view text) {
  std::vector<Directive> out;
  int number = 0;
  bool have_directive = false;  // comments and blank lines may sit inside a continued directive
  while (!text.empty()) {
    ++number;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || line.front() == '#') continue;
    if (starts_with(line, "  ")) {
      if (!have_directive) throw ScriptError(number, "continuation line with no directive before it");
      out.back().more.emplace_back(line.substr(2));
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(line.front())))
      throw ScriptError(number, "a continuation line must start with exactly two spaces");
    out.push_back(Directive{number, std::string(line), {}});
    have_directive = true;
  }
  return out;
}

// The directive's text after `prefix`: continuation lines joined with `separator`.
std::string body_of(const Directive& d, std::size_t prefix, std::string_view separator) {
  std::string body = d.head.substr(prefix);
  for (const auto& piece : d.more) {
    body += separator;
    body += piece;
  }
  return body;
}

json parse_json(const std::string& text, int line) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ScriptError(line, std::string("the JSON does not parse: ") + e.what());
  }
}

long parse_number(std::string_view text, int line, const char* what) {
  text = trim(text);
  long n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw ScriptError(line, std::string(what) + " must be a whole number, got \"" + std::string(text) + "\"");
  return n;
}

Step control_step(const Directive& d) {
  std::string rest = body_of(d, 4, "");
  std::string_view command = trim(rest);
  std::string_view word = command.substr(0, command.find(' '));
  std::string_view arg = word.size() < command.size() ? trim(command.substr(word.size())) : std::string_view();
  Step step{Step::Kind::kCloseStdin, d.line, {}, {}, 0};
  auto no_arg = [&](Step::Kind kind) {
    if (!arg.empty()) throw ScriptError(d.line, "!!! " + std::string(word) + " takes no argument");
    step.kind = kind;
    return step;
  };
  auto text_arg = [&](Step::Kind kind) {
    if (arg.empty()) throw ScriptError(d.line, "!!! " + std::string(word) + " needs an argument");
    step.kind = kind;
    step.text = std::string(arg);
    return step;
  };
  if (word == "close-stdin") return no_arg(Step::Kind::kCloseStdin);
  if (word == "cork") return no_arg(Step::Kind::kCork);
  if (word == "uncork") return no_arg(Step::Kind::kUncork);
  if (word == "stderr-contains") return text_arg(Step::Kind::kStderrContains);
  if (word == "skip") return text_arg(Step::Kind::kSkip);
  if (word == "exit" || word == "sleep" || word == "timeout") {
    step.kind = word == "exit" ? Step::Kind::kExit : word == "sleep" ? Step::Kind::kSleep : Step::Kind::kTimeout;
    step.number = parse_number(arg, d.line, word == "exit" ? "the exit code" : "the milliseconds");
    if (step.kind != Step::Kind::kExit && (step.number < 0 || step.number > 600000))
      throw ScriptError(d.line, "milliseconds must be between 0 and 600000");
    return step;
  }
  throw ScriptError(d.line, "unknown command \"!!! " + std::string(word) + "\"");
}

Step send_step(const Directive& d) {
  std::string_view head = std::string_view(d.head).substr(4);
  if (starts_with(head, "file:")) {
    std::string name = body_of(d, 9, "");
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (name.empty()) throw ScriptError(d.line, "file: needs a file name");
    // The runner reads it (relative to the transcript's folder) before playing.
    return Step{Step::Kind::kSendFile, d.line, {}, json(name), 0};
  }
  if (starts_with(head, "raw:") || starts_with(head, "body:")) {
    bool raw = starts_with(head, "raw:");
    std::size_t prefix = 4 + (raw ? 4 : 5);
    while (prefix < d.head.size() && d.head[prefix] == ' ') ++prefix;
    Step step{raw ? Step::Kind::kSendRaw : Step::Kind::kSendBody, d.line, {}, {}, 0};
    step.text = unescape(body_of(d, prefix, ""), d.line);
    return step;
  }
  Step step{Step::Kind::kSendJson, d.line, {}, {}, 0};
  step.value = parse_json(body_of(d, 4, "\n"), d.line);
  // What goes on the wire keeps the members in the order the transcript wrote them.
  step.text = nlohmann::ordered_json::parse(body_of(d, 4, "\n")).dump();
  return step;
}

}  // namespace

Script parse_script(std::string_view text) {
  Script script;
  for (const Directive& d : gather(text)) {
    if (starts_with(d.head, "args:")) {
      if (!script.steps.empty()) throw ScriptError(d.line, "args: must come before every other directive");
      std::string all = body_of(d, 5, " ");
      std::string_view rest = all;
      while (!(rest = trim(rest)).empty()) {
        std::size_t end = rest.find_first_of(" \t");
        script.args.emplace_back(rest.substr(0, end));
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
      }
    } else if (starts_with(d.head, ">>> ")) {
      script.steps.push_back(send_step(d));
    } else if (starts_with(d.head, "<<< ")) {
      script.steps.push_back(Step{Step::Kind::kExpect, d.line, {}, parse_json(body_of(d, 4, "\n"), d.line), 0});
    } else if (starts_with(d.head, "!!! ")) {
      script.steps.push_back(control_step(d));
    } else {
      throw ScriptError(d.line, "unknown directive \"" + d.head.substr(0, 40) +
                                    "\" (expected args:, >>>, <<<, !!!, # or two-space continuation)");
    }
  }
  return script;
}

std::string unescape(std::string_view text, int line) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) throw ScriptError(line, "a backslash at the end of raw text");
    switch (text[i]) {
      case 'r': out += '\r'; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case '0': out += '\0'; break;
      case '\\': out += '\\'; break;
      case '{': {
        // \{N:TEXT} is TEXT repeated N times, for long padding that stays readable.
        std::size_t close = text.find('}', i);
        std::size_t colon = text.find(':', i);
        if (close == std::string_view::npos || colon == std::string_view::npos || colon > close)
          throw ScriptError(line, "\\{ needs the form \\{N:TEXT}");
        std::string_view count = text.substr(i + 1, colon - i - 1);
        long n = 0;
        auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
        if (ec != std::errc() || end != count.data() + count.size() || n < 0 || n > (16 << 20))
          throw ScriptError(line, "\\{N:TEXT} needs a count between 0 and 16777216");
        for (long k = 0; k < n; ++k) out.append(text.substr(colon + 1, close - colon - 1));
        i = close;
        break;
      }
      case '"': out += '"'; break;
      case 'x': {
        auto hex = [&](std::size_t at) -> int {
          if (at >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[at])))
            throw ScriptError(line, "\\x needs two hex digits");
          char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[at])));
          return c <= '9' ? c - '0' : c - 'a' + 10;
        };
        out += static_cast<char>(hex(i + 1) * 16 + hex(i + 2));
        i += 2;
        break;
      }
      default:
        throw ScriptError(line, std::string("unknown escape \\") + text[i]);
    }
  }
  return out;
}

std::string escape(std::string_view bytes, std::size_t limit) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') out += "\\r";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\\') out += "\\\\";
    else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
  }
  if (bytes.size() > limit) out += "... (" + std::to_string(bytes.size()) + " bytes in all)";
  return out;
}

}  // namespace transcript
