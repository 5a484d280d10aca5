// Where the PrIM benchmarks' DPU programs (src/pim/validation/prim/dpu/*.c) are: built with pimopt for the
// hardware's 16 tasklets, compiled on first use for another tasklet count (NR_TASKLETS is a compile-time constant of
// a DPU program, as on the SDK).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "pimopt/core/error.h"
#include "pimopt/pim/prim.h"

namespace pimopt::pim::prim {
// Named: the validation library's files share unity batches.
namespace program_files {

bool Exists(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Modification time in nanoseconds; -1 for a file that is not there.
int64_t ModifiedNs(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return -1;
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string ProgramDir() {
  const char* dir = std::getenv("PIMOPT_PRIM_PROGRAMS");
  if (dir != nullptr && *dir != '\0') return dir;
#ifdef PIMOPT_PRIM_PROGRAM_DIR
  return PIMOPT_PRIM_PROGRAM_DIR;
#else
  return "";
#endif
}

}  // namespace program_files

std::string ProgramPath(const std::string& program, uint32_t tasklets) {
#if !defined(PIMOPT_PRIM_PROGRAM_DIR) || !defined(PIMOPT_DPU_CC) || !defined(PIMOPT_PRIM_PROGRAM_SOURCES)
  (void)program;
  (void)tasklets;
  throw ConfigError("--kernels", "pimopt was built without the DPU toolchain (clang and llvm-dev, 14 or newer): the "
                                 "benchmarks' DPU programs cannot be built; --kernels port runs the C++ ports");
#else
  using namespace program_files;
  const std::string dir = ProgramDir();
  const std::string path = StrCat(dir, "/", program, ".t", tasklets, ".dpu");
  static std::mutex compiling;
  const std::lock_guard<std::mutex> lock(compiling);
  const std::string source = StrCat(PIMOPT_PRIM_PROGRAM_SOURCES, "/", program, ".c");
  if (!Exists(source)) throw PimError(StrCat("no DPU program '", program, "' (", source, " is missing)"));
  // Kept while newer than its source and the cost pass (the build remakes the 16-tasklet programs itself).
  const int64_t built = ModifiedNs(path);
  if (built >= ModifiedNs(source) && built >= ModifiedNs(PIMOPT_DPU_PASS_MODULE)) return path;
  // Compiled to a name of this process's, then renamed: a reader never sees half a program, and two processes that
  // compile the same program at once both leave a whole one.
  const std::string temp = StrCat(path, ".tmp", getpid());
  const std::string command = StrCat(Quote(PIMOPT_DPU_CC), " -DNR_TASKLETS=", tasklets, " -o ", Quote(temp), " ",
                                     Quote(source), " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw PimError(StrCat("cannot run the DPU compiler ", PIMOPT_DPU_CC));
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0 || !Exists(temp)) {
    std::remove(temp.c_str());
    throw PimError(StrCat("compiling DPU program ", source, " for ", tasklets, " tasklets into ", dir,
                          " failed (set PIMOPT_PRIM_PROGRAMS to a writable folder): ", output));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw PimError(StrCat("cannot rename ", temp, " to ", path));
  }
  return path;
#endif
}

}  // namespace pimopt::pim::prim
