#include "pimopt/core/huge_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace pimopt {
namespace {

// The AnonHugePages (kB) of the mapping of this process that holds `address`, from /proc/self/smaps; -1 if none.
long AnonHugePagesKbAt(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

TEST(HugePages, ZeroedVectorsAreZerosOfTheirSizeSmallOrLarge) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, (kHugePageAdviceBytes / sizeof(float)) * 3 + 5}) {
    const std::vector<float> v = ZeroedVector<float>(n);
    ASSERT_EQ(v.size(), n);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; })) << n;
  }
  AdviseHugePages(nullptr, size_t{1} << 30);  // nothing to advise: no effect, no error
}

// Where the kernel offers transparent huge pages (not "[never]"), a large zeroed vector lies on some.
TEST(HugePages, ALargeZeroedVectorIsBackedByHugePagesWhereTheKernelOffersThem) {
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(setting, modes);
  if (modes.empty() || modes.find("[never]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are off here: " << modes;
  }
  const std::vector<uint8_t> v = ZeroedVector<uint8_t>(size_t{64} << 20);
  EXPECT_GE(AnonHugePagesKbAt(v.data() + (size_t{32} << 20)), 2048) << "THP setting: " << modes;
}

}  // namespace
}  // namespace pimopt
