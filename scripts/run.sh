#!/usr/bin/env bash
# Installs dependencies (Debian 12), builds pimopt, and runs the main job: every algorithm (SGD, MB-SGD,
# GA-SGD, MA-SGD, ADMM, CoCoA) trains logistic regression on the built-in fashion-mnist dataset on the CPU backend,
# and GA-SGD, MA-SGD, ADMM and CoCoA again on an emulated 256-DPU UPMEM system; a short result table is printed (with the
# modeled seconds per epoch of the PIM machine). Extra arguments are passed to every `pimopt train` call.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPIMOPT_BUILD_TESTS=OFF > /dev/null
cmake --build build -j "$(nproc)"
cmake --install build --component python > /dev/null  # the Python package: python3 -c "import pimopt"
bash bench/fashion_mnist_table.sh lr --pim 256 "$@"
