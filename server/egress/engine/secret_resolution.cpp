// resolve_secret_values_async; see secret_resolution.h.
#include "server/egress/engine/secret_resolution.h"

#include <memory>
#include <optional>

#include "server/egress/policy/secret_source.h"

namespace lockroom::egress {

namespace {

struct ResolveWork {
  uv_work_t req;
  std::vector<Secret> secrets;
  std::function<void(Result<SecretValues>)> done;
  std::optional<Result<SecretValues>> result;
};

}  // namespace

void resolve_secret_values_async(uv_loop_t* loop, std::vector<Secret> secrets,
                                 std::function<void(Result<SecretValues>)> done) {
  auto work = std::make_unique<ResolveWork>();
  work->req.data = work.get();
  work->secrets = std::move(secrets);
  work->done = std::move(done);
  int rc = uv_queue_work(
      loop, &work->req,
      [](uv_work_t* req) {
        auto* self = static_cast<ResolveWork*>(req->data);
        self->result.emplace(resolve_secret_values(self->secrets));
      },
      [](uv_work_t* req, int status) {
        std::unique_ptr<ResolveWork> self(static_cast<ResolveWork*>(req->data));
        if (status < 0 || !self->result)
          return self->done(make_error(ErrorCode::kCancelled, "resolving the secrets' values was cancelled"));
        self->done(std::move(*self->result));
      });
  if (rc < 0) return work->done(make_error(ErrorCode::kInternal, std::string("cannot resolve the secrets: ") + uv_strerror(rc)));
  work.release();  // freed in the after-work callback
}

}  // namespace lockroom::egress
