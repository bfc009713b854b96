// check_allowed: the whole table of sandbox states and operations.
#include <catch2/catch.hpp>

#include "server/core/sandbox_state.h"

using namespace lockroom::core;

TEST_CASE("sandbox state: what each state allows", "[core][state]") {
  using S = SandboxState;
  using O = SandboxOp;
  struct Row {
    S state;
    O op;
    bool allowed;
  };
  const Row table[] = {
      {S::kReady, O::kStartProcess, true},     {S::kReady, O::kProcessIo, true},       {S::kReady, O::kReadFiles, true},
      {S::kReady, O::kSync, true},             {S::kReady, O::kDestroy, true},         {S::kCreating, O::kStartProcess, false},
      {S::kCreating, O::kProcessIo, false},    {S::kCreating, O::kDestroy, true},      {S::kStopping, O::kStartProcess, false},
      {S::kStopping, O::kDestroy, true},       {S::kFailed, O::kStartProcess, false},  {S::kFailed, O::kProcessIo, false},
      {S::kFailed, O::kReadFiles, true},       {S::kFailed, O::kDestroy, true},        {S::kGone, O::kStartProcess, false},
      {S::kGone, O::kReadFiles, false},        {S::kGone, O::kDestroy, false},         {S::kFailed, O::kSync, false},
  };
  for (const Row& row : table) {
    auto r = check_allowed(row.op, row.state, "sb-1");
    INFO(state_name(row.state) << " / " << op_name(row.op));
    CHECK(r.ok() == row.allowed);
    if (!r.ok()) CHECK(r.error().code == lockroom::ErrorCode::kWrongState);
  }
}

TEST_CASE("sandbox state: a refusal names the sandbox, the state, the reason and what to do", "[core][state]") {
  auto r = check_allowed(SandboxOp::kStartProcess, SandboxState::kFailed, "sb-7", "guestCrashed");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "sandbox sb-7 is failed (guestCrashed) and cannot start processes; destroy it and create a new sandbox");
}

TEST_CASE("sandbox state: names are stable wire strings", "[core][state]") {
  CHECK(state_name(SandboxState::kReady) == "ready");
  CHECK(state_name(SandboxState::kFailed) == "failed");
  CHECK(reason_name(StopReason::kLifetimeLimit) == "lifetimeLimit");
  CHECK(reason_name(StopReason::kGuestCrashed) == "guestCrashed");
  CHECK(is_final(SandboxState::kGone));
  CHECK_FALSE(is_final(SandboxState::kReady));
}
