#!/usr/bin/env bash
# Checkpoints under MPI: a rank killed with SIGKILL ends the whole job with a message naming it (no hang); the run
# resumes from the last complete checkpoint to the model of an uninterrupted run, bit for bit; the checkpoint
# holds every worker in global order, so a single process (and another rank count) resumes it to the same model.
# Usage: mpi_resume.sh PIMOPT MPIRUN BACKEND
set -euo pipefail
pimopt=$1 mpirun=$2 backend=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One machine: OpenMPI's shared-memory point-to-point layer (ob1) without probing UCX first, which cost 0.25 s of every
# mpirun here (0.68 -> 0.44 s for a 4-rank job). What the checks compare does not depend on the transport.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$pimopt" gen sparse --out data.bin --rows 1600 --features 2000 --seed 9 >/dev/null
fail() {
  echo "FAIL: $*"
  exit 1
}
model_of() { grep -v '^#' "$1"; }

for algo in ga ma admm; do
  run=(train --data data.bin --algo "$algo" --workers 4 --batch 16 --epochs 5 --lr 0.3 --backend "$backend" -q)
  "$pimopt" "${run[@]}" --out full.model >/dev/null

  rm -f ck
  start=$(date +%s)
  set +e
  PIMOPT_TEST_KILL_RANK=1:3 timeout 120 "$mpirun" -np 2 --oversubscribe "$pimopt" "${run[@]}" --checkpoint ck \
    --out killed.model >killed.log 2>&1
  rc=$?
  set -e
  ((rc != 0)) || fail "$algo: the job whose rank 1 was killed exited 0"
  ((rc != 124)) || fail "$algo: the job hung after rank 1 died (timeout)"
  grep -q "rank 1" killed.log || { cat killed.log; fail "$algo: the message does not name the dead rank"; }
  [[ ! -e killed.model ]] || fail "$algo: a killed job wrote a model"
  [[ -s ck ]] || fail "$algo: no checkpoint after 3 epochs"
  echo "ok   $algo: rank 1 SIGKILLed after epoch 3 -> exit $rc in $(($(date +%s) - start)) s, message names rank 1"

  cp ck ck_single
  "$mpirun" -np 2 --oversubscribe "$pimopt" "${run[@]}" --checkpoint ck --resume --report resumed.json \
    --out resumed.model >/dev/null 2>&1 || fail "$algo: resume under mpirun failed"
  cmp -s <(model_of full.model) <(model_of resumed.model) || fail "$algo: resumed 2-rank model differs from the uninterrupted one"
  grep -q '"resumed_from_epoch": 3' resumed.json || fail "$algo: the resumed run did not start at epoch 3"
  echo "ok   $algo: 2 ranks resumed from epoch 3 == uninterrupted model"

  "$pimopt" "${run[@]}" --checkpoint ck_single --resume --out single.model >/dev/null \
    || fail "$algo: a single process could not resume the 2-rank checkpoint"
  cmp -s <(model_of full.model) <(model_of single.model) || fail "$algo: single-process resume differs"
  echo "ok   $algo: one process resumed the 2-rank checkpoint == uninterrupted model"
done

# A checkpoint of another run is refused on every rank, with a message, and the job ends.
set +e
timeout 120 "$mpirun" -np 2 --oversubscribe "$pimopt" train --data data.bin --algo ma --workers 4 --batch 8 \
  --epochs 5 --backend "$backend" --checkpoint ck --resume -q >other.log 2>&1
rc=$?
set -e
((rc == 2)) || { cat other.log; fail "a foreign checkpoint: exit $rc, expected 2"; }
grep -q -- "belongs to another run: it was written with --algo admm; this run has --algo ma" other.log \
  || { cat other.log; fail "a foreign checkpoint: the message does not name the differing option"; }
echo "ok   a checkpoint of another run is refused (exit 2)"

# A single-worker algorithm is refused under mpirun, on every rank, with the flag named.
set +e
timeout 120 "$mpirun" -np 2 --oversubscribe "$pimopt" train --data data.bin --algo mbsgd --backend "$backend" -q \
  >single.log 2>&1
rc=$?
set -e
((rc == 2)) || { cat single.log; fail "mbsgd under mpirun: exit $rc, expected 2"; }
grep -q -- "--algo: mbsgd has one worker" single.log || { cat single.log; fail "mbsgd under mpirun: no clear message"; }
echo "ok   mbsgd under mpirun is refused (exit 2, names --algo)"
