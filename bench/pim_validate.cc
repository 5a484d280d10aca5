// Validation of the UPMEM emulator's timing model: PrIM-style microbenchmarks written with the public kernel API,
// modeled by the emulator, side by side with the published hardware numbers (docs/sources.md).
// Usage: pimopt_pim_validate [--profile NAME]   (default pim-opt: 350 MHz, as the published measurements)
#include <cstdio>
#include <cstring>
#include <string>

#include "pimopt/pim/validation.h"

using namespace pimopt::pim;

int main(int argc, char** argv) {
  std::string name = "pim-opt";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--profile") == 0) name = argv[i + 1];
  }
  const HardwareProfile p = MakeProfile(name);
  std::printf("profile %s, %.0f MHz\n\n", name.c_str(), p.dpu_frequency_hz / 1e6);
  std::printf("| benchmark | modeled | published | error | check |\n|---|---|---|---|---|\n");
  int failures = 0;
  for (const ValidationRow& r : ValidationTable(p)) {
    failures += !r.Ok();
    std::printf("| %-44s | %10.3f | %10.3f | %+6.1f%% | %s (tolerance %.0f%%) |\n", r.benchmark.c_str(), r.modeled,
                r.published, 100 * r.Error(), r.Ok() ? "ok" : "FAIL", 100 * r.tolerance);
  }
  std::printf("\n%d of the checks outside tolerance\n", failures);
  return failures == 0 ? 0 : 1;
}
