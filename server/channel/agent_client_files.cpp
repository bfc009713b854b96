// AgentClient's file methods: inline read/write/stat/list, and streamed download/upload.
#include "server/channel/agent_client.h"
#include "server/channel/agent_client_impl.h"

namespace lockroom::channel {

namespace {
constexpr std::size_t kUploadChunk = 256u << 10;

Error stream_error(const std::string& what, const std::string& reason) {
  return make_error(ErrorCode::kUnavailable, what + ": " + (reason.empty() ? std::string("the transfer was aborted") : reason));
}
}  // namespace

void AgentClient::read_file(const wire::FileReadParams& params, Done<wire::FileReadResult> done) {
  wire::FileReadParams inline_params = params;
  inline_params.stream = false;
  request<wire::FileReadResult>(wire::method::kFileRead, wire::to_json(inline_params), timeouts_.files,
                                [](const json& j) { return wire::parse_file_read_result(j, false); }, std::move(done));
}

void AgentClient::write_file(const wire::FileWriteParams& params, Done<wire::FileWriteResult> done) {
  if (params.data.size() > wire::kMaxInlineFile) {
    return done(make_error(ErrorCode::kLimitExceeded, "file.write: " + std::to_string(params.data.size()) + " bytes is more than the inline limit of " +
                                                          std::to_string(wire::kMaxInlineFile) + "; use upload()"));
  }
  wire::FileWriteParams inline_params = params;
  inline_params.stream = false;
  request<wire::FileWriteResult>(wire::method::kFileWrite, wire::to_json(inline_params), timeouts_.files,
                                 [](const json& j) { return wire::parse_file_write_result(j, false); }, std::move(done));
}

void AgentClient::stat(const std::string& path, bool follow, Done<wire::FileStat> done) {
  request<wire::FileStat>(wire::method::kFileStat, wire::to_json(wire::FileStatParams{path, follow}), timeouts_.files,
                          wire::parse_file_stat, std::move(done));
}

void AgentClient::list(const std::string& path, std::int64_t limit, Done<wire::FileListResult> done) {
  request<wire::FileListResult>(wire::method::kFileList, wire::to_json(wire::FileListParams{path, limit}), timeouts_.files,
                                wire::parse_file_list_result, std::move(done));
}

void AgentClient::download(const std::string& path, std::function<void(std::string_view)> on_data, Done<std::int64_t> done) {
  wire::FileReadParams params;
  params.path = path;
  params.stream = true;
  auto finish = std::make_shared<Done<std::int64_t>>(std::move(done));
  auto sink = std::make_shared<std::function<void(std::string_view)>>(std::move(on_data));
  std::weak_ptr<bool> alive = alive_;
  request<wire::FileReadResult>(
      wire::method::kFileRead, wire::to_json(params), timeouts_.files, [](const json& j) { return wire::parse_file_read_result(j, true); },
      [this, alive, path, finish, sink](Result<wire::FileReadResult> opened) {
        if (!opened) return (*finish)(opened.error());
        auto count = std::make_shared<std::int64_t>(0);
        StreamHandlers h;
        h.on_data = [alive, sink, count](std::string_view bytes) {
          if (alive.expired()) return;
          *count += static_cast<std::int64_t>(bytes.size());
          if (*sink) (*sink)(bytes);
        };
        h.on_end = [alive, finish, count] {
          if (!alive.expired()) (*finish)(*count);
        };
        h.on_reset = [alive, finish, path](std::uint32_t, const std::string& reason) {
          if (!alive.expired()) (*finish)(stream_error("download of " + path, reason));
        };
        std::uint32_t stream = opened->stream;
        if (auto attached = channel_.attach(stream, std::move(h)); !attached) {
          std::string why = "malformed reply to file.read: " + attached.error().message;
          channel_.fail(why);
          return (*finish)(make_error(ErrorCode::kUnavailable, why));
        }
        channel_.close_stream(stream);  // the host sends nothing on a download
      });
}

// The state of one upload: the content and how far it has gone.
struct AgentClient::Upload {
  std::string content;
  std::size_t sent = 0;
  std::uint32_t stream = 0;
  Done<std::int64_t> done;
  bool finished = false;
};

void AgentClient::upload(const std::string& path, std::string content, std::int64_t mode, Done<std::int64_t> done) {
  wire::FileWriteParams params;
  params.path = path;
  params.mode = mode;
  params.stream = true;
  auto up = std::make_shared<Upload>();
  up->content = std::move(content);
  up->done = std::move(done);
  std::weak_ptr<bool> alive = alive_;
  auto finish = [up](Result<std::int64_t> outcome) {
    if (up->finished) return;
    up->finished = true;
    up->done(std::move(outcome));
  };
  request<wire::FileWriteResult>(
      wire::method::kFileWrite, wire::to_json(params), timeouts_.files, [](const json& j) { return wire::parse_file_write_result(j, true); },
      [this, alive, path, up, finish](Result<wire::FileWriteResult> opened) {
        if (!opened) return finish(opened.error());
        up->stream = opened->stream;
        // Feeds the stream as far as the queue allows; resumed by on_writable.
        auto feed = std::make_shared<std::function<void()>>();
        *feed = [this, alive, up] {
          if (alive.expired() || up->finished) return;
          while (up->sent < up->content.size()) {
            std::size_t n = std::min(kUploadChunk, up->content.size() - up->sent);
            if (!channel_.write(up->stream, std::string_view(up->content).substr(up->sent, n))) return;  // wait for on_writable
            up->sent += n;
          }
          channel_.close_stream(up->stream);
        };
        StreamHandlers h;
        h.on_writable = [feed] { (*feed)(); };
        h.on_end = [alive, up, finish, path] {
          if (alive.expired()) return;
          if (up->sent < up->content.size())
            return finish(make_error(ErrorCode::kUnavailable, "upload to " + path + ": the agent ended the transfer after " +
                                                                  std::to_string(up->sent) + " of " + std::to_string(up->content.size()) + " bytes"));
          finish(static_cast<std::int64_t>(up->content.size()));
        };
        h.on_reset = [alive, path, finish](std::uint32_t, const std::string& reason) {
          if (!alive.expired()) finish(stream_error("upload to " + path, reason));
        };
        if (auto attached = channel_.attach(up->stream, std::move(h)); !attached) {
          std::string why = "malformed reply to file.write: " + attached.error().message;
          channel_.fail(why);
          return finish(make_error(ErrorCode::kUnavailable, why));
        }
        (*feed)();
      });
}

}  // namespace lockroom::channel
