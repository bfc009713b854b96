// AgentClient's workspace methods: import (pack stream + checkout), manifest and export, with
// every bound of a hostile guest checked here; see agent_client.h and protocol/channel.md.
#include "server/channel/agent_client.h"

#include <chrono>
#include <deque>

#include <spdlog/spdlog.h>

#include "server/channel/blob_digest.h"

namespace lockroom::channel {

namespace {

constexpr std::size_t kPackChunk = 256u << 10;
constexpr std::size_t kMaxReserve = 1u << 20;

Error stream_error(const std::string& what, const std::string& reason) {
  return make_error(ErrorCode::kUnavailable, what + ": " + (reason.empty() ? std::string("the transfer was aborted") : reason));
}

// The workspace's own error codes; everything else as for every method.
Error workspace_error(const char* method, const protocol::RpcError& error) {
  Error e = agent_error_to_result(method, error);
  if (error.code == wire::agent_error::kWorkspaceConflict) e.code = ErrorCode::kWrongState;
  if (error.code == wire::agent_error::kNotARepository) e.code = ErrorCode::kNotFound;
  return e;
}

// One workspace request: like AgentClient::request, with the workspace's error codes. A result
// that does not parse fails the channel (a lying agent).
template <typename T>
void workspace_call(GuestChannel& channel, std::weak_ptr<bool> alive, const char* method, const json& params, std::chrono::milliseconds timeout,
                    std::function<Result<T>(const json&)> parse, std::function<void(Result<T>)> done) {
  channel.call(method, params, timeout, [&channel, alive, method, parse = std::move(parse), done = std::move(done)](rpc::CallOutcome outcome) {
    if (alive.expired()) return;
    if (outcome.error) return done(workspace_error(method, *outcome.error));
    Result<T> parsed = parse(outcome.result);
    if (!parsed) {
      std::string why = std::string("malformed reply to ") + method + ": " + parsed.error().message;
      done(make_error(ErrorCode::kUnavailable, why));
      return channel.fail(why);
    }
    done(std::move(parsed));
  });
}

// Calls `done` once, whichever of reply, stream end, reset or channel failure comes first.
template <typename T>
struct Once {
  AgentClient::Done<T> done;
  bool finished = false;
  void operator()(Result<T> outcome) {
    if (finished) return;
    finished = true;
    done(std::move(outcome));
  }
};

}  // namespace

// ---- import

void AgentClient::import_workspace(const wire::WorkspaceCheckoutParams& checkout, std::string pack, std::int64_t max_pack_bytes,
                                   Done<wire::WorkspaceCheckoutResult> done) {
  std::vector<std::string> packs;
  packs.push_back(std::move(pack));
  import_workspace(checkout, std::move(packs), max_pack_bytes, std::move(done));
}

void AgentClient::import_workspace(const wire::WorkspaceCheckoutParams& checkout, std::vector<std::string> packs,
                                   std::int64_t max_pack_bytes, Done<wire::WorkspaceCheckoutResult> done) {
  std::int64_t size = 0;
  for (const auto& p : packs) size += static_cast<std::int64_t>(p.size());
  std::int64_t limit = std::min(max_pack_bytes, wire::kMaxPackBytes);
  if (size > limit)
    return done(make_error(ErrorCode::kLimitExceeded, "workspace.import: the packs for " + checkout.path + " are " + std::to_string(size) +
                                                          " bytes; the limit is " + std::to_string(limit)));
  auto finish = std::make_shared<Once<wire::WorkspaceCheckoutResult>>();
  finish->done = std::move(done);
  std::weak_ptr<bool> alive = alive_;
  auto started = std::chrono::steady_clock::now();
  std::size_t pack_count = packs.size();

  // After the agent has stored every object: check the commit out. The split is logged (debug)
  // for whoever wonders where a sync's time goes.
  auto check_out = [this, alive, checkout, finish, started, pack_count, size] {
    if (alive.expired()) return;
    auto stored = std::chrono::steady_clock::now();
    checked_out_.insert(checkout.path);  // its watch tells from now on (even before the answer)
    workspace_call<wire::WorkspaceCheckoutResult>(
        channel_, alive, wire::method::kWorkspaceCheckout, wire::to_json(checkout), timeouts_.files,
        [checkout](const json& j) -> Result<wire::WorkspaceCheckoutResult> {
          auto r = wire::parse_workspace_checkout_result(j);
          if (r && (r->commit != checkout.commit || r->branch != checkout.branch))
            return make_error(ErrorCode::kInvalidInput, "it reports commit " + r->commit + " on " + r->branch + ", not " + checkout.commit +
                                                            " on " + checkout.branch + " as asked");
          return r;
        },
        [finish, checkout, started, stored, pack_count, size](Result<wire::WorkspaceCheckoutResult> r) {
          using ms = std::chrono::duration<double, std::milli>;
          if (r)
            spdlog::debug("workspace timings: {} pack(s), {} bytes sent and stored in {:.1f} ms; {} in {:.1f} ms", pack_count, size,
                          ms(stored - started).count(), checkout.base ? "sync checkout" : "checkout",
                          ms(std::chrono::steady_clock::now() - stored).count());
          (*finish)(std::move(r));
        });
  };

  // One pack after the other (each its own workspace.import), then the checkout.
  auto queue = std::make_shared<std::deque<std::string>>(std::make_move_iterator(packs.begin()), std::make_move_iterator(packs.end()));
  auto next = std::make_shared<std::function<void()>>();
  std::string path = checkout.path;
  *next = [this, alive, queue, next, finish, check_out, path] {
    if (alive.expired() || finish->finished) return;
    if (queue->empty()) {
      auto last = check_out;  // a copy: clearing *next destroys this lambda and its captures
      *next = nullptr;        // breaks the self-reference
      return last();
    }
    std::string pack = std::move(queue->front());
    queue->pop_front();
    send_pack(path, std::move(pack), [alive, next, finish](Result<void> r) {
      if (alive.expired()) return;
      if (!r) return (*finish)(r.error());
      if (*next) (*next)();
    });
  };
  (*next)();
}

// workspace.import of one pack: the agent opens a stream, the host sends the pack and CLOSEs, the
// agent CLOSEs once every object is stored (or RESETs with the reason).
void AgentClient::send_pack(const std::string& path, std::string pack, Done<void> done) {
  auto finish = std::make_shared<Once<void>>();
  finish->done = std::move(done);
  auto data = std::make_shared<std::string>(std::move(pack));
  auto sent = std::make_shared<std::size_t>(0);
  std::weak_ptr<bool> alive = alive_;
  std::string what = "workspace.import into " + path;
  wire::WorkspaceImportParams params;
  params.path = path;
  params.size = static_cast<std::int64_t>(data->size());
  workspace_call<wire::WorkspaceImportResult>(
      channel_, alive, wire::method::kWorkspaceImport, wire::to_json(params), timeouts_.files, wire::parse_workspace_import_result,
      [this, alive, finish, data, sent, what](Result<wire::WorkspaceImportResult> opened) {
        if (!opened) return (*finish)(opened.error());
        std::uint32_t stream = opened->stream;
        auto feed = std::make_shared<std::function<void()>>();
        *feed = [this, alive, finish, data, sent, stream] {
          if (alive.expired() || finish->finished) return;
          while (*sent < data->size()) {
            std::size_t n = std::min(kPackChunk, data->size() - *sent);
            if (!channel_.write(stream, std::string_view(*data).substr(*sent, n))) return;  // resumed by on_writable
            *sent += n;
          }
          channel_.close_stream(stream);
        };
        StreamHandlers h;
        h.on_writable = [feed] { (*feed)(); };
        h.on_data = [this, alive, what](std::string_view) {
          if (!alive.expired()) channel_.fail("the agent sent data on the pack stream of " + what + ", which only the host writes");
        };
        h.on_end = [alive, finish, data, sent, what] {
          if (alive.expired()) return;
          if (*sent < data->size())
            return (*finish)(make_error(ErrorCode::kUnavailable, what + ": the agent ended the transfer after " + std::to_string(*sent) + " of " +
                                                                     std::to_string(data->size()) + " bytes"));
          data->clear();
          data->shrink_to_fit();
          (*finish)(Result<void>());
        };
        h.on_reset = [alive, finish, what](std::uint32_t, const std::string& reason) {
          if (!alive.expired()) (*finish)(stream_error(what, reason));
        };
        if (auto attached = channel_.attach(stream, std::move(h)); !attached) {
          std::string why = "malformed reply to workspace.import: " + attached.error().message;
          channel_.fail(why);
          return (*finish)(make_error(ErrorCode::kUnavailable, why));
        }
        (*feed)();
      });
}

// ---- manifest

void AgentClient::manifest(const wire::WorkspaceManifestParams& params, Done<WorkspaceManifest> done) {
  auto finish = std::make_shared<Once<WorkspaceManifest>>();
  finish->done = std::move(done);
  std::weak_ptr<bool> alive = alive_;
  wire::WorkspaceBounds bounds = params.bounds;
  std::optional<wire::InlineBounds> inline_content = params.inline_content;
  workspace_call<wire::WorkspaceManifestResult>(
      channel_, alive, wire::method::kWorkspaceManifest, wire::to_json(params), timeouts_.files,
      [bounds, inline_content, since = params.since](const json& j) -> Result<wire::WorkspaceManifestResult> {
        auto r = wire::parse_workspace_manifest_result(j, bounds, inline_content);
        // A partial answer is only for the manifest the host named.
        if (r && r->since && r->since != since)
          return make_error(ErrorCode::kInvalidInput, "it answers with changes since manifest " + std::to_string(*r->since) +
                                                          (since ? ", not " + std::to_string(*since) + " as asked" : ", which the host did not ask for"));
        return r;
      },
      [this, alive, finish, bounds, inline_content](Result<wire::WorkspaceManifestResult> listed) {
        if (!listed) return (*finish)(listed.error());
        // Inline content is checked against the ids as the host computes them.
        auto decoder =
            std::make_shared<wire::ManifestDecoder>(*listed, bounds, inline_content.value_or(wire::InlineBounds{}), BlobDigest::of);
        auto summary = std::make_shared<wire::WorkspaceManifestResult>(std::move(*listed));
        // A manifest that breaks a rule is a lying agent: the whole channel fails.
        auto lie = [this, finish](const Error& e) {
          std::string why = "workspace.manifest: " + e.message;
          (*finish)(make_error(ErrorCode::kUnavailable, why));
          channel_.fail(why);
        };
        auto complete = [finish, decoder, summary, lie] {
          auto entries = decoder->finish();
          if (!entries) return lie(entries.error());
          summary->data.clear();
          (*finish)(WorkspaceManifest{std::move(*summary), std::move(*entries), decoder->take_inlined()});
        };
        if (summary->stream == 0) {
          if (auto fed = decoder->feed(summary->data); !fed) return lie(fed.error());
          return complete();
        }
        StreamHandlers h;
        h.on_data = [alive, finish, decoder, lie](std::string_view bytes) {
          if (alive.expired() || finish->finished) return;
          if (auto fed = decoder->feed(bytes); !fed) lie(fed.error());
        };
        h.on_end = [alive, finish, complete] {
          if (!alive.expired() && !finish->finished) complete();
        };
        h.on_reset = [alive, finish](std::uint32_t, const std::string& reason) {
          if (!alive.expired()) (*finish)(stream_error("workspace.manifest", reason));
        };
        std::uint32_t stream = summary->stream;
        if (auto attached = channel_.attach(stream, std::move(h)); !attached) return lie(attached.error());
        channel_.close_stream(stream);  // the host sends nothing on it
      });
}

// ---- export

namespace {

// The record being received, and the checks of its trailer.
struct ExportState {
  ExportedFile file;
  BlobDigest digest;
};

}  // namespace

void AgentClient::export_files(const wire::WorkspaceExportParams& params, std::function<void(ExportedFile)> on_file, Done<std::int64_t> done) {
  if (params.entries.size() > wire::kMaxExportEntries)
    return done(make_error(ErrorCode::kLimitExceeded, "workspace.export: " + std::to_string(params.entries.size()) + " entries in one request; the limit is " +
                                                          std::to_string(wire::kMaxExportEntries)));
  auto finish = std::make_shared<Once<std::int64_t>>();
  finish->done = std::move(done);
  auto sink = std::make_shared<std::function<void(ExportedFile)>>(std::move(on_file));
  std::weak_ptr<bool> alive = alive_;
  std::int64_t requested = static_cast<std::int64_t>(params.entries.size());
  workspace_call<wire::WorkspaceExportResult>(
      channel_, alive, wire::method::kWorkspaceExport, wire::to_json(params), timeouts_.files,
      [requested](const json& j) { return wire::parse_workspace_export_result(j, requested); },
      [this, alive, finish, sink, params](Result<wire::WorkspaceExportResult> opened) {
        if (!opened) return (*finish)(opened.error());
        auto lie = [this, finish](const Error& e) {
          std::string why = "workspace.export: " + e.message;
          (*finish)(make_error(ErrorCode::kUnavailable, why));
          channel_.fail(why);
        };
        auto state = std::make_shared<ExportState>();
        wire::ExportDecoder::Sink records;
        records.on_header = [state](std::int64_t entry, std::uint32_t mode, std::uint64_t size) {
          state->file = ExportedFile{entry, mode, {}, {}};
          state->file.content.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(size, kMaxReserve)));
          state->digest.begin(size);
        };
        records.on_body = [state](std::string_view bytes) {
          state->file.content.append(bytes);
          state->digest.update(bytes);
        };
        records.on_trailer = [alive, state, sink](const std::string& claimed) -> Result<void> {
          std::string id = state->file.mode == 0 ? std::string(40, '0') : state->digest.hex();
          if (claimed != id)
            return make_error(ErrorCode::kInvalidInput, "claims blob id " + claimed + " for bytes whose id is " + id);
          state->file.id = state->file.mode == 0 ? std::string() : id;
          if (!alive.expired() && *sink) (*sink)(std::move(state->file));
          state->file = ExportedFile{};
          return {};
        };
        auto decoder = std::make_shared<wire::ExportDecoder>(params.entries, params.bounds, std::move(records));
        StreamHandlers h;
        h.on_data = [alive, finish, decoder, lie](std::string_view bytes) {
          if (alive.expired() || finish->finished) return;
          if (auto fed = decoder->feed(bytes); !fed) lie(fed.error());
        };
        h.on_end = [alive, finish, decoder, lie] {
          if (alive.expired() || finish->finished) return;
          if (auto ended = decoder->finish(); !ended) return lie(ended.error());
          (*finish)(static_cast<std::int64_t>(decoder->records()));
        };
        h.on_reset = [alive, finish](std::uint32_t code, const std::string& reason) {
          if (alive.expired()) return;
          Error e = stream_error("workspace.export", reason);
          if (code == wire::reset_code::kTooMuch) e.code = ErrorCode::kLimitExceeded;  // a file grew since the manifest
          (*finish)(std::move(e));
        };
        std::uint32_t stream = opened->stream;
        if (auto attached = channel_.attach(stream, std::move(h)); !attached) return lie(attached.error());
        channel_.close_stream(stream);
      });
}

}  // namespace lockroom::channel
