// run_blocking(): run a blocking function on libuv's thread pool and get its value back on the
// loop thread. For file-system and libgit2 work (snapshots, packs) that must not stall the loop.
// The work function must not touch loop-thread state; `done` runs on the loop thread (also when
// the work threw: then with the exception's text as a kInternal error, never across the pool).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include <uv.h>

#include "server/common/result.h"

namespace lockroom {

template <typename T>
void run_blocking(uv_loop_t* loop, std::function<Result<T>()> work, std::function<void(Result<T>)> done) {
  struct Job {
    uv_work_t req{};
    std::function<Result<T>()> work;
    std::function<void(Result<T>)> done;
    std::optional<Result<T>> result;
  };
  auto* job = new Job{{}, std::move(work), std::move(done), std::nullopt};
  job->req.data = job;
  int rc = uv_queue_work(
      loop, &job->req,
      [](uv_work_t* req) {
        auto* j = static_cast<Job*>(req->data);
        try {
          j->result.emplace(j->work());
        } catch (const std::exception& e) {
          j->result.emplace(make_error(ErrorCode::kInternal, e.what()));
        } catch (...) {
          j->result.emplace(make_error(ErrorCode::kInternal, "unknown exception in background work"));
        }
      },
      [](uv_work_t* req, int status) {
        std::unique_ptr<Job> j(static_cast<Job*>(req->data));
        if (!j->result) j->result.emplace(make_error(ErrorCode::kCancelled, "background work was cancelled"));
        j->done(std::move(*j->result));
      });
  if (rc != 0) {
    std::unique_ptr<Job> j(job);
    j->done(make_error(ErrorCode::kInternal, std::string("cannot queue background work: ") + uv_strerror(rc)));
  }
}

}  // namespace lockroom
