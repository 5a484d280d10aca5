#!/usr/bin/env bash
# Trains every algorithm on fashion-mnist with the documented hyper-parameters (the same as
# tests/accuracy/fashion_mnist_test.cc) and prints one table row per run.
# Usage: bench/fashion_mnist_table.sh [lr|svm|both] [--liblinear] [--pim DPUS] [--quick] [extra pimopt train flags...]
# --pim DPUS adds GA-SGD, MA-SGD, ADMM and CoCoA on the emulated UPMEM system with DPUS DPUs (fixed point), with the
# modeled seconds per epoch of the PIM machine. --quick: the same runs on a small synthetic set for 2 epochs (CTest's
# check that every row's flags are accepted: scripts/run.sh runs this table).
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-both}
shift || true
with_liblinear=0
if [[ "${1:-}" == "--liblinear" ]]; then with_liblinear=1; shift; fi
pim_dpus=0
if [[ "${1:-}" == "--pim" ]]; then pim_dpus=$2; shift 2; fi
quick=0
if [[ "${1:-}" == "--quick" ]]; then quick=1; shift; fi
[[ "$models" == both ]] && models="lr svm"
bin=${PIMOPT:-build/pimopt}  # the binary: build/pimopt unless PIMOPT names another
# --scale none: the documented runs (and tests/accuracy) train on fashion-mnist's pixels as they are, in [0, 1].
common=(--data fashion-mnist --scale none --epochs 10 --reg 1e-5 --seed 1 -q)
if ((quick)); then
  common=(--data dense:rows=4096,features=32,test-rows=512 --scale none --epochs 2 --reg 1e-5 --seed 1 -q)
fi
# The SGD methods' learning-rate schedule; cocoa and newton have no learning rate (they refuse the schedule's flags).
sgd_schedule="--lr-schedule inverse-sqrt --lr-decay 1"
declare -A flags=(
  [sgd]="--algo sgd --lr 0.01 $sgd_schedule"
  [mbsgd]="--algo mbsgd --batch 64 --lr 0.1 $sgd_schedule"
  [ga]="--algo ga --workers 8 --batch 64 --lr 0.1 $sgd_schedule"
  [ma]="--algo ma --workers 8 --batch 16 --lr 0.05 $sgd_schedule"
  [admm]="--algo admm --workers 8 --batch 16 --lr 0.05 --rho 0.01 $sgd_schedule"
  [cocoa]="--algo cocoa"
  [newton]="--algo newton"
)
# On many DPUs GA-SGD needs a global batch of at least one row per DPU.
declare -A pim_flags=(
  [ga]="--algo ga --batch 4096 --lr 0.1 $sgd_schedule"
  [ma]="--algo ma --batch 16 --lr 0.05 $sgd_schedule"
  [admm]="--algo admm --batch 16 --lr 0.05 --rho 0.01 $sgd_schedule"
  [cocoa]="--algo cocoa"
)
if [[ $pim_dpus != 0 ]]; then
  echo "Rows with ${pim_dpus} workers: each pim row and the cpu row above it train with the same settings (workers,"
  echo "batch, lr), so they differ only by the PIM system's fixed point; the 8-worker rows use the CPU settings."
fi
printf "%-6s %-6s %-8s %-8s %9s %9s %9s %10s %16s\n" model algo backend workers train_acc test_acc test_auc "s/epoch" \
  "modeled_s/epoch"
for model in $models; do
  for algo in sgd mbsgd ga ma admm cocoa newton; do
    [[ $algo == newton && $model != lr ]] && continue  # newton takes the logistic loss only
    # shellcheck disable=SC2086
    line=$("$bin" train "${common[@]}" --model "$model" ${flags[$algo]} "$@" | tail -n 1)
    workers=$(grep -o -- '--workers [0-9]*' <<<"${flags[$algo]}" | awk '{print $2}' || true)
    awk -v m="$model" -v a="$algo" -v k="${workers:-1}" \
      '{printf "%-6s %-6s %-8s %-8s %9s %9s %9s %10s %16s\n", m, a, "cpu", k, $3, $4, $5, $7, "-"}' <<<"$line"
  done
  if [[ $pim_dpus != 0 ]]; then
    # Each PIM run next to a CPU run with the same workers and flags: the rows above use 8 workers and their own
    # batches, so only these pairs show what the PIM system's fixed point changes.
    for algo in ga ma admm cocoa; do
      # shellcheck disable=SC2086
      line=$("$bin" train "${common[@]}" --model "$model" ${pim_flags[$algo]} --workers "$pim_dpus" "$@" | tail -n 1)
      awk -v m="$model" -v a="$algo" -v k="$pim_dpus" \
        '{printf "%-6s %-6s %-8s %-8s %9s %9s %9s %10s %16s\n", m, a, "cpu", k, $3, $4, $5, $7, "-"}' <<<"$line"
      # shellcheck disable=SC2086
      line=$("$bin" train "${common[@]}" --model "$model" ${pim_flags[$algo]} --backend pim --dpus "$pim_dpus" \
        "$@" | tail -n 1)
      awk -v m="$model" -v a="$algo" -v k="$pim_dpus" \
        '{printf "%-6s %-6s %-8s %-8s %9s %9s %9s %10s %16s\n", m, a, "pim", k, $3, $4, $5, $7, $8}' <<<"$line"
    done
  fi
done
if [[ $with_liblinear == 1 ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$bin" convert fashion-mnist "$tmp/train.svm" > /dev/null
  "$bin" convert fashion-mnist:test "$tmp/test.svm" > /dev/null
  for s in 0 2; do
    start=$(date +%s.%N)
    liblinear-train -q -s $s -c 1 -B 1 "$tmp/train.svm" "$tmp/model" > /dev/null
    end=$(date +%s.%N)
    acc=$(liblinear-predict "$tmp/test.svm" "$tmp/model" "$tmp/out" | grep -o '[0-9.]*%')
    printf "liblinear -s %s (C=1, -B 1): test accuracy %s, train time %.1f s\n" $s "$acc" "$(awk -v a="$start" -v b="$end" "BEGIN{print b-a}")"
  done
fi
