// YAML → JSON with positions (server/kits/yaml_document.*).
#include <catch2/catch.hpp>

#include "server/kits/yaml_document.h"

using lockroom::kits::json;
using lockroom::kits::parse_yaml;

TEST_CASE("scalars follow the core schema, quoted text stays text, a leading zero stays text", "[kits][yaml]") {
  auto doc = parse_yaml("a: 12\nb: '12'\nc: true\nd: ~\ne: 0644\nf: 1.5\ng: hello world\nh: 0x1f\ni: 0o17\nj: \"true\"\n", "k.yaml");
  REQUIRE(doc);
  const json& v = doc->value;
  CHECK(v["a"] == 12);
  CHECK(v["b"] == "12");
  CHECK(v["c"] == true);
  CHECK(v["d"].is_null());
  CHECK(v["e"] == "0644");
  CHECK(v["f"] == 1.5);
  CHECK(v["g"] == "hello world");
  CHECK(v["h"] == 31);
  CHECK(v["i"] == 15);
  CHECK(v["j"] == "true");
}

TEST_CASE("positions are recorded per path, and messages are located at the nearest one", "[kits][yaml]") {
  auto doc = parse_yaml("name: x\nnetwork:\n  rules:\n    - action: allow\n      host: \"a b\"\n", "dir/kit.yaml");
  REQUIRE(doc);
  CHECK(doc->position_of("network.rules[0].host").line == 5);
  CHECK(doc->position_of("network.rules[0].host").column == 7);
  CHECK(doc->position_of("network.rules[0].ports").line == 4);  // not written: its parent, the rule
  CHECK(doc->locate("network.rules[0].host: \"a b\" is not a valid host name") == "dir/kit.yaml:5:7: network.rules[0].host: \"a b\" is not a valid host name");
  CHECK(doc->locate("something went wrong: badly") == "dir/kit.yaml:1:1: something went wrong: badly");
}

TEST_CASE("syntax errors, duplicate keys and non-text keys are named with their line and column", "[kits][yaml]") {
  auto bad = parse_yaml("name: [unclosed\n", "k.yaml");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.rfind("k.yaml:", 0) == 0);

  auto dup = parse_yaml("name: a\nenv:\n  X: 1\n  X: 2\n", "k.yaml");
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message == "k.yaml:4:3: duplicate key \"X\"");

  auto key = parse_yaml("? [a, b]\n: c\n", "k.yaml");
  REQUIRE_FALSE(key);
  CHECK(key.error().message.find("a mapping key must be text") != std::string::npos);

  auto tag = parse_yaml("a: !!binary aGVsbG8=\n", "k.yaml");
  REQUIRE_FALSE(tag);
  CHECK(tag.error().message.find("tags like") != std::string::npos);
}

TEST_CASE("an alias bomb and deep nesting are refused, not expanded", "[kits][yaml]") {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'i'; ++c, ++prev) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  auto doc = parse_yaml(bomb, "k.yaml");
  REQUIRE_FALSE(doc);
  CHECK(doc.error().message.find("more than 100000 values") != std::string::npos);

  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto nested = parse_yaml(deep, "k.yaml");
  REQUIRE_FALSE(nested);
  CHECK(nested.error().message.find("nested deeper than 64 levels") != std::string::npos);
}
