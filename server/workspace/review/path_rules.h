// Which workspace-relative paths and symlink targets lockroom accepts from a guest. Pure: no I/O.
//
// Called by manifest validation (every path the guest reports), by apply (every path before it is
// touched, again, as defence in depth) and by apply when it considers creating a symlink.
// The rules follow git's own verify_path (including the NTFS and HFS spellings of ".git").
// The snapshot leaves out host files whose names these rules refuse (workspace_scan.h), so a
// well-behaved guest only ever lists names that pass.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lockroom::workspace::review {

inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxComponentBytes = 255;

// Why `path` is not an acceptable workspace-relative file path, or nullopt when it is.
// Refused: empty; absolute; longer than kMaxPathBytes; a NUL or control character (a name shown
// raw on a terminal could rewrite what the user sees: "evil.sh\rREADME.md"); not valid UTF-8 (the
// editor protocol's JSON strings cannot carry it); an empty, "." or ".." component; a component
// longer than kMaxComponentBytes; a component that is ".git" in any spelling a filesystem may
// treat as ".git" (see is_dotgit). A backslash is an ordinary byte on the hosts lockroom runs on
// (git refuses it only on Windows) and is accepted; printable() still escapes it.
std::optional<std::string> path_problem(std::string_view path);

// True when a filesystem could treat `component` as ".git": any case; followed by spaces or dots
// (NTFS drops them) or by ":stream" (an NTFS alternate data stream); the NTFS short name "git~1";
// with HFS+'s ignorable Unicode code points (zero-width joiners and the like) anywhere.
bool is_dotgit(std::string_view component);

// Why a symlink at `link_path` with target `target` must not be created in the workspace, or
// nullopt when it may. A target may only be relative, may only start with ".." components (no
// ".." after a normal component, so no chain of symlinks can climb out), may not climb above the
// workspace root from the link's directory, and may not name a ".git" component.
std::optional<std::string> symlink_target_problem(std::string_view link_path, std::string_view target);

// `text` made safe to show in a message: control characters, backslashes and bytes that are not
// UTF-8 become \xNN, and it is cut (with "...") after `max_bytes`.
std::string printable(std::string_view text, std::size_t max_bytes = 200);

}  // namespace lockroom::workspace::review
