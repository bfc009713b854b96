// lockroom: the command-line entry point. One binary, one subcommand per job.
//
//   lockroom serve --stdio      JSON-RPC for editors (LSP framing); `--framing ndjson` for ACP-style
//   lockroom --stdio            the same (editor clients append a bare --stdio)
//   lockroom version [--json]
//   lockroom doctor  [--json]   what this machine can do
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "server/cli/doctor.h"
#include "server/cli/logging.h"
#include "server/cli/serve.h"

#ifndef LOCKROOM_VERSION
#define LOCKROOM_VERSION "0.0.0"
#endif

namespace {

// Editors append a bare `--stdio`; without a subcommand it means `serve --stdio`.
std::vector<std::string> normalise_args(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool has_stdio = false, has_subcommand = false;
  for (const auto& a : args) {
    if (a == "--stdio") has_stdio = true;
    if (a == "serve" || a == "version" || a == "doctor") has_subcommand = true;
  }
  if (has_stdio && !has_subcommand) args.insert(args.begin(), "serve");
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockroom: runs AI coding agents in disposable QEMU microVMs and returns their changes for review"};
  app.require_subcommand(1);
  lockroom::cli::LogOptions log;
  app.add_option("--log-level", log.level, "trace, debug, info, warn, error or off")->capture_default_str();
  app.add_option("--log-file", log.file, "also write logs to this file (stdout never carries logs)");

  auto* serve = app.add_subcommand("serve", "serve JSON-RPC to an editor over stdin/stdout");
  lockroom::cli::ServeOptions serve_options;
  bool stdio = false;
  std::string framing = "lsp";
  std::size_t max_message = serve_options.max_message_bytes;
  serve->add_flag("--stdio", stdio, "talk over stdin/stdout (the only transport; accepted for editor clients)");
  serve->add_option("--framing", framing, "lsp (Content-Length headers) or ndjson (one message per line)")
      ->check(CLI::IsMember({"lsp", "ndjson"}))
      ->capture_default_str();
  serve->add_option("--max-message-size", max_message, "largest accepted message, e.g. 64MiB")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 31));
  serve->add_flag("--test-mode", serve_options.test_mode, "deterministic logs and test/* methods, for transcript tests");

  auto* version = app.add_subcommand("version", "print the version");
  bool version_json = false;
  version->add_flag("--json", version_json, "machine-readable output");

  auto* doctor = app.add_subcommand("doctor", "explain what this machine can do (QEMU, KVM, disk)");
  bool doctor_json = false;
  doctor->add_flag("--json", doctor_json, "machine-readable output");

  std::vector<std::string> args = normalise_args(argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  log.deterministic = serve_options.test_mode;
  if (auto ok = lockroom::cli::setup_logging(log); !ok) {
    std::cerr << "lockroom: " << ok.error().message << "\n";
    return 2;
  }

  if (*serve) {
    serve_options.framing = framing == "ndjson" ? lockroom::rpc::FramingKind::kNdjson : lockroom::rpc::FramingKind::kContentLength;
    serve_options.max_message_bytes = max_message;
    return lockroom::cli::run_serve(serve_options, LOCKROOM_VERSION);
  }
  if (*version) {
    if (version_json)
      std::cout << nlohmann::json{{"name", "lockroom"}, {"version", LOCKROOM_VERSION}}.dump() << "\n";
    else
      std::cout << "lockroom " << LOCKROOM_VERSION << "\n";
    return 0;
  }
  if (*doctor) {
    auto report = lockroom::cli::probe_machine(LOCKROOM_VERSION);
    if (doctor_json)
      std::cout << lockroom::cli::render_json(report).dump(2) << "\n";
    else
      std::cout << lockroom::cli::render_text(report);
    return report.ready() ? 0 : 1;
  }
  return 2;
}
