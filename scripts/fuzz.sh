#!/usr/bin/env bash
# Coverage-guided fuzzing of every reader with libFuzzer (clang, with AddressSanitizer and UndefinedBehaviorSanitizer).
#   scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]
# Builds build-fuzz/ with clang (installs Debian's clang and libclang-rt-14-dev when missing), then runs each target
# (default: all of tests/fuzz/fuzz_targets.cc) for SECONDS on a copy of its seed corpus in build-fuzz/corpus/TARGET
# (new inputs land there, not in the repository). Prints, per target, the executions, the coverage (libFuzzer's
# 'cov' edges and 'ft' features) and whether it found a failure (a crash-* file in build-fuzz/). The test suite runs
# the same targets briefly without libFuzzer (the fuzz_*_short tests).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(libsvm idx binary model checkpoint profile_set hw_csv yfcc_text criteo_text)
if ! command -v clang++ > /dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
    > /dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev > /dev/null
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DPIMOPT_NATIVE=OFF -DPIMOPT_PYTHON=OFF -DPIMOPT_FUZZ=libfuzzer "-DPIMOPT_SANITIZE=address;undefined" \
  > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")
status=0
printf '%-12s %12s %8s %8s %s\n' target executions cov ft result
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  cp -n tests/fuzz/corpus/"$t"/* "build-fuzz/corpus/$t/" 2> /dev/null || true
  log="build-fuzz/fuzz_$t.log"
  if (cd build-fuzz && UBSAN_OPTIONS=halt_on_error=1 "tests/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=4096 \
        -timeout=10 "corpus/$t" > "fuzz_$t.log" 2>&1); then
    result=clean
  else
    result="FAILED (see $log)"
    status=1
  fi
  done_line=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -1 || true)
  execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$done_line")
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | awk '{print $2}')
  ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | awk '{print $2}')
  printf '%-12s %12s %8s %8s %s\n' "$t" "${execs:--}" "${cov:--}" "${ft:--}" "$result"
done
exit $status
