// Wall-clock seconds on the steady clock, for the timings a report shows.
#pragma once

#include <chrono>

namespace pimopt {

// Seconds elapsed since `start`.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace pimopt
