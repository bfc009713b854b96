// Signal names on both wires: the editor protocol says "SIGSEGV", the guest channel "SEGV". One
// table of Linux's signals for both, real-time ones as "RTMIN+n", so no signal is ever reported
// as a bare number.
#pragma once

#include <optional>
#include <string>

namespace lockroom::protocol {

// "SEGV" for 11, "RTMIN+2" for SIGRTMIN+2; an unknown number as "SIG<n>" would be a lie about
// its name, so it comes back as std::nullopt and callers send the number.
std::optional<std::string> signal_bare_name(int number);

// The editor protocol's name: "SIGSEGV"; unknown numbers as "SIG<n>" (with the number sent
// alongside, see process_exited_json).
std::string signal_name(int number);

// "SIGINT", "INT", "SIGRTMIN+2", "RTMIN+2" -> number; nullopt for anything else.
std::optional<int> signal_number(const std::string& name);

}  // namespace lockroom::protocol
