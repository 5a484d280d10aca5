#!/usr/bin/env bash
# Trains the same configurations with two pimopt binaries and checks that the results are the same: model files
# (without their comment lines) byte for byte, final metrics, host <-> worker traffic and every modeled PIM phase
# time. For refactorings that must not move results; with `models`, changes that move modeled times only (a
# kernel's accounting): everything but the modeled times.
# Usage: bench/compare_binaries.sh OLD_PIMOPT NEW_PIMOPT [models]     (needs /usr/bin/python3 for the JSON comparison)
set -uo pipefail
[[ ($# == 2 || ($# == 3 && $3 == models)) && -x $1 && -x $2 ]] ||
  { echo "usage: $0 OLD_PIMOPT NEW_PIMOPT [models] (two executables)" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
export PIMOPT_COMPARE_TIMES=1
[[ ${3:-} == models ]] && PIMOPT_COMPARE_TIMES=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
runs=0 differing=0
# Every training flag explicit (the defaults of a newer binary may differ; explicit flags must keep their meaning):
# these three unless the configuration sets them.
run() {
  runs=$((runs + 1))
  local pinned=()
  for flag in "--scale none" "--reg 1e-5" "--lr-schedule constant"; do
    [[ " $* " == *" ${flag% *} "* ]] || pinned+=($flag)
  done
  "$old" train "${pinned[@]}" "$@" -q --out old.model --report old.json >old.out 2>&1 || { echo "old binary failed: $*"; cat old.out; }
  "$new" train "${pinned[@]}" "$@" -q --out new.model --report new.json >new.out 2>&1 || { echo "new binary failed: $*"; cat new.out; }
  local same=1
  cmp -s <(grep -v '^#' old.model) <(grep -v '^#' new.model) || { echo "MODEL DIFFERS: $*"; same=0; }
  /usr/bin/python3 - <<'PY' || { echo "REPORT DIFFERS: $*"; same=0; }
import json, os, sys
o, n = json.load(open("old.json")), json.load(open("new.json"))
times = os.environ["PIMOPT_COMPARE_TIMES"] == "1"
bad = [k for k in ("host_to_workers_bytes", "workers_to_host_bytes", "syncs") if o["traffic"][k] != n["traffic"][k]]
bad += ["final"] if o["final"] != n["final"] else []
po, pn = o["time"]["phases_seconds"], n["time"]["phases_seconds"]
bad += [k for k in po if times and k.startswith("modeled") and po[k] != pn.get(k)]
bad += ["projection"] if times and o.get("projection") != n.get("projection") else []
if bad:
    print("  differs in:", ", ".join(bad))
    sys.exit(1)
PY
  ((same)) || differing=$((differing + 1))
}
for data in "dense:rows=3000,features=64,seed=4" "sparse:rows=6000,features=20000,seed=4" fashion-mnist; do
  epochs=3
  [[ $data == fashion-mnist ]] && epochs=2
  run --data "$data" --epochs $epochs --algo sgd --lr 0.01
  run --data "$data" --epochs $epochs --algo mbsgd --batch 64 --lr 0.1
  run --data "$data" --epochs $epochs --algo ga --workers 4 --batch 64 --lr 0.1
  run --data "$data" --epochs $epochs --algo ma --workers 4 --batch 16 --local-steps 2 --lr 0.1
  run --data "$data" --epochs $epochs --algo admm --workers 4 --batch 16 --rho 0.05 --l1 1e-4 --model svm --lr 0.1
  run --data "$data" --epochs $epochs --algo ma --workers 4 --batch 16 --scale minmax --lr-schedule inverse-sqrt \
    --lr-decay 1 --lr 0.1
  for algo in ga ma admm; do
    run --data "$data" --epochs 2 --algo $algo --backend pim --dpus 16 --batch 32 --lr 0.05
  done
  run --data "$data" --epochs 2 --algo ma --backend pim --dpus 8 --batch 16 --lr 0.1 --sigmoid float \
    --tasklet-split features --profile prim-640 --tasklets 12
  for model in lr svm; do  # PIM-Opt's kernel: its LR gradient multiplies, its SVM gradient adds or subtracts
    for algo in ga ma admm; do
      run --data "$data" --epochs 2 --algo $algo --backend pim --dpus 16 --batch 32 --lr 0.05 --kernel pim-opt \
        --model $model
    done
  done
  run --data "$data" --epochs 2 --algo ma --backend pim --dpus 16 --batch 32 --lr 0.05 --reg 0 --class-weights 3:0.5
  for format in int8 int16; do  # the quantized model deltas: their encoding's modeled cycles
    run --data "$data" --epochs 2 --algo ma --backend pim --dpus 16 --batch 32 --lr 0.05 --sync-format $format
  done
done
# What the loop above does not reach: D-PSGD's gossip (in-process), ADMM with a penalty that moves (--rho auto on a
# set where residual balancing changes it), GA-SGD's per-worker batches; each on both backends.
for backend in cpu pim; do
  run --data "dense:rows=3000,features=40,seed=2" --epochs 3 --algo dsgd --workers 8 --topology torus --local-steps 2 \
    --lr 0.05 --backend $backend
  run --data "dense:rows=800,features=30,seed=3" --epochs 8 --algo admm --workers 4 --rho auto --lr 0.01 \
    --backend $backend
  run --data "dense:rows=3000,features=40,seed=2" --epochs 2 --algo ga --workers 4 --batch 64 --ga-batches per-worker \
    --no-shuffle --lr 0.05 --backend $backend
done
# Projections (--project-dpus: the run's transfers re-timed at the target), with the encoded pulls of --sync-format
# auto and int8, the pipelined pulls of --transfers async, and PIM-Opt's pushes of one model buffer to every DPU.
for algo in ga ma admm; do
  run --data "sparse:rows=6000,features=20000,seed=4" --epochs 2 --algo $algo --backend pim --dpus 16 --batch 32 \
    --lr 0.05 --reg 0 --sync-format auto --project-dpus 2048
done
run --data "dense:rows=3000,features=64,seed=4" --epochs 2 --algo ma --backend pim --dpus 16 --batch 32 --lr 0.05 \
  --sync-format int8 --transfers async --project-dpus 1024
run --data "dense:rows=3000,features=64,seed=4" --epochs 2 --algo ga --backend pim --dpus 16 --batch 32 --lr 0.05 \
  --transfers async --project-dpus 2048
run --data "dense:rows=3000,features=64,seed=4" --epochs 2 --algo ma --backend pim --dpus 16 --batch 32 --lr 0.05 \
  --kernel pim-opt --project-dpus 2048
# Synchronizations off the host: what-if DPU links (the ring all-reduce of GA-SGD, MA-SGD and ADMM, D-PSGD's gossip
# over a torus, quantized deltas over links) and software collectives on today's DIMMs (the same, and MA-SGD's
# quantized deltas); their ledgers' link and collective figures are in the reports compared.
for path in "--profile links-system" "--sync-path software"; do
  for algo in ga ma admm; do
    run --data "dense:rows=3000,features=64,seed=4" --epochs 2 --algo $algo --backend pim --dpus 16 --batch 32 \
      --lr 0.05 $path --project-dpus 256
  done
  run --data "dense:rows=3000,features=40,seed=2" --epochs 2 --algo dsgd --workers 16 --topology torus \
    --local-steps 2 --lr 0.05 --backend pim $path
  run --data "dense:rows=3000,features=64,seed=4" --epochs 2 --algo ma --backend pim --dpus 16 --batch 32 --lr 0.05 \
    --sync-format int8 $path
done
echo "$runs configurations, $differing differing"
((differing == 0))
