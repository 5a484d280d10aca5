#!/usr/bin/env bash
# Installs dependencies (Debian 12), builds pimopt with its tests, and runs the whole test suite with CTest.
# Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIMOPT_BUILD_TESTS=ON
cmake --build build -j "$jobs"
cd build
ctest -j "$jobs" --output-on-failure --timeout 900 "$@"
