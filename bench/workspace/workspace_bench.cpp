// bench/workspace: what a user feels when lockroom copies a workspace into a sandbox and hands
// the agent's changes back, measured through the SandboxManager with the real lockroom-agent on a
// real source tree (default: a copy of /usr/include committed into a temporary git repository),
// against peers in the same run.
//
//   lockroom-bench-workspace [--runs N] [--first-runs N] [--source DIR]
//
// 1. first sync: sandbox create with the workspace -> checked out in the guest, with a cold
//    store (its directory deleted first) and a warm one; split into snapshot, restore, import.
//    Peers: `tar c` of the same files streamed through the same channel into `tar x` in a guest
//    (process stdin), timed to tar's exit; `git clone --local` on the host. Also a plain create
//    (no workspace), and once, the import's steps one by one in a guest (pack transfer through
//    stdin, git index-pack, git read-tree -m -u, and the small git processes a checkout or sync
//    runs around them) to see what dominates.
// 2. incremental sync: 3 files changed on the host, SandboxWorkspace::sync, N runs.
// 3. review: a guest process changes 100 files; refresh, then list() and diff_all(); N runs, with
//    the refresh's own steps (ChangeSet::steps) for the split and a whole manifest alone. After
//    the first refresh the manifest is partial and carries the changed files' content inline, so
//    the export round trip runs only for files it could not carry (the table says how many).
//    Per run also the editor's way: `changes/list` then `changes/diff {refresh: false}` as
//    JSON-RPC text through the server's own dispatcher and handlers, to the serialized answers.
// Prints Markdown tables (medians, min, max, ratios) for docs/benchmarks/workspace.md.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <uv.h>

#include "bench/common/bench_stats.h"
#include "bench/workspace/editor_requests.h"
#include "bench/workspace/sandbox_driver.h"
#include "bench/workspace/source_tree.h"
#include "server/common/paths.h"
#include "server/core/sandbox_manager.h"
#include "server/vm/accel.h"
#include "server/workspace/review/blob_store.h"
#include "server/workspace/snapshot/snapshot_store.h"
#include "server/workspace/snapshot/transfer.h"

using namespace lockroom;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
namespace snap = lockroom::workspace::snapshot;

using bench::Driver;
using protocol::json;
using bench::ms;

