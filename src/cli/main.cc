#include "commands.h"

int main(int argc, char** argv) { return pimopt::cli::RunCli(argc, argv); }
