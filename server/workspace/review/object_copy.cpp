// Copying missing objects of a tree between repositories (see object_copy.h).
#include "server/workspace/review/object_copy.h"

#include "server/workspace/review/review_git.h"

namespace lockroom::workspace::review {
namespace {

class Copier {
 public:
  Copier(git_repository* from, git_odb* from_odb, git_odb* to_odb) : from_(from), from_odb_(from_odb), to_odb_(to_odb) {}

  Result<void> tree(const git_oid& id, int depth) {
    if (git_odb_exists(to_odb_, &id)) return {};
    if (depth > 4096) return make_error(ErrorCode::kInvalidInput, "tree " + oid_hex(id) + " is nested too deeply");
    git_tree* raw = nullptr;
    if (int rc = git_tree_lookup(&raw, from_, &id); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot read tree " + oid_hex(id), rc));
    }
    TreePtr owned(raw);
    std::size_t count = git_tree_entrycount(owned.get());
    for (std::size_t i = 0; i < count; ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(owned.get(), i);
      const git_oid* entry_id = git_tree_entry_id(entry);
      switch (git_tree_entry_type(entry)) {
        case GIT_OBJECT_TREE:
          if (auto done = tree(*entry_id, depth + 1); !done) return done;
          break;
        case GIT_OBJECT_BLOB:
          if (auto done = object(*entry_id); !done) return done;
          break;
        default: break;  // a submodule commit lives in another repository
      }
    }
    return object(id);
  }

  std::size_t copied() const { return copied_; }

 private:
  Result<void> object(const git_oid& id) {
    if (git_odb_exists(to_odb_, &id)) return {};
    git_odb_object* raw = nullptr;
    if (int rc = git_odb_read(&raw, from_odb_, &id); rc < 0) {
      return make_error(ErrorCode::kInternal, git_error_text("cannot read object " + oid_hex(id), rc));
    }
    OdbObjectPtr owned(raw);
    git_oid written;
    if (int rc = git_odb_write(&written, to_odb_, git_odb_object_data(owned.get()), git_odb_object_size(owned.get()),
                               git_odb_object_type(owned.get()));
        rc < 0) {
      return make_error(ErrorCode::kUnavailable, git_error_text("cannot write object " + oid_hex(id), rc));
    }
    ++copied_;
    return {};
  }

  git_repository* from_;
  git_odb* from_odb_;
  git_odb* to_odb_;
  std::size_t copied_ = 0;
};

}  // namespace

Result<std::size_t> copy_tree_objects(git_repository* from, git_repository* to, const git_oid& tree) {
  git_odb* raw_from = nullptr;
  git_odb* raw_to = nullptr;
  if (int rc = git_repository_odb(&raw_from, from); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open an object database", rc));
  }
  OdbPtr from_odb(raw_from);
  if (int rc = git_repository_odb(&raw_to, to); rc < 0) {
    return make_error(ErrorCode::kInternal, git_error_text("cannot open an object database", rc));
  }
  OdbPtr to_odb(raw_to);
  Copier copier(from, from_odb.get(), to_odb.get());
  if (auto done = copier.tree(tree, 0); !done) return done.error();
  return copier.copied();
}

}  // namespace lockroom::workspace::review
