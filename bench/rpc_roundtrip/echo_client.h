// EchoClient: the benchmark's side of the conversation with one server (bench/rpc_roundtrip).
//
// Builds the `lockroom/echo` requests of the workload and the few lifecycle calls (initialize,
// shutdown), and checks replies. While a repetition is being timed the driver only frames,
// sends and collects replies (ReplyLog, one copy of each reply's text); check_echoes() parses
// and checks every one of them after the clock has stopped, so the driver's own JSON parsing is
// not part of the round trips it measures, for either server. Single-threaded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "peer.h"

namespace lockroom::bench {

using json = nlohmann::json;

// Reply texts of one repetition, in arrival order, in one buffer.
class ReplyLog {
 public:
  void reserve(std::size_t replies, std::size_t bytes_each);
  void add(std::string_view text) {
    offsets_.push_back(text_.size());
    text_.append(text);
  }
  std::size_t size() const { return offsets_.size(); }
  std::string_view at(std::size_t i) const;
  void clear();

 private:
  std::string text_;
  std::vector<std::size_t> offsets_;
};

class EchoClient {
 public:
  explicit EchoClient(PeerProcess& peer);

  // Queues `lockroom/echo` with the next id (the id is also the params' `n`); returns the id.
  std::int64_t queue_echo();
  std::int64_t next_id() const { return next_id_; }

  // Checks that `log` holds exactly one reply to each echo with an id in [first, first + count):
  // no error, `result` equal to the params sent. With `in_order`, reply i must answer first + i.
  // Throws PeerError naming the first bad reply.
  void check_echoes(const ReplyLog& log, std::int64_t first, std::size_t count, bool in_order) const;

  // Sends a request, waits for its reply, returns the result (throws on an error reply).
  json call(const std::string& method, const json& params);
  void notify(const std::string& method, const json& params);

 private:
  PeerProcess& peer_;
  json expected_;  // the params of echo #0; check_echoes sets `n`
  std::string body_;
  std::int64_t next_id_ = 1;
};

}  // namespace lockroom::bench
