#!/usr/bin/env bash
# Installs everything pimopt needs to build, test and benchmark on Debian 12 (idempotent).
# Usage: scripts/setup.sh [--bench]   (--bench adds PyTorch and matplotlib for bench/ scripts)
set -euo pipefail
core_pkgs=(build-essential cmake ninja-build pkg-config git zlib1g-dev
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev libboost-context-dev
  openmpi-bin libopenmpi-dev liblinear-tools dataset-fashion-mnist python3
  pybind11-dev python3-dev python3-numpy python3-scipy python3-sklearn python3-pandas python3-pytest
  clang llvm-dev)
bench_pkgs=(python3-torch python3-matplotlib)
pkgs=("${core_pkgs[@]}")
if [[ "${1:-}" == "--bench" ]]; then pkgs+=("${bench_pkgs[@]}"); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
