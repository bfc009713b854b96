// Counts the bytes that operator new hands out, so a test can show that a decoder skips data
// without buffering it. The global operator new/delete of the unit-test binary are replaced in
// alloc_counter.cpp (malloc/free underneath, every variant together, so sanitizers stay happy).
#pragma once

#include <cstddef>

namespace lockroom::testing {

// Total bytes requested from operator new since the program started (never decreases).
std::size_t allocated_bytes();

// Bytes allocated while this object lived.
class AllocationScope {
 public:
  AllocationScope() : start_(allocated_bytes()) {}
  std::size_t bytes() const { return allocated_bytes() - start_; }

 private:
  std::size_t start_;
};

}  // namespace lockroom::testing
