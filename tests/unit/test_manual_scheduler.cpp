// The ManualScheduler fake (tests/fakes/manual_scheduler.h) that the dispatcher tests and the fuzz
// target rely on: it must fire timers exactly when and in the order a real loop would.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/fakes/manual_scheduler.h"

using lockroom::testing::ManualScheduler;
using ms = std::chrono::milliseconds;

TEST_CASE("manual scheduler: advance fires due timers in order of due time, then of start", "[fakes]") {
  ManualScheduler s;
  std::vector<std::string> fired;
  s.start_timer(ms(30), [&] { fired.push_back("c@" + std::to_string(s.now_ms())); });
  s.start_timer(ms(10), [&] { fired.push_back("a@" + std::to_string(s.now_ms())); });
  s.start_timer(ms(10), [&] { fired.push_back("b@" + std::to_string(s.now_ms())); });
  s.start_timer(ms(0), [&] { fired.push_back("z@" + std::to_string(s.now_ms())); });
  CHECK(fired.empty());  // never from inside start_timer
  CHECK(s.advance(ms(9)) == 1);
  CHECK(fired == std::vector<std::string>{"z@0"});
  CHECK(s.advance(ms(25)) == 3);
  CHECK(fired == std::vector<std::string>{"z@0", "a@10", "b@10", "c@30"});
  CHECK(s.now_ms() == 34);
  CHECK(s.pending() == 0);
  CHECK(s.fired() == 4);
}

TEST_CASE("manual scheduler: cancelled timers never fire, and cancelling twice or late is harmless", "[fakes]") {
  ManualScheduler s;
  int fired = 0;
  auto a = s.start_timer(ms(5), [&] { ++fired; });
  auto b = s.start_timer(ms(5), [&] { fired += 10; });
  CHECK(s.is_pending(a));
  CHECK(s.due_in_ms(a) == 5);
  s.cancel_timer(a);
  s.cancel_timer(a);
  CHECK_FALSE(s.is_pending(a));
  CHECK(s.due_in_ms(a) == -1);
  s.advance(ms(5));
  CHECK(fired == 10);
  s.cancel_timer(b);  // already fired
  s.cancel_timer(12345);
  CHECK(s.cancelled() == 1);
}

TEST_CASE("manual scheduler: a callback may start and cancel timers", "[fakes]") {
  ManualScheduler s;
  std::vector<std::string> fired;
  ManualScheduler::TimerId victim = 0;
  s.start_timer(ms(10), [&] {
    fired.push_back("first@" + std::to_string(s.now_ms()));
    s.cancel_timer(victim);
    s.start_timer(ms(0), [&] { fired.push_back("chained@" + std::to_string(s.now_ms())); });
    s.start_timer(ms(100), [&] { fired.push_back("later@" + std::to_string(s.now_ms())); });
  });
  victim = s.start_timer(ms(10), [&] { fired.push_back("victim"); });
  s.advance(ms(50));
  CHECK(fired == std::vector<std::string>{"first@10", "chained@10"});
  CHECK(s.now_ms() == 50);
  CHECK(s.pending() == 1);
  s.advance(ms(60));
  CHECK(fired.back() == "later@110");
}

TEST_CASE("manual scheduler: negative delays count as zero", "[fakes]") {
  ManualScheduler s;
  int fired = 0;
  s.start_timer(ms(-5), [&] { ++fired; });
  CHECK(s.run_due() == 1);
  CHECK(fired == 1);
  CHECK(s.now_ms() == 0);
}
