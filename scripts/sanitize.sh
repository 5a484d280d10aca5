#!/usr/bin/env bash
# Builds pimopt with sanitizers in a build directory of its own and runs the test suite under them.
#   scripts/sanitize.sh address   AddressSanitizer + UndefinedBehaviorSanitizer, the whole suite (build-asan/)
#   scripts/sanitize.sh thread    ThreadSanitizer, the tests that run threads (build-tsan/)
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
    # The tests whose code runs on several threads on the CPU backend: the thread pool, the backends' parallel
    # loops, evaluation and MPI ranks as threads. The PIM emulator's tasklets run on Boost.Context fibers, which
    # ThreadSanitizer follows only with fiber annotations; without them its shadow state of the fiber stacks grew
    # past 14 GB on one pipeline test here, so the tests that run the emulator are left out.
    select=(-R 'ThreadPool|Determinism|Pipeline|Evaluate|CpuBackend|Checkpoint.Cpu|Convergence|Plateau|Tolerance'
            -E 'pim|Pim|ResumeKeepsThePlateau')
    ;;
  *)
    echo "usage: $0 address|thread [ctest arguments]" >&2
    exit 2
    ;;
esac
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIMOPT_NATIVE=OFF "-DPIMOPT_SANITIZE=$sanitizers" \
  > /dev/null
cmake --build "$dir" -j "$(nproc)"
cd "$dir"
ctest -j "$(nproc)" --output-on-failure "${select[@]}" "$@"
