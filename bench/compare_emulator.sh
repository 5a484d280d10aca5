#!/usr/bin/env bash
# Runs every ported PrIM benchmark with two pimopt binaries and checks that the emulator's results are the same to
# the bit: modeled times, the slowest DPU's cycle breakdown, instruction and DMA counts (everything `pimopt prim
# --json` prints but the host's wall time), under the base profile, a what-if profile, other tasklet counts and a
# shuffled resume order. For changes to the emulator that must not move a modeled cycle.
# Usage: bench/compare_emulator.sh OLD_PIMOPT NEW_PIMOPT      (needs /usr/bin/python3 for the JSON comparison)
set -uo pipefail
[[ $# == 2 && -x $1 && -x $2 ]] || { echo "usage: $0 OLD_PIMOPT NEW_PIMOPT (two executables)" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=0 differing=0
run() {
  runs=$((runs + 1))
  "$old" prim "$@" --json >"$work/old.json" 2>"$work/old.err"; local old_rc=$?
  "$new" prim "$@" --json >"$work/new.json" 2>"$work/new.err"; local new_rc=$?
  if ((old_rc != new_rc)) || ! cmp -s "$work/old.err" "$work/new.err"; then
    echo "EXIT OR ERROR DIFFERS: $* (old $old_rc, new $new_rc)"; cat "$work/old.err" "$work/new.err"
    differing=$((differing + 1)); return
  fi
  ((old_rc == 0)) || return 0
  /usr/bin/python3 - "$work/old.json" "$work/new.json" <<'PY' || { echo "DIFFERS: $*"; differing=$((differing + 1)); }
import json, sys
o, n = (json.load(open(p)) for p in sys.argv[1:3])
for d in (o, n):
    d.pop("host_wall_s", None)
if o != n:
    print("  differs in:", ", ".join(k for k in o if o[k] != n.get(k)))
    sys.exit(1)
PY
}
small() {
  case $1 in
    TRNS) echo 8 ;; MLP) echo 96 ;; GEMV) echo 512 ;; TS) echo 16384 ;; *) echo 60000 ;;
  esac
}
benchmarks=(VA RED SEL UNI HST-S HST-L TS SCAN-SSA SCAN-RSS TRNS MLP GEMV BS)
for b in "${benchmarks[@]}"; do
  p=$(small "$b")
  run "$b" --dpus 1 --param "$p" --threads 1
  run "$b" --dpus 4 --param "$((p * 2))" --threads 2
  run "$b" --dpus 2 --param "$p" --tasklets 11 --threads 1
  run "$b" --dpus 2 --param "$p" --profile future-fpu --profile-set issue_stall_cycles=0.3,dma_occupancy_cycles=20
  # Shuffled: not the kernels with races (UNI's, and SEL's and SCAN's that a DMA's latency hides on the DPU but not
  # from a tasklet that runs ahead of the clock, docs/pim-emulator.md "The batched scheduler").
  case $b in UNI | SEL | SCAN-SSA | SCAN-RSS) ;; *) run "$b" --dpus 2 --param "$p" --shuffle-seed 3 ;; esac
done
echo "$runs runs, $differing differing"
((differing == 0))
