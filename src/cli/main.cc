#include "commands.h"
#include "pimopt/core/atomic_file.h"

int main(int argc, char** argv) {
  pimopt::InstallTempFileCleanup();  // SIGTERM / SIGINT / SIGHUP leave no temporary file behind
  return pimopt::cli::RunCli(argc, argv);
}
