#!/usr/bin/env bash
# PID-Comm's own relocation kernel against the software collectives' model of it (docs/pim-emulator.md "Software
# collectives"): builds pidcomm_lib/data_relocate_clockwise/data_relocate_clockwise.c of a checkout of AIS-SNU/PID-Comm
# unmodified with pimopt's DPU toolchain (build/sdk/bin/dpu-upmem-dpurte-clang, as its Makefile does: 16 tasklets,
# int32, -O2), launches it on one emulated DPU through libpimopt_dpu (bench/pidcomm/relocation_host.c) and prints
# its modeled time beside pimopt's relocation kernel with its launch (`pimopt collectives --dpus 1`), per size.
# Nothing of the checkout enters this repository: it is built in a temporary folder.
# Usage: bench/pidcomm_relocation.sh PID_COMM_CHECKOUT [BYTES_PER_DPU ...]     (default 262144 1048576 4194304)
set -euo pipefail
[[ $# -ge 1 && -d $1 ]] || { echo "usage: $0 PID_COMM_CHECKOUT [BYTES_PER_DPU ...] (a folder)" >&2; exit 2; }
checkout=$(realpath "$1")
shift
kernel=$checkout/pidcomm_lib/data_relocate_clockwise/data_relocate_clockwise.c
header=$checkout/pidcomm_lib/support/common.h
[[ -f $kernel && -f $header ]] || { echo "$0: $checkout has no $kernel or $header" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/sdk/bin
[[ -x $bin/dpu-upmem-dpurte-clang && -x $root/build/pimopt ]] ||
  { echo "$0: build pimopt first (bash scripts/test.sh): no $bin/dpu-upmem-dpurte-clang" >&2; exit 2; }
sizes=("$@")
((${#sizes[@]})) || sizes=(262144 1048576 4194304)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PATH=$bin:$PATH
dpu-upmem-dpurte-clang -DNR_TASKLETS=16 -DINT32 -O2 -o "$work/relocate.dpu" "$kernel"
# shellcheck disable=SC2046
cc -O2 -DINT32 -I"$checkout/pidcomm_lib/support" -o "$work/host" "$root/bench/pidcomm/relocation_host.c" \
  $(dpu-pkg-config --cflags --libs dpu)
echo "| bytes per DPU | PID-Comm's kernel ms | pimopt's relocation kernel ms | pimopt / PID-Comm |"
echo "|---|---|---|---|"
for bytes in "${sizes[@]}"; do
  theirs=$(PIMOPT_PROFILE=pim-opt "$work/host" "$work/relocate.dpu" "$bytes" 64)
  ours=$("$root/build/pimopt" collectives --dpus 1 --bytes "$bytes" --json | /usr/bin/python3 -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
print("%.6f" % (1e3 * next(r for r in rows if r["collective"] == "reduce-scatter")["software"]["dpu_s"]))')
  /usr/bin/python3 -c "import sys; t, o = float(sys.argv[2]), float(sys.argv[3]); print(f'| {sys.argv[1]} | {t:.3f} | {o:.3f} | {o / t:.3f} |')" \
    "$bytes" "$theirs" "$ours"
done
