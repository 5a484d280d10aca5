#!/usr/bin/env bash
# The thread-scaling benchmark (bench/cpu_scaling.py) on a many-core machine that has no package registries, from a
# build made here.
#
#   bash bench/many_core.sh pack [DIR]           here: a portable release build (build-portable/: no -march=native,
#                                                so it runs on any x86-64), its binaries and the shared libraries
#                                                that `ldd` lists (less the C library's own) into DIR
#                                                (default bench/out/many_core)
#   bash bench/many_core.sh run [DIR] [ARGS...]  there, from the repository's root: bench/cpu_scaling.py ARGS with
#                                                the carried binaries (LD_LIBRARY_PATH=DIR/lib), after
#                                                pimopt_pool_cost (a phase's fork-join cost at 2 and all threads);
#                                                the results go to DIR/result (pool_cost.json, cpu_scaling.md,
#                                                cpu_scaling.json)
#   bash bench/many_core.sh baselines [DIR] [ARGS...]
#                                                there: PIM-Opt's CPU and GPU baseline loops in one run
#                                                (bench/pim_opt_baselines.py loops ARGS: the calibration, the CPU
#                                                loops at 2, 8 and 16 gloo processes, the all-reduce fit, the
#                                                artifact's GPU loop and the resident-data one when there is a GPU)
#                                                into DIR/result/baseline-loops.json (docs/baselines.md)
#
# The machine there needs python3 (PyTorch too for the PyTorch rows, nothing else). DIR travels with the
# repository's files (it is under bench/out/, which git ignores: name it where the copy is made).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
dir=${2:-bench/out/many_core}

case "$mode" in
  pack)
    cmake -S . -B build-portable -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIMOPT_NATIVE=OFF -DPIMOPT_BUILD_TESTS=OFF \
      >/dev/null
    cmake --build build-portable --target pimopt pimopt_membw pimopt_pool_cost
    rm -rf "$dir"
    mkdir -p "$dir/lib"
    cp build-portable/pimopt build-portable/bench/pimopt_membw build-portable/bench/pimopt_pool_cost "$dir/"
    # Every library the binaries load, except the C library's own (libc, libm, the loader...): those must be the
    # target's, and any glibc as new as this Debian 12's (2.36) runs these binaries.
    for bin in "$dir/pimopt" "$dir/pimopt_membw" "$dir/pimopt_pool_cost"; do
      ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
        case "$(basename "$lib")" in
          libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
          *) cp -L "$lib" "$dir/lib/" ;;
        esac
      done
    done
    echo "packed into $dir ($(du -sh "$dir" | cut -f1)): $(ls "$dir/lib" | tr '\n' ' ')"
    ;;
  run)
    shift $(($# < 2 ? $# : 2))
    [[ -x "$dir/pimopt" ]] || { echo "many_core.sh: no $dir/pimopt: run 'bash bench/many_core.sh pack $dir' here first" >&2; exit 2; }
    export LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PIMOPT="$PWD/$dir/pimopt" PIMOPT_MEMBW="$PWD/$dir/pimopt_membw"
    "$PIMOPT" --version >/dev/null || { echo "many_core.sh: $PIMOPT does not run here" >&2; exit 1; }
    mkdir -p "$dir/result"
    "$dir/pimopt_pool_cost" | tee "$dir/result/pool_cost.json"
    python3 bench/cpu_scaling.py --out "$dir/result" "$@"
    ;;
  baselines)
    shift $(($# < 2 ? $# : 2))
    mkdir -p "$dir/result"
    if [[ -x "$dir/pimopt" ]]; then  # the host clock for the calibration (optional: the loops need only PyTorch)
      export LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PIMOPT="$PWD/$dir/pimopt"
    fi
    python3 bench/pim_opt_baselines.py loops --out "$dir/result/baseline-loops.json" "$@"
    ;;
  *)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
