#!/usr/bin/env bash
# Builds pimopt with sanitizers in a build directory of its own and runs the test suite under them.
#   scripts/sanitize.sh address   AddressSanitizer + UndefinedBehaviorSanitizer, the whole suite (build-asan/)
#   scripts/sanitize.sh thread    ThreadSanitizer, every in-process test (build-tsan/)
# Extra arguments go to ctest (e.g. -R Checkpoint). Any sanitizer report fails the run (halt_on_error). The normal
# test command (scripts/test.sh) stays unsanitized and fast; this one takes several times longer.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-address}
shift || true
case "$kind" in
  address)
    dir=build-asan sanitizers="address;undefined"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
    select=()
    ;;
  thread)
    dir=build-tsan sanitizers="thread"
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
    # Every test that runs in one process: the thread pool, the backends' parallel loops, evaluation, MPI ranks as
    # threads, and the PIM emulator, whose tasklets are Boost.Context fibers announced to ThreadSanitizer
    # (src/pim/dpu.cc). Left out: the CLI tests and the real-mpirun jobs, which run the same code in child
    # processes (their larger runs take minutes each under ThreadSanitizer), and the Python comparison with LIBLINEAR.
    select=(-E '^Cli|mpi_|real_datasets')
    ;;
  *)
    echo "usage: $0 address|thread [ctest arguments]" >&2
    exit 2
    ;;
esac
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIMOPT_NATIVE=OFF -DPIMOPT_PYTHON=OFF "-DPIMOPT_SANITIZE=$sanitizers" \
  > /dev/null
cmake --build "$dir" -j "$(nproc)"
cd "$dir"
if [[ $kind == address ]]; then
  # The real-mpirun jobs run without LeakSanitizer: OpenMPI leaves allocations of its plugins at MPI_Finalize, and
  # the plugins are unloaded before the report, so no suppression can name them. Memory errors still stop them.
  ctest -j "$(nproc)" --output-on-failure -E 'mpi_' "$@"
  ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0} ctest -j "$(nproc)" --output-on-failure -R 'mpi_' "$@"
else
  ctest -j "$(nproc)" --output-on-failure "${select[@]}" "$@"
fi
