#!/usr/bin/env bash
# Builds pimopt and the bench helpers, then runs the PyTorch / LIBLINEAR comparison (bench/compare_pytorch.py).
# Usage: bench/run_bench.sh [compare_pytorch.py flags, e.g. --rows 200000 --epochs 3]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --bench
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target pimopt pimopt_membw
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
/usr/bin/python3 bench/compare_pytorch.py "$@"
