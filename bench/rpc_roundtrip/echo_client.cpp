// EchoClient and ReplyLog; see echo_client.h.
#include "echo_client.h"

namespace lockroom::bench {

namespace {

// The workload: what an editor sends when it asks a sandbox to run a command, give or take.
// `n` makes every request's params distinct, so a reply cannot pass for another's.
constexpr std::string_view kParamsPrefix =
    R"({"sandboxId":"sbx-3f9c2a7e51d04b8c","argv":["git","status","--porcelain=v2","--branch"],)"
    R"("cwd":"/workspace","env":{"GIT_PAGER":"cat","LANG":"C.UTF-8","TERM":"dumb"},"timeoutMs":30000,"n":)";

std::string excerpt(std::string_view text) { return std::string(text.substr(0, 400)); }

json parse_reply(std::string_view text) {
  json reply = json::parse(text, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) throw PeerError("unparseable reply: " + excerpt(text));
  if (reply.contains("method")) throw PeerError("unexpected message from the server: " + excerpt(text));
  if (reply.value("jsonrpc", "") != "2.0") throw PeerError("reply without \"jsonrpc\":\"2.0\": " + excerpt(text));
  if (reply.contains("error")) throw PeerError("error reply: " + excerpt(text));
  return reply;
}

std::int64_t reply_id(const json& reply) {
  auto id = reply.find("id");
  if (id == reply.end() || !id->is_number_integer()) throw PeerError("reply without an integer id: " + reply.dump());
  return id->get<std::int64_t>();
}

}  // namespace

void ReplyLog::reserve(std::size_t replies, std::size_t bytes_each) {
  offsets_.reserve(replies);
  text_.reserve(replies * bytes_each);
}

std::string_view ReplyLog::at(std::size_t i) const {
  std::size_t end = i + 1 < offsets_.size() ? offsets_[i + 1] : text_.size();
  return std::string_view(text_).substr(offsets_[i], end - offsets_[i]);
}

void ReplyLog::clear() {
  text_.clear();
  offsets_.clear();
}

EchoClient::EchoClient(PeerProcess& peer) : peer_(peer), expected_(json::parse(std::string(kParamsPrefix) + "0}")) {}

std::int64_t EchoClient::queue_echo() {
  std::int64_t id = next_id_++;
  std::string n = std::to_string(id);
  body_.assign(R"({"jsonrpc":"2.0","id":)");
  body_ += n;
  body_ += R"(,"method":"lockroom/echo","params":)";
  body_ += kParamsPrefix;
  body_ += n;
  body_ += "}}";
  peer_.queue(body_);
  return id;
}

void EchoClient::check_echoes(const ReplyLog& log, std::int64_t first, std::size_t count, bool in_order) const {
  if (log.size() != count)
    throw PeerError(std::to_string(log.size()) + " replies collected for " + std::to_string(count) + " requests");
  json expected = expected_;
  std::vector<char> answered(count, 0);
  for (std::size_t i = 0; i < count; ++i) {
    std::string_view text = log.at(i);
    json reply = parse_reply(text);
    std::int64_t id = reply_id(reply);
    if (id < first || id >= first + static_cast<std::int64_t>(count))
      throw PeerError("reply with id " + std::to_string(id) + " answers no request in flight");
    if (in_order && id != first + static_cast<std::int64_t>(i))
      throw PeerError("reply with id " + std::to_string(id) + " came where " + std::to_string(first + static_cast<std::int64_t>(i)) +
                      " was the only request in flight");
    char& seen = answered[static_cast<std::size_t>(id - first)];
    if (seen) throw PeerError("second reply to request " + std::to_string(id));
    seen = 1;
    expected["n"] = id;
    auto result = reply.find("result");
    if (result == reply.end() || *result != expected)
      throw PeerError("echo " + std::to_string(id) + " came back different: " + excerpt(text));
  }
}

json EchoClient::call(const std::string& method, const json& params) {
  std::int64_t id = next_id_++;
  json request{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) request["params"] = params;
  peer_.queue(request.dump());
  peer_.flush();
  json reply = parse_reply(peer_.wait_message());
  if (reply_id(reply) != id) throw PeerError(method + ": reply has the wrong id: " + reply.dump());
  if (!reply.contains("result")) throw PeerError(method + " failed: " + reply.dump());
  return reply["result"];
}

void EchoClient::notify(const std::string& method, const json& params) {
  json msg{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) msg["params"] = params;
  peer_.queue(msg.dump());
  peer_.flush();
}

}  // namespace lockroom::bench
