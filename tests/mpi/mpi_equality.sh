#!/usr/bin/env bash
# A run on P MPI ranks must give, bit for bit, the model (and metrics) of one process with the same number of
# workers: GA-SGD, MA-SGD, ADMM, D-PSGD and CoCoA; LR and SVM; dense and sparse data; the given backend.
# Usage: mpi_equality.sh PIMOPT MPIRUN RANKS BACKEND WORKERS [MODELS]
# MODELS (default "lr svm"): the models of the algorithm x data grid; the rest runs once whatever it is.
set -euo pipefail
pimopt=$1 mpirun=$2 ranks=$3 backend=$4 workers=$5 models=${6:-lr svm}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# One machine: OpenMPI's shared-memory point-to-point layer (ob1) without probing UCX first, which cost 0.25 s of every
# mpirun here (0.68 -> 0.44 s for a 4-rank job). What the checks compare does not depend on the transport.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$pimopt" gen dense --out dense.bin --rows 1200 --features 40 --separation 0.2 --seed 3 >/dev/null
"$pimopt" gen dense --out dense_test.bin --rows 300 --features 40 --separation 0.2 --seed 3 --first-row 1200 >/dev/null
"$pimopt" gen sparse --out sparse.bin --rows 1500 --features 3000 --seed 4 >/dev/null
"$pimopt" gen sparse --out wide.bin --rows 800 --features 70000 --seed 6 >/dev/null
"$pimopt" gen sparse --out sparse.svm --rows 600 --features 3000 --seed 5 >/dev/null

# Strips the comment lines (they name the command line) so that only the model itself is compared.
model_of() { grep -v '^#' "$1"; }
# The final epoch's metrics of both reports must be equal and the MPI run must report its ranks and traffic: one
# Python start per check ($PIMOPT_PYTHON3, Debian's interpreter under CTest; a version manager's shim costs 0.4 s).
python=${PIMOPT_PYTHON3:-python3}
compare_reports() {  # one.json many.json ranks: prints what differs, nothing when they agree
  "$python" -c "import json,sys
def final(path):
    e = json.load(open(path))['epochs'][-1]
    return (e['train']['accuracy'], e['train']['auc'], e['train']['objective'], (e.get('test') or {}).get('auc'))
one, many = final(sys.argv[1]), final(sys.argv[2])
m = json.load(open(sys.argv[2]))['mpi']
if one != many: print('metrics differ:', one, 'vs', many)
elif m['ranks'] != int(sys.argv[3]) or m['mpi_bytes'] <= 0: print('no MPI traffic reported:', m)" "$@"
}

failures=0
check() {  # name, then the train arguments
  local name=$1
  shift
  "$pimopt" train "$@" --backend "$backend" --workers "$workers" --threads 2 -q --out one.model --report one.json \
    >one.log 2>&1 || { echo "FAIL $name: single process failed"; cat one.log; failures=$((failures + 1)); return; }
  if ! timeout 300 "$mpirun" -np "$ranks" --oversubscribe "$pimopt" train "$@" --backend "$backend" \
    --workers "$workers" --threads 1 -q --out many.model --report many.json >many.log 2>&1; then
    echo "FAIL $name: mpirun -np $ranks failed"
    cat many.log
    failures=$((failures + 1))
    return
  fi
  if ! cmp -s <(model_of one.model) <(model_of many.model); then
    echo "FAIL $name: the $ranks-rank model differs from the single-process model"
    diff <(model_of one.model) <(model_of many.model) | head -6
    failures=$((failures + 1))
  else
    local differs
    differs=$(compare_reports one.json many.json "$ranks" 2>&1) || differs="the reports could not be read: $differs"
    if [[ -n $differs ]]; then
      echo "FAIL $name: $differs"
      failures=$((failures + 1))
      return
    fi
    echo "ok   $name"
  fi
}

for algo in ga ma admm; do
  for model in $models; do
    extra=()
    [[ $algo == admm ]] && extra=(--rho 0.05)
    check "$algo $model dense (binary slices, minmax scaling, test set)" --data dense.bin --test dense_test.bin \
      --scale minmax --algo "$algo" --model "$model" --batch 32 --epochs 3 --lr 0.2 "${extra[@]}"
    check "$algo $model sparse (binary slices)" --data sparse.bin --algo "$algo" --model "$model" --batch 32 \
      --epochs 2 --lr 0.5 "${extra[@]}"
  done
done
check "admm lr dense, adaptive penalty (--rho auto: residual balancing on residuals summed over ranks)" \
  --data dense.bin --algo admm --batch 32 --epochs 5 --lr 0.2
check "dsgd lr dense over a torus (every process gathers the models for the gossip)" --data dense.bin --algo dsgd \
  --topology torus --batch 32 --epochs 2 --lr 0.2
check "cocoa svm dense (the rows' duals stay with their ranks; the certificate sums over them)" --data dense.bin \
  --test dense_test.bin --scale minmax --algo cocoa --model svm --epochs 6 --tol 1e-9
check "cocoa lr sparse, two passes per round" --data sparse.bin --algo cocoa --dual-passes 2 --epochs 3
# Wide enough that one process and one rank take different code paths (parallel vs inline reductions): the
# results must not depend on it (this caught fused multiply-adds contracted in one path only).
check "ga lr sparse wide (70,000 features)" --data wide.bin --algo ga --batch 64 --epochs 2 --lr 0.5
check "ma svm built-in sparse (each rank generates its rows; companion test set)" \
  --data sparse:rows=900,features=4000,seed=2 --algo ma --batch 16 --epochs 2 --model svm
check "ma lr sparse LIBSVM text (parsed whole, cut per rank; held-out fraction)" --data sparse.svm \
  --test-fraction 0.25 --algo ma --local-steps 3 --batch 16 --epochs 2
check "ga lr dense, PIM-Opt's per-worker batches (48 rows: a multiple of 4 and 6 workers)" --data dense.bin \
  --algo ga --ga-batches per-worker --no-shuffle --batch 48 --epochs 2 --lr 0.2
if [[ $backend == pim ]]; then
  for algo in ga ma admm; do
    extra=()
    [[ $algo == admm ]] && extra=(--rho 0.05)
    check "$algo lr dense, PIM-Opt's kernel" --data dense.bin --algo "$algo" --kernel pim-opt --batch 48 --epochs 2 \
      --lr 0.2 "${extra[@]}"
  done
  check "ma lr dense, int8 model deltas with error feedback (each rank quantizes its DPUs')" --data dense.bin \
    --algo ma --sync-format int8 --batch 16 --epochs 2 --lr 0.2
  check "ga lr sparse, compacted gradients (the largest list over all ranks)" --data sparse.bin --algo ga \
    --sync-format auto --batch 64 --epochs 2 --lr 0.5
fi
if ((failures)); then
  echo "$failures configuration(s) differ"
  exit 1
fi
echo "all configurations: $ranks ranks == one process, bit for bit ($backend backend, $workers workers)"
