// Where the PrIM benchmarks' DPU programs (src/pim/validation/prim/dpu/*.c) are: built with pimopt for the
// hardware's 16 tasklets, compiled on first use for another tasklet count (BuiltProgramPath, native_program.h).
#include "pimopt/core/error.h"
#include "pimopt/pim/native_program.h"
#include "pimopt/pim/prim.h"

namespace pimopt::pim::prim {

std::string ProgramPath(const std::string& program, uint32_t tasklets) {
#if !defined(PIMOPT_PRIM_PROGRAM_DIR) || !defined(PIMOPT_PRIM_PROGRAM_SOURCES)
  (void)program;
  (void)tasklets;
  throw ConfigError("--kernels", "pimopt was built without the DPU toolchain (clang and llvm-dev, 14 or newer): the "
                                 "benchmarks' DPU programs cannot be built; --kernels port runs the C++ ports");
#else
  return BuiltProgramPath(StrCat(PIMOPT_PRIM_PROGRAM_SOURCES, "/", program, ".c"),
                          {"PIMOPT_PRIM_PROGRAMS", PIMOPT_PRIM_PROGRAM_DIR}, program, tasklets);
#endif
}

}  // namespace pimopt::pim::prim
