#!/usr/bin/env bash
# Builds pimopt and the bench helpers, then runs the interleaved comparison with PyTorch, scikit-learn and
# LIBLINEAR (bench/peers.py), which writes bench/out/peers.md (the README's tables) and bench/out/peers.json.
# Usage: bench/run_bench.sh [peers.py flags, e.g. --cases fashion-mnist,criteo --rounds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --bench
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target pimopt pimopt_membw
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
/usr/bin/python3 bench/peers.py "$@"
