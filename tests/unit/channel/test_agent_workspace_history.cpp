// ManifestHistory against the obvious model: every manifest kept whole. Random sequences of
// whole listings and change sets; each remembered manifest's entries and the records taking it to
// the latest must be what the model says.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "guest/workspace_history.h"

using namespace lockroom;
using Entry = protocol::channel::ManifestEntry;

namespace {

Entry file(const std::string& path, int version) {
  Entry e;
  e.path = path;
  e.mode = 0100644;
  e.id = std::string(39, '0') + static_cast<char>('a' + version % 6);
  e.size = static_cast<std::uint64_t>(version);
  return e;
}

bool operator_equal(const Entry& a, const Entry& b) { return a.path == b.path && a.mode == b.mode && a.id == b.id && a.size == b.size; }

bool same(const std::vector<Entry>& a, const std::vector<Entry>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), operator_equal);
}

std::vector<Entry> as_vector(const std::map<std::string, Entry>& m) {
  std::vector<Entry> out;
  for (const auto& [path, e] : m) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("workspace history: remembered manifests and the records since them match whole copies", "[channel][workspace]") {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  agent::ManifestHistory history(2);
  std::map<std::int64_t, std::map<std::string, Entry>> model;  // every manifest, whole
  std::map<std::string, Entry> now;
  int checks = 0;
  for (std::int64_t id = 1; id <= 300; ++id) {
    // The since the host would name, checked before the push as the agent does.
    std::int64_t since = id - 1 - pick(3);
    bool remembered = history.remembers(since);
    CHECK(remembered == (since >= 1 && since >= id - 2));
    if (id == 1 || pick(10) == 0) {  // a whole listing
      now.clear();
      for (int i = 0; i < 40; ++i)
        if (pick(3)) now["f" + std::to_string(i)] = file("f" + std::to_string(i), pick(4));
      history.push_whole(id, as_vector(now));
    } else {  // a few paths changed, added or taken out
      std::map<std::string, Entry> changes;
      for (int k = pick(6); k > 0; --k) {
        std::string path = "f" + std::to_string(pick(40));
        changes[path] = pick(4) ? file(path, pick(6)) : agent::removal_record(path);
      }
      for (const auto& [path, c] : changes) {
        if (c.mode == protocol::channel::kModeRemoved) now.erase(path);
        else now[path] = c;
      }
      history.push_changes(id, as_vector(changes));
    }
    model[id] = now;
    CHECK(same(history.latest(), as_vector(now)));
    if (remembered) {
      auto records = history.records_since(since);
      REQUIRE(records);
      CHECK(same(*records, agent::manifest_delta(as_vector(model[since]), as_vector(now))));
      for (int i = 0; i < 40; ++i) {
        std::string path = "f" + std::to_string(i);
        const Entry* got = history.find(since, path);
        auto it = model[since].find(path);
        CHECK((got == nullptr) == (it == model[since].end()));
        if (got && it != model[since].end()) CHECK(operator_equal(*got, it->second));
      }
      checks++;
    }
  }
  CHECK(checks > 200);
  CHECK_FALSE(history.remembers(1));
  CHECK_FALSE(history.records_since(1));  // long gone: no answer rather than "nothing changed"
  CHECK(history.records_since(300)->empty());
}

TEST_CASE("workspace history: a change set that only replaces entries leaves the rest as it was", "[channel][workspace]") {
  agent::ManifestHistory history(2);
  history.push_whole(1, {file("a", 1), file("b", 1), file("c", 1)});
  history.push_changes(2, {file("b", 2), file("c", 1)});  // c unchanged: not a record
  auto records = history.records_since(1);
  REQUIRE(records);
  REQUIRE(records->size() == 1);
  CHECK(operator_equal((*records)[0], file("b", 2)));
  CHECK(operator_equal(*history.find(1, "b"), file("b", 1)));
  CHECK(operator_equal(*history.find(2, "b"), file("b", 2)));
  CHECK(history.find(2, "zzz") == nullptr);
  history.forget_all();
  CHECK(history.empty());
  CHECK_FALSE(history.remembers(2));
}
