// YAML → JSON with source positions; see yaml_document.h.
#include "server/kits/yaml_document.h"

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <set>

#include <yaml-cpp/yaml.h>

namespace lockroom::kits {

namespace {

SourcePosition position(const YAML::Mark& mark) {
  if (mark.is_null()) return {};
  return {mark.line + 1, mark.column + 1};
}

std::string at(const std::string& file, const YAML::Mark& mark) {
  SourcePosition p = position(mark);
  return file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": ";
}

// YAML 1.2 core schema for plain scalars.
json plain_scalar(const std::string& text) {
  static const std::set<std::string> kNull{"", "~", "null", "Null", "NULL"};
  static const std::set<std::string> kTrue{"true", "True", "TRUE"};
  static const std::set<std::string> kFalse{"false", "False", "FALSE"};
  static const std::regex kInt("[-+]?(0|[1-9][0-9]*)");
  static const std::regex kHex("0x[0-9a-fA-F]+");
  static const std::regex kOct("0o[0-7]+");
  static const std::regex kLeadingZero("[-+]?0[0-9]+");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (kNull.count(text)) return nullptr;
  if (kTrue.count(text)) return true;
  if (kFalse.count(text)) return false;
  auto integer = [&](const std::string& digits, int base) -> json {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(digits.c_str(), &end, base);
    if (errno == ERANGE || *end != '\0') return text;  // too big: keep the text, readers say why
    return v;
  };
  if (std::regex_match(text, kLeadingZero)) return text;  // 0644: see the header
  if (std::regex_match(text, kInt)) return integer(text, 10);
  if (std::regex_match(text, kHex)) return integer(text.substr(2), 16);
  if (std::regex_match(text, kOct)) return integer(text.substr(2), 8);
  if (std::regex_match(text, kFloat)) return std::strtod(text.c_str(), nullptr);
  return text;
}

class Converter {
 public:
  Converter(YamlDocument& doc) : doc_(doc) {}

  Result<json> convert(const YAML::Node& node, const std::string& path, std::size_t depth) {
    if (++nodes_ > kMaxYamlNodes)
      return make_error(ErrorCode::kInvalidInput, at(doc_.file, node.Mark()) + "the document has more than " +
                                                      std::to_string(kMaxYamlNodes) + " values (is an alias repeated?)");
    if (depth > kMaxYamlDepth)
      return make_error(ErrorCode::kInvalidInput, at(doc_.file, node.Mark()) + "nested deeper than " + std::to_string(kMaxYamlDepth) + " levels");
    if (!doc_.positions.count(path)) doc_.positions[path] = position(node.Mark());
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return json(nullptr);
      case YAML::NodeType::Scalar:
        if (node.Tag() == "!") return json(node.Scalar());  // quoted
        if (node.Tag() != "?" && node.Tag() != "tag:yaml.org,2002:str" && !node.Tag().empty())
          return make_error(ErrorCode::kInvalidInput, at(doc_.file, node.Mark()) + "tags like " + node.Tag() + " are not supported");
        if (node.Tag() == "tag:yaml.org,2002:str") return json(node.Scalar());
        return plain_scalar(node.Scalar());
      case YAML::NodeType::Sequence: {
        json out = json::array();
        std::size_t i = 0;
        for (const auto& item : node) {
          auto v = convert(item, child_path(path, i++), depth + 1);
          if (!v) return v;
          out.push_back(std::move(*v));
        }
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& entry : node) {
          const YAML::Node& key = entry.first;
          if (!key.IsScalar())
            return make_error(ErrorCode::kInvalidInput, at(doc_.file, key.Mark()) + "a mapping key must be text");
          const std::string& name = key.Scalar();
          if (out.contains(name))
            return make_error(ErrorCode::kInvalidInput, at(doc_.file, key.Mark()) + "duplicate key \"" + name + "\"");
          std::string child = child_path(path, name);
          doc_.positions[child] = position(key.Mark());  // errors about a field point at its key
          auto v = convert(entry.second, child, depth + 1);
          if (!v) return v;
          out[name] = std::move(*v);
        }
        return out;
      }
    }
    return json(nullptr);
  }

 private:
  YamlDocument& doc_;
  std::size_t nodes_ = 0;
};

}  // namespace

std::string child_path(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }
std::string child_path(const std::string& path, std::size_t index) { return path + "[" + std::to_string(index) + "]"; }

SourcePosition YamlDocument::position_of(std::string path) const {
  while (true) {
    if (auto it = positions.find(path); it != positions.end() && it->second.line > 0) return it->second;
    if (path.empty()) return {};
    std::size_t cut = path.find_last_of(".[");
    path = cut == std::string::npos ? std::string() : path.substr(0, cut);
  }
}

std::string YamlDocument::locate(const std::string& message) const {
  std::string path;
  if (std::size_t colon = message.find(": "); colon != std::string::npos) {
    std::string head = message.substr(0, colon);
    if (head.find(' ') == std::string::npos) path = head;  // a field path, not prose
  }
  SourcePosition p = position_of(path);
  if (p.line == 0) return file + ": " + message;
  return file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": " + message;
}

Result<YamlDocument> parse_yaml(std::string_view text, const std::string& file) {
  YamlDocument doc;
  doc.file = file;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidInput, at(file, e.mark) + e.msg);
  }
  Converter converter(doc);
  try {
    auto value = converter.convert(root, "", 0);
    if (!value) return value.error();
    doc.value = std::move(*value);
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidInput, at(file, e.mark) + e.msg);
  }
  return doc;
}

}  // namespace lockroom::kits
