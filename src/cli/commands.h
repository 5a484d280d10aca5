// `pimopt` subcommands. RunCli parses arguments and runs a command; it returns the process exit code:
// 0 success, 2 bad input or flags (message on stderr names the file:line or the flag), 1 internal error.
#pragma once

namespace pimopt::cli {

int RunCli(int argc, char** argv);

}  // namespace pimopt::cli