namespace {

// The store a workspace's snapshots go to (deleted for a cold create).
fs::path store_dir_of(const fs::path& workspace) {
  return default_paths().cache / "workspaces" / snap::workspace_store_key(fs::canonical(workspace).string());
}

// A shell script that appends `line` to each of `paths` in /workspace.
std::string edit_script(const std::vector<std::string>& paths, const std::string& line) {
  std::string s = "cd /workspace && for f in";
  for (const auto& p : paths) s += " " + bench::shell_quote(p);
  return s + "; do echo " + bench::shell_quote(line) + " >> \"$f\"; done";
}

struct FirstSync {
  std::vector<double> total, restore, snapshot, import, pack, guest_import, workspace_part;
  std::uint64_t objects = 0, pack_bytes = 0;
  void add(const core::CreateResult& r) {
    total.push_back(r.timings.total_ms);
    restore.push_back(r.timings.restore_ms);
    snapshot.push_back(r.timings.snapshot_ms);
    import.push_back(r.timings.import_ms);
    workspace_part.push_back(r.timings.total_ms - r.timings.restore_ms);
    if (r.workspace) {
      pack.push_back(r.workspace->transfer.pack_ms);
      guest_import.push_back(r.workspace->transfer.import_ms);
      objects = r.workspace->transfer.objects;
      pack_bytes = r.workspace->transfer.pack_bytes;
    }
  }
};

void row(const std::string& label, const std::vector<double>& v) { bench::row(label.c_str(), bench::stats(v)); }
double median(const std::vector<double>& v) { return bench::stats(v).median; }
double mib(std::uint64_t bytes) { return bytes / 1048576.0; }

// What the benchmark measured, for the tables.
struct Results {
  FirstSync cold, warm;
  std::vector<double> plain, tar, clone;
  std::uint64_t tar_bytes = 0;
  double step_pack = 0, step_send = 0, step_index = 0, step_read = 0;
  std::uint64_t step_pack_bytes = 0;
  std::vector<std::pair<std::string, double>> git_steps;  // the checkout's small git steps, median of 3
  std::vector<double> sync_total, sync_pack, sync_guest, sync_snapshot, sync_scan, sync_store, sync_send, sync_checkout;
  std::uint64_t sync_objects = 0, sync_bytes = 0;
  std::vector<double> manifest, refresh, compute, list, diff_all, refresh_list, refresh_diff, validate, missing, tree, fetch_rest;
  std::vector<double> first_refresh, step_manifest, step_agent, store_inlined, edit, editor_list, editor_diff, editor_review;
  std::size_t editor_diff_bytes = 0;
  core::RefreshSteps first_steps;
  std::vector<double> new_file, new_file_agent;
  std::uint64_t review_files = 0, review_blobs = 0;
  std::int64_t review_inlined = 0, review_exported = 0;
  bool review_partial = false;
  std::int64_t review_records = 0;
};

// The last "workspace timings" line AgentClient logged (debug): the agent's send + store of the
// packs and its checkout, as the host saw them. Zeros when there is none.
std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> g_log;
std::pair<double, double> last_import_split() {
  auto lines = g_log->last_formatted(64);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    auto at = it->find("sent and stored in ");
    double stored = 0, checkout = 0;
    if (at != std::string::npos && std::sscanf(it->c_str() + at, "sent and stored in %lf ms; %*s %*s in %lf ms", &stored, &checkout) == 2)
      return {stored, checkout};
    if (at != std::string::npos && std::sscanf(it->c_str() + at, "sent and stored in %lf ms; checkout in %lf ms", &stored, &checkout) == 2)
      return {stored, checkout};
  }
  return {0, 0};
}

// 1. First sync, with its peers interleaved run by run (the machine's load moves). Returns the
// last warm sandbox (sync and review run in it) and its snapshot's commit.
std::pair<std::string, std::string> first_sync(Driver& b, const bench::SourceRepo& repo, const core::WorkspaceRequest& request,
                                               const fs::path& store_dir, int runs, Results& out) {
  std::string kept, commit;
  for (int i = 0; i < runs; ++i) {
    std::cerr << "first sync " << i + 1 << "/" << runs << ": plain create, cold store, warm store, tar, git clone\n";
    b.wait_templates_idle();  // a workspace template the last round started, off the clock
    auto p = b.create();
    out.plain.push_back(p.timings.total_ms);
    b.destroy(p.sandbox_id);

    std::error_code ec;
    fs::remove_all(store_dir, ec);
    auto c = b.create(request);
    out.cold.add(c);
    b.destroy(c.sandbox_id);

    b.wait_templates_idle();
    auto w = b.create(request);
    out.warm.add(w);
    if (!kept.empty()) b.destroy(kept);
    kept = w.sandbox_id;
    commit = w.workspace->snapshot.commit_id;

    // tar c on the host | the same channel (a guest process's stdin) | tar x in the guest.
    b.wait_templates_idle();
    auto t = b.create();
    auto t0 = Clock::now();
    std::string pid = b.start(t.sandbox_id, {"sh", "-c", "mkdir -p /tmp/t && tar x -f - -C /tmp/t"});
    FILE* stream = repo.open_tar_stream();
    out.tar_bytes = b.feed(pid, [stream](char* buf, std::size_t size) { return fread(buf, 1, size, stream); });
    if (pclose(stream) != 0) throw std::runtime_error("tar c of the source repository failed");
    b.wait_ok(pid);
    out.tar.push_back(ms(t0, b.sink.exited_at[pid]));
    b.destroy(t.sandbox_id);

    out.clone.push_back(repo.clone_local_ms());
  }
  return {kept, commit};
}

