// Small helpers shared by the benchmarks: median/min/max of samples, a Markdown table row, and
// a process's memory from /proc/PID/smaps_rollup.
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace lockroom::bench {

struct Stats {
  double median = 0, min = 0, max = 0;
};

inline Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  double med = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return {med, v.front(), v.back()};
}

// "| label | median ms | min ms | max ms |"
inline void row(const char* label, const Stats& s) {
  std::printf("| %s | %.1f ms | %.1f ms | %.1f ms |\n", label, s.median, s.min, s.max);
}

// A kB field ("Pss", "Rss") of /proc/PID/smaps_rollup, or -1.
inline long rollup_kb(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key, rest;
  long value = 0;
  while (in >> key) {
    if (key == field + ":") {
      in >> value;
      return value;
    }
    std::getline(in, rest);
  }
  return -1;
}

}  // namespace lockroom::bench
