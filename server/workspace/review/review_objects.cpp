// The in-memory object backend for reviews (see review_objects.h).
#include "server/workspace/review/review_objects.h"

#include <git2/sys/odb_backend.h>

#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "server/workspace/git_util.h"

namespace lockroom::workspace::review {

namespace {

constexpr int kPriority = 999;  // above libgit2's pack (2) and loose (1) backends

struct OidHash {
  std::size_t operator()(const git_oid& id) const {
    std::size_t h;
    std::memcpy(&h, id.id, sizeof h);
    return h;
  }
};
struct OidEqual {
  bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_equal(&a, &b) != 0; }
};

struct Object {
  git_object_t type;
  std::string data;
};

}  // namespace

struct ReviewObjects::State {
  std::uint64_t budget;
  std::uint64_t max_object;
  mutable std::shared_mutex mutex;
  std::unordered_map<git_oid, Object, OidHash, OidEqual> objects;
  std::unordered_set<git_oid, OidHash, OidEqual> pinned;
  std::uint64_t bytes = 0;
};

namespace {

// The backend libgit2 sees; `parent` first so a git_odb_backend* is one of these.
struct Backend {
  git_odb_backend parent;
  ReviewObjects::State state;
};

ReviewObjects::State& state_of(git_odb_backend* b) { return reinterpret_cast<Backend*>(b)->state; }

int read_object(void** out, std::size_t* len, git_object_t* type, git_odb_backend* b, const git_oid* id) {
  auto& s = state_of(b);
  std::shared_lock lock(s.mutex);
  auto it = s.objects.find(*id);
  if (it == s.objects.end()) return GIT_ENOTFOUND;
  const std::string& data = it->second.data;
  void* copy = git_odb_backend_data_alloc(b, data.size() ? data.size() : 1);
  if (!copy) return GIT_ERROR;
  if (!data.empty()) std::memcpy(copy, data.data(), data.size());
  *out = copy;
  *len = data.size();
  *type = it->second.type;
  return 0;
}

int read_header(std::size_t* len, git_object_t* type, git_odb_backend* b, const git_oid* id) {
  auto& s = state_of(b);
  std::shared_lock lock(s.mutex);
  auto it = s.objects.find(*id);
  if (it == s.objects.end()) return GIT_ENOTFOUND;
  *len = it->second.data.size();
  *type = it->second.type;
  return 0;
}

int exists(git_odb_backend* b, const git_oid* id) {
  auto& s = state_of(b);
  std::shared_lock lock(s.mutex);
  return s.objects.count(*id) ? 1 : 0;
}

bool fits(const ReviewObjects::State& s, std::uint64_t len) { return len <= s.max_object && s.bytes + len <= s.budget; }

void keep(ReviewObjects::State& s, const git_oid& id, std::string data, git_object_t type) {
  if (s.objects.count(id)) return;
  s.bytes += data.size();
  s.objects.emplace(id, Object{type, std::move(data)});
}

// Declining (a negative result) makes libgit2 offer the object to the next backend: the loose one.
int write_object(git_odb_backend* b, const git_oid* id, const void* data, std::size_t len, git_object_t type) {
  auto& s = state_of(b);
  std::unique_lock lock(s.mutex);
  if (!s.objects.count(*id) && !fits(s, len)) return GIT_ERROR;
  keep(s, *id, std::string(static_cast<const char*>(data), len), type);
  return 0;
}

// Streamed writes (git_blob_create_from_buffer uses one): declined at open when the declared size
// does not fit, so libgit2 opens the loose backend's stream instead; collected, then kept.
struct WriteStream {
  git_odb_stream parent;
  git_object_t type;
  std::string data;
};

int stream_write(git_odb_stream* stream, const char* buffer, std::size_t len) {
  reinterpret_cast<WriteStream*>(stream)->data.append(buffer, len);
  return 0;
}

int stream_finalize(git_odb_stream* stream, const git_oid* id) {
  auto* w = reinterpret_cast<WriteStream*>(stream);
  auto& s = state_of(stream->backend);
  std::unique_lock lock(s.mutex);
  keep(s, *id, std::move(w->data), w->type);  // it fitted at open; a concurrent writer may have taken a little since
  return 0;
}

void stream_free(git_odb_stream* stream) { delete reinterpret_cast<WriteStream*>(stream); }

int open_write_stream(git_odb_stream** out, git_odb_backend* b, git_object_size_t size, git_object_t type) {
  auto& s = state_of(b);
  {
    std::shared_lock lock(s.mutex);
    if (!fits(s, size)) return GIT_ERROR;
  }
  auto* w = new WriteStream{};
  w->parent.backend = b;
  w->parent.mode = GIT_STREAM_WRONLY;
  w->parent.write = stream_write;
  w->parent.finalize_write = stream_finalize;
  w->parent.free = stream_free;
  w->type = type;
  w->data.reserve(static_cast<std::size_t>(size));
  *out = &w->parent;
  return 0;
}

void free_backend(git_odb_backend* b) { delete reinterpret_cast<Backend*>(b); }

}  // namespace

Result<ReviewObjects> ReviewObjects::attach(git_repository* store, std::uint64_t budget, std::uint64_t max_object) {
  ensure_libgit2();
  git_odb* raw = nullptr;
  if (int rc = git_repository_odb(&raw, store); rc < 0)
    return make_error(ErrorCode::kInternal, git_error_text("cannot open lockroom's object store", rc));
  OdbPtr odb(raw);
  auto* backend = new Backend{};
  git_odb_init_backend(&backend->parent, GIT_ODB_BACKEND_VERSION);
  backend->parent.read = read_object;
  backend->parent.read_header = read_header;
  backend->parent.exists = exists;
  backend->parent.write = write_object;
  backend->parent.writestream = open_write_stream;
  backend->parent.free = free_backend;
  backend->state.budget = budget;
  backend->state.max_object = max_object;
  if (int rc = git_odb_add_backend(odb.get(), &backend->parent, kPriority); rc < 0) {
    delete backend;
    return make_error(ErrorCode::kInternal, git_error_text("cannot keep review objects in memory", rc));
  }
  return ReviewObjects(&backend->state);
}

bool ReviewObjects::keep_verified_blob(const git_oid& id, std::string& content) {
  if (!state_) return false;
  std::unique_lock lock(state_->mutex);
  if (!state_->objects.count(id) && !fits(*state_, content.size())) return false;
  keep(*state_, id, std::move(content), GIT_OBJECT_BLOB);
  return true;
}

std::uint64_t ReviewObjects::bytes() const {
  if (!state_) return 0;
  std::shared_lock lock(state_->mutex);
  return state_->bytes;
}

std::size_t ReviewObjects::count() const {
  if (!state_) return 0;
  std::shared_lock lock(state_->mutex);
  return state_->objects.size();
}

void ReviewObjects::clear() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  for (auto it = state_->objects.begin(); it != state_->objects.end();) {
    if (state_->pinned.count(it->first)) {
      ++it;
      continue;
    }
    state_->bytes -= it->second.data.size();
    it = state_->objects.erase(it);
  }
}

void ReviewObjects::pin(const git_oid& id) {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->pinned.insert(id);
}

void ReviewObjects::unpin_all() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->pinned.clear();
}

}  // namespace lockroom::workspace::review