// The import's steps one at a time in a fresh guest, as the agent runs them: the pack (as the
// host builds it for a guest that has nothing) through the channel into a file, git index-pack,
// git read-tree -m -u. Each is timed from its process start to its exit.
void import_steps(Driver& b, const fs::path& store_dir, const std::string& commit_hex, Results& out) {
  std::cerr << "timing the import's steps one by one in a guest...\n";
  auto store = snap::open_store((store_dir / "store.git").string());
  if (!store.ok()) throw std::runtime_error(store.error().message);
  git_oid commit{};
  if (git_oid_fromstr(&commit, commit_hex.c_str()) != 0) throw std::runtime_error("not a commit id: " + commit_hex);
  auto t0 = Clock::now();
  auto objects = snap::objects_to_send(store->get(), commit, {});
  if (!objects.ok()) throw std::runtime_error(objects.error().message);
  std::string pack;
  auto packed = snap::write_pack(store->get(), *objects, [&](std::string_view bytes) -> Result<void> {
    pack.append(bytes);
    return {};
  });
  if (!packed.ok()) throw std::runtime_error(packed.error().message);
  out.step_pack = ms(t0, Clock::now());
  out.step_pack_bytes = pack.size();

  std::string sb = b.create().sandbox_id;
  auto t1 = Clock::now();
  std::string pid = b.start(sb, {"sh", "-c", "cat > /tmp/p.pack"});
  std::size_t at = 0;
  b.feed(pid, [&](char* buf, std::size_t size) {
    std::size_t n = std::min(size, pack.size() - at);
    std::copy_n(pack.data() + at, n, buf);
    at += n;
    return n;
  });
  b.wait_ok(pid);
  out.step_send = ms(t1, b.sink.exited_at[pid]);
  b.guest(sb, "git init -q -b main /tmp/r");
  out.step_index = b.guest(sb, "cd /tmp/r && git index-pack --stdin --fix-thin < /tmp/p.pack >/dev/null");
  b.guest(sb, "rm /tmp/p.pack");  // the guest's /tmp is RAM
  out.step_read = b.guest(sb, "cd /tmp/r && git read-tree -m -u " + commit_hex);
  // The small git processes a checkout or sync runs around those two (guest/workspace_checkout.cpp),
  // each through `sh -c` like the rows above; `true` is the cost of any process.
  const std::pair<const char*, std::string> small[] = {
      {"`true` (any process: the baseline)", "true"},
      {"`git cat-file -e <commit>^{commit}`", "git cat-file -e " + commit_hex + "^{commit}"},
      {"`git rev-parse -q --verify HEAD`", "git rev-parse -q --verify HEAD; true"},
      {"`git update-index -q --refresh` (stats every file)", "git update-index -q --refresh"},
      {"`git ls-files -z --cached` (the file count)", "git ls-files -z --cached >/dev/null"},
  };
  for (const auto& [label, command] : small) {
    std::vector<double> times;
    for (int i = 0; i < 3; ++i) times.push_back(b.guest(sb, "cd /tmp/r && " + command));
    out.git_steps.emplace_back(label, median(times));
  }
  b.destroy(sb);
}

// 2. Incremental sync: three files changed on the host, then sync.
void incremental_sync(Driver& b, const bench::SourceRepo& repo, const std::string& sb, int runs, Results& out) {
  std::cerr << "incremental sync x" << runs << "...\n";
  auto [ws, agent] = b.workspace(sb);
  auto three = bench::spread(repo.files(), 3);
  for (int i = 0; i < runs; ++i) {
    repo.append(three, "/* sync edit " + std::to_string(i) + " */");
    auto t0 = Clock::now();
    auto t = b.await<core::WorkspaceTransfer>("sync", [&](auto done) { ws->sync(*agent, nullptr, done); });
    double total = ms(t0, Clock::now());
    out.sync_total.push_back(total);
    out.sync_pack.push_back(t.pack_ms);
    out.sync_guest.push_back(t.import_ms);
    out.sync_snapshot.push_back(total - t.pack_ms - t.import_ms);
    out.sync_scan.push_back(static_cast<double>(ws->base().timings.scan_ms));
    out.sync_store.push_back(static_cast<double>(ws->base().timings.store_ms));
    auto [sent, checkout] = last_import_split();
    out.sync_send.push_back(sent);
    out.sync_checkout.push_back(checkout);
    out.sync_objects = t.objects;
    out.sync_bytes = t.pack_bytes;
  }
}

