// DPU programs compiled on first use (native_program.h BuiltProgramPath): NR_TASKLETS is a compile-time constant of
// a DPU program, as on the SDK, so a tasklet count the build did not make is compiled when a run asks for it.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "pimopt/core/error.h"
#include "pimopt/pim/native_program.h"

namespace pimopt::pim {
namespace program_build {  // named: pimopt_pim's files share unity batches

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

}  // namespace program_build

bool HaveDpuToolchain() {
#if defined(PIMOPT_DPU_CC) && defined(PIMOPT_DPU_PASS_MODULE)
  return true;
#else
  return false;
#endif
}

std::string BuiltProgramPath(const std::string& source, const ProgramFolder& folder, const std::string& name,
                             uint32_t tasklets, const std::vector<std::string>& flags) {
#if !defined(PIMOPT_DPU_CC) || !defined(PIMOPT_DPU_PASS_MODULE)
  (void)source;
  (void)folder;
  (void)name;
  (void)tasklets;
  (void)flags;
  throw PimError("pimopt was built without the DPU toolchain (clang and llvm-dev, 14 or newer): DPU programs in C "
                 "cannot be built");
#else
  using namespace program_build;
  const char* chosen = std::getenv(folder.env_var);
  const std::string dir = chosen != nullptr && *chosen != '\0' ? std::string(chosen) : folder.fallback;
  const std::string path = StrCat(dir, "/", name, ".t", tasklets, ".dpu");
  static std::mutex compiling;
  const std::lock_guard<std::mutex> lock(compiling);
  if (!Exists(source)) throw PimError(StrCat("no DPU program '", name, "' (", source, " is missing)"));
  // Kept while newer than its source and the cost pass (the build remakes the programs it makes itself).
  const int64_t built = ModifiedNs(path);
  if (built >= ModifiedNs(source) && built >= ModifiedNs(PIMOPT_DPU_PASS_MODULE)) return path;
  // The folder is made when missing; one that cannot be made or written is the user's setting to fix (an input
  // error naming the variable), not a failure of the compiler.
  std::error_code made;
  std::filesystem::create_directories(dir, made);
  if (made || !std::filesystem::is_directory(dir, made) || access(dir.c_str(), W_OK) != 0) {
    throw ConfigError(folder.env_var,
                      StrCat("cannot write the DPU program ", name, " for ", tasklets, " tasklets into ", dir, " (",
                             made ? made.message() : std::string("not a writable folder"),
                             "): set it to a writable folder"));
  }
  // Compiled to a name of this process's, then renamed: a reader never sees half a program, and two processes that
  // compile the same program at once both leave a whole one.
  const std::string temp = StrCat(path, ".tmp", getpid());
  std::string command = StrCat(Quote(PIMOPT_DPU_CC), " -DNR_TASKLETS=", tasklets);
  for (const std::string& flag : flags) command += " " + Quote(flag);
  command += StrCat(" -o ", Quote(temp), " ", Quote(source), " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw PimError(StrCat("cannot run the DPU compiler ", PIMOPT_DPU_CC));
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0 || !Exists(temp)) {
    std::remove(temp.c_str());
    throw PimError(StrCat("compiling DPU program ", source, " for ", tasklets, " tasklets into ", dir, " failed (set ",
                          folder.env_var, " to a writable folder): ", output));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw PimError(StrCat("cannot rename ", temp, " to ", path));
  }
  return path;
#endif
}

}  // namespace pimopt::pim
