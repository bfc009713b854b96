// The signal table behind signals.h.
#include "protocol/signals.h"

#include <csignal>
#include <cstdlib>
#include <iterator>

namespace lockroom::protocol {

namespace {

struct SignalName {
  const char* name;
  int number;
};

constexpr SignalName kSignals[] = {
    {"HUP", SIGHUP},     {"INT", SIGINT},       {"QUIT", SIGQUIT},   {"ILL", SIGILL},   {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT},   {"BUS", SIGBUS},       {"FPE", SIGFPE},     {"KILL", SIGKILL}, {"USR1", SIGUSR1},
    {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},   {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},   {"CONT", SIGCONT},   {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},     {"URG", SIGURG},     {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},   {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"PWR", SIGPWR},
    {"SYS", SIGSYS},
};

// Linux's real-time signals as the kernel numbers them (glibc's SIGRTMIN is a function that
// skips the two its threads use; the wire means the kernel's numbers, 32..64 on every arch we run).
constexpr int kRtMin = 32;
constexpr int kRtMax = 64;

}  // namespace

std::optional<std::string> signal_bare_name(int number) {
  for (const auto& s : kSignals)
    if (s.number == number) return s.name;
  if (number == kRtMin) return "RTMIN";
  if (number > kRtMin && number <= kRtMax) return "RTMIN+" + std::to_string(number - kRtMin);
  return std::nullopt;
}

std::string signal_name(int number) {
  auto bare = signal_bare_name(number);
  return "SIG" + (bare ? *bare : std::to_string(number));
}

std::optional<int> signal_number(const std::string& name) {
  std::string bare = name.rfind("SIG", 0) == 0 ? name.substr(3) : name;
  for (const auto& s : kSignals)
    if (bare == s.name) return s.number;
  if (bare == "RTMIN") return kRtMin;
  if (bare.rfind("RTMIN+", 0) == 0 && bare.size() > 6 && bare.size() <= 8) {
    char* end = nullptr;
    long n = std::strtol(bare.c_str() + 6, &end, 10);
    if (*end == '\0' && n >= 1 && kRtMin + n <= kRtMax) return kRtMin + static_cast<int>(n);
  }
  return std::nullopt;
}

}  // namespace lockroom::protocol