// 3. Review: a guest process changes 100 files; refresh (after the first: a partial manifest,
// the view patched, the changed folders of the result tree rewritten) + list() + diff_all(), with
// the refresh's own step times. Per run also a whole manifest (no `since`: every record sent).
void review(Driver& b, const bench::SourceRepo& repo, const std::string& sb, int runs, Results& out) {
  std::cerr << "review of 100 changed files x" << runs << "...\n";
  bench::EditorRequests editor(b);
  auto [ws, agent] = b.workspace(sb);
  auto hundred = bench::spread(repo.files(), 100);
  channel::wire::WorkspaceManifestParams params;  // as SandboxWorkspace::refresh asks, without `since`
  params.path = core::SandboxWorkspace::kGuestPath;
  snap::SnapshotLimits limits;
  params.bounds.max_entries = static_cast<std::int64_t>(limits.max_files);
  params.bounds.max_file_bytes = static_cast<std::int64_t>(limits.max_file_bytes);
  params.bounds.max_total_bytes = static_cast<std::int64_t>(limits.max_total_bytes) * 2;
  // The first refresh of a sandbox lists everything and builds the whole result tree.
  auto t_first = Clock::now();
  auto first = b.await<core::ChangeSet>("refresh", [&](auto done) { ws->refresh(*agent, done); });
  out.first_refresh.push_back(ms(t_first, Clock::now()));
  out.first_steps = first.steps;
  for (int i = 0; i < runs; ++i) {
    b.guest(sb, edit_script(hundred, "/* review edit a" + std::to_string(i) + " */"));
    auto t0 = Clock::now();
    auto listed = b.await<channel::WorkspaceManifest>("manifest", [&](auto done) { agent->manifest(params, done); });
    out.manifest.push_back(ms(t0, Clock::now()));

    auto t_edit = Clock::now();
    b.guest(sb, edit_script(hundred, "/* review edit b" + std::to_string(i) + " */"));
    out.edit.push_back(ms(t_edit, Clock::now()));
    auto t1 = Clock::now();
    auto set = b.await<core::ChangeSet>("refresh", [&](auto done) { ws->refresh(*agent, done); });
    double refresh = ms(t1, Clock::now());
    auto t2 = Clock::now();
    out.review_files = set.changes->list().size();
    double list = ms(t2, Clock::now());
    auto t3 = Clock::now();
    auto diffs = set.changes->diff_all();
    double diff_all = ms(t3, Clock::now());
    if (!diffs.ok()) throw std::runtime_error("diff_all: " + diffs.error().message);
    out.step_manifest.push_back(set.steps.manifest_ms);
    out.step_agent.push_back(set.steps.agent_ms);
    out.validate.push_back(set.steps.check_ms);
    out.store_inlined.push_back(set.steps.store_inlined_ms);
    out.fetch_rest.push_back(set.steps.fetch_ms);
    out.tree.push_back(set.steps.tree_ms);
    out.compute.push_back(set.steps.compute_ms);
    out.review_partial = set.steps.partial;
    out.review_records = set.steps.records;
    out.refresh.push_back(refresh);
    out.list.push_back(list);
    out.diff_all.push_back(diff_all);
    out.refresh_list.push_back(refresh + list);
    out.refresh_diff.push_back(refresh + diff_all);
    out.review_blobs = set.blobs_fetched;
    out.review_inlined = set.steps.inlined;
    out.review_exported = set.steps.exported;

    b.guest(sb, edit_script(hundred, "/* review edit c" + std::to_string(i) + " */"));
    auto t4 = Clock::now();
    json list_answer = editor.ask("changes/list", {{"sandboxId", sb}});
    auto t5 = Clock::now();
    json diffed = editor.ask("changes/diff", {{"sandboxId", sb}, {"refresh", false}});
    auto t6 = Clock::now();
    if (!list_answer.contains("result") || !diffed.contains("result") || diffed["result"]["files"].size() != 100)
      throw std::runtime_error("the editor's review went wrong: " + list_answer.dump().substr(0, 300) + " " + diffed.dump().substr(0, 300));
    out.editor_list.push_back(ms(t4, t5));
    out.editor_diff.push_back(ms(t5, t6));
    out.editor_review.push_back(ms(t4, t6));
    out.editor_diff_bytes = editor.last_answer_bytes;
  }
  // A new file changes what is listed: the watch names it, one `git check-ignore` decides.
  for (int i = 0; i < 3; ++i) {
    b.guest(sb, "cd /workspace && echo created > created-" + std::to_string(i) + ".txt");
    auto t0 = Clock::now();
    auto set = b.await<core::ChangeSet>("refresh", [&](auto done) { ws->refresh(*agent, done); });
    out.new_file.push_back(ms(t0, Clock::now()));
    out.new_file_agent.push_back(set.steps.agent_ms);
  }
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

const char* verdict(double value, double target) { return value <= target ? "PASS" : "MISS"; }

void print(const Results& r, const bench::SourceRepo& repo, const std::string& source, double repo_ms, int first_runs, int runs,
           const std::string& accel, const std::string& load_before, const std::string& load_after) {
  std::printf("\nsource: %s, %zu files, %.1f MiB (committed into a temporary repository in %.1f s)\n", source.c_str(),
              repo.files().size(), mib(repo.total_bytes()), repo_ms / 1000);
  std::printf("machine: %ld cores, accel %s; load average before %s, after %s\n", sysconf(_SC_NPROCESSORS_ONLN), accel.c_str(),
              load_before.c_str(), load_after.c_str());
  std::printf("first sync: %d runs each (peers interleaved); sync and review: %d runs\n\n", first_runs, runs);

  if (first_runs > 0) {
    std::printf("| first sync into a fresh sandbox | median | min | max |\n|---|---:|---:|---:|\n");
    row("sandbox/create, no workspace", r.plain);
    for (const auto& [n, f] : {std::pair<std::string, const FirstSync*>{"cold store", &r.cold}, {"warm store", &r.warm}}) {
      row("create with workspace, " + n + ": total", f->total);
      row("&nbsp;&nbsp;restore (guest start)", f->restore);
      row("&nbsp;&nbsp;snapshot on the host (during the restore)", f->snapshot);
      row("&nbsp;&nbsp;import (after both)", f->import);
      row("&nbsp;&nbsp;&nbsp;&nbsp;of which the pack, on the host", f->pack);
      row("&nbsp;&nbsp;&nbsp;&nbsp;of which send + index-pack + checkout", f->guest_import);
      row("&nbsp;&nbsp;workspace part (total - restore)", f->workspace_part);
    }
    row("peer: `tar c` → the same channel → `tar x` in a guest", r.tar);
    row("peer: `git clone --local` on the host", r.clone);
    std::printf("\npack: %llu objects, %.1f MiB; tar stream: %.1f MiB\n", (unsigned long long)r.warm.objects, mib(r.warm.pack_bytes),
                mib(r.tar_bytes));

    std::printf("\n| the import's steps, one by one in a guest (1 run) | time |\n|---|---:|\n");
    std::printf("| pack on the host (%.1f MiB) | %.1f ms |\n", mib(r.step_pack_bytes), r.step_pack);
    std::printf("| pack through the channel into a file (`cat`) | %.1f ms |\n", r.step_send);
    std::printf("| `git index-pack --stdin --fix-thin` | %.1f ms |\n", r.step_index);
    std::printf("| `git read-tree -m -u` (checkout) | %.1f ms |\n", r.step_read);
    for (const auto& [label, took] : r.git_steps) std::printf("| %s, median of 3 | %.1f ms |\n", label.c_str(), took);
  }
  std::printf("\n| incremental sync, 3 files changed on the host | median | min | max |\n|---|---:|---:|---:|\n");
  row("sync: total", r.sync_total);
  row("&nbsp;&nbsp;snapshot on the host (rest of total)", r.sync_snapshot);
  row("&nbsp;&nbsp;&nbsp;&nbsp;of which the scan (stat cache)", r.sync_scan);
  row("&nbsp;&nbsp;&nbsp;&nbsp;of which store + tree + commit", r.sync_store);
  row("&nbsp;&nbsp;pack on the host", r.sync_pack);
  row("&nbsp;&nbsp;send + store the pack + checkout in the guest", r.sync_guest);
  row("&nbsp;&nbsp;&nbsp;&nbsp;of which send + store (index) the pack", r.sync_send);
  row("&nbsp;&nbsp;&nbsp;&nbsp;of which the checkout (sync)", r.sync_checkout);
  std::printf("\nsync pack: %llu objects, %llu bytes\n", (unsigned long long)r.sync_objects, (unsigned long long)r.sync_bytes);

  std::printf("\n| review, 100 files changed in the guest | median | min | max |\n|---|---:|---:|---:|\n");
  row("the guest process appending to the 100 files (the agent hashes them meanwhile), not part of the review", r.edit);
  row("first refresh of the sandbox (whole manifest, whole result tree)", r.first_refresh);
  const auto& f = r.first_steps;
  std::printf("| &nbsp;&nbsp;its steps: manifest %.1f (agent %.0f), check %.1f, fetch %.1f, result tree %.1f, compute %.1f ms | | | |\n", f.manifest_ms,
              f.agent_ms, f.check_ms, f.fetch_ms, f.tree_ms, f.compute_ms);
  row("refresh (manifest, fetch, result tree, diff)", r.refresh);
  row("&nbsp;&nbsp;the agent's manifest, received (the changed files' content inline, ids checked)", r.step_manifest);
  row("&nbsp;&nbsp;&nbsp;&nbsp;of which the agent making it (its own clock, whole ms)", r.step_agent);
  row("&nbsp;&nbsp;host: patch the view / validate, missing blobs", r.validate);
  row("&nbsp;&nbsp;host: store the inlined blobs", r.store_inlined);
  row("&nbsp;&nbsp;export of what was not inlined + storing it (0: no export)", r.fetch_rest);
  row("&nbsp;&nbsp;host: result tree", r.tree);
  row("&nbsp;&nbsp;host: Changes::compute", r.compute);
  row("the agent's manifest with every record (no since)", r.manifest);
  row("**editor: `changes/list` + `changes/diff {refresh: false}`, JSON-RPC text in, answers serialized**", r.editor_review);
  row("&nbsp;&nbsp;`changes/list` (refresh)", r.editor_list);
  row("&nbsp;&nbsp;`changes/diff` of the 100 files, its JSON", r.editor_diff);
  row("refresh after the guest creates one new file (git asked whether it is ignored)", r.new_file);
  row("&nbsp;&nbsp;of which the agent making its manifest", r.new_file_agent);
  row("list()", r.list);
  row("diff_all()", r.diff_all);
  row("refresh + list()", r.refresh_list);
  row("refresh + diff_all()", r.refresh_diff);
  std::printf("\nreview: %llu changed files listed, %llu blobs fetched per refresh (%lld inline, %lld exported); manifest %s, %lld records\n",
              (unsigned long long)r.review_files, (unsigned long long)r.review_blobs, (long long)r.review_inlined, (long long)r.review_exported,
              r.review_partial ? "partial" : "whole", (long long)r.review_records);

  if (first_runs > 0) {
    double tar = median(r.tar);
    double cold_ratio = median(r.cold.workspace_part) / tar, warm_ratio = median(r.warm.workspace_part) / tar;
    std::printf("\nratios: workspace part / tar peer: cold %.2fx, warm %.2fx; create with workspace (warm) / (plain create + tar) %.2fx; "
                "workspace part (warm) / git clone --local %.1fx\n",
                cold_ratio, warm_ratio, median(r.warm.total) / (median(r.plain) + tar), median(r.warm.workspace_part) / median(r.clone));
    std::printf("target first sync <= 2x tar: cold %.2fx %s, warm %.2fx %s\n", cold_ratio, verdict(cold_ratio, 2), warm_ratio,
                verdict(warm_ratio, 2));
  }
  std::printf("target incremental sync <= 200 ms: %.1f ms %s\n", median(r.sync_total), verdict(median(r.sync_total), 200));
  std::printf("target review of 100 files <= 100 ms: refresh + diff_all %.1f ms %s, refresh + list %.1f ms %s, editor changes/list + changes/diff %.1f ms %s (diff answer %zu bytes)\n",
              median(r.refresh_diff), verdict(median(r.refresh_diff), 100), median(r.refresh_list), verdict(median(r.refresh_list), 100),
              median(r.editor_review), verdict(median(r.editor_review), 100), r.editor_diff_bytes);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockroom workspace benchmark"};
  int runs = 5, first_runs = 3;
  std::string source = "/usr/include";
  app.add_option("--runs", runs, "runs of the incremental sync and of the review")->check(CLI::Range(3, 1000));
  app.add_option("--first-runs", first_runs, "runs of each first-sync measurement (plain, cold, warm, tar, clone); 0 skips them")
      ->check(CLI::Range(0, 100));
  app.add_option("--source", source, "the tree to copy into a temporary git repository and measure with")->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);
  // Warnings to stderr; AgentClient's debug timings into a ring the sync's split is read from.
  g_log = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  auto to_stderr = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  to_stderr->set_level(spdlog::level::warn);
  auto logger = std::make_shared<spdlog::logger>("bench", spdlog::sinks_init_list{to_stderr, g_log});
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);

  std::optional<fs::path> store_dir;
  try {
    std::string load_before = load_average();
    std::cerr << "committing a copy of " << source << " into a temporary repository...\n";
    auto t_repo = Clock::now();
    bench::SourceRepo repo(source);
    double repo_ms = ms(t_repo, Clock::now());
    core::WorkspaceRequest request{repo.dir().string(), {}, {}};
    store_dir = store_dir_of(repo.dir());

    Results r;
    std::string accel;
    {
      Driver b;
      accel = std::string(vm::accel_name(b.manager->accel()));
      std::cerr << "warming up: the guest image and template...\n";
      b.destroy(b.create().sandbox_id);
      std::string kept;
      if (first_runs > 0) {
        auto [sandbox, commit] = first_sync(b, repo, request, *store_dir, first_runs, r);
        kept = sandbox;
        import_steps(b, *store_dir, commit, r);
      } else {
        kept = b.create(request).sandbox_id;  // just the sandbox the sync and review run in
      }
      b.wait_templates_idle();
      incremental_sync(b, repo, kept, runs, r);
      b.wait_templates_idle();
      review(b, repo, kept, runs, r);
      b.destroy(kept);
    }
    print(r, repo, source, repo_ms, first_runs, runs, accel, load_before, load_average());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    std::error_code ec;
    if (store_dir) fs::remove_all(*store_dir, ec);
    return 1;
  }
  std::error_code ec;
  if (store_dir) fs::remove_all(*store_dir, ec);  // the benchmark's store in lockroom's cache
  return 0;
}
