#!/usr/bin/env python3
"""MPI scaling bench: bytes and time per epoch for 1, 2 and 4 ranks on the dense and sparse synthetic sets.

Runs `pimopt train` for GA-SGD, MA-SGD and ADMM with a fixed number of workers (so every rank count trains the
same model: the bench checks that the test accuracy is identical) and records, per epoch: training wall time,
rank 0's time inside MPI calls, bytes sent over MPI by all ranks, synchronizations, and rank 0's compute time.
Writes bench/out/mpi_scaling.csv and .json and prints a table.

Each rank runs with --threads 1. On a 2-core machine 4 ranks are oversubscribed, so their times measure the
protocol's overhead, not a speed-up; bytes and sync counts are exact at any rank count.

Usage: python3 bench/mpi_scaling.py [--pimopt build/pimopt] [--ranks 1 2 4] [--epochs 2]
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out")

DATASETS = {
    # name: (gen arguments, train arguments)
    "dense": (["dense", "--rows", "100000", "--features", "512", "--separation", "0.05", "--seed", "7"],
              ["--batch", "256", "--lr", "0.2"]),
    "sparse": (["sparse", "--rows", "200000", "--features", "65536", "--seed", "7"],
               ["--batch", "256", "--lr", "0.5"]),
}
ALGOS = {
    "ga": [],
    "ma": ["--local-steps", "16"],
    "admm": ["--rho", "0.05"],
}


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pimopt", default=os.path.join(ROOT, "build", "pimopt"))
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args()
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("mpirun not found: run scripts/setup.sh")
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    for data, (gen, train_args) in DATASETS.items():
        train = os.path.join(OUT, f"mpi_{data}.bin")
        test = os.path.join(OUT, f"mpi_{data}_test.bin")
        if not os.path.exists(train):
            run([args.pimopt, "gen", *gen, "--out", train])
            n = gen[gen.index("--rows") + 1]
            test_gen = list(gen)
            test_gen[gen.index("--rows") + 1] = str(int(n) // 5)
            run([args.pimopt, "gen", *test_gen, "--first-row", n, "--out", test])
        for algo, algo_args in ALGOS.items():
            accuracy = None
            for ranks in args.ranks:
                report = os.path.join(OUT, f"mpi_{data}_{algo}_{ranks}.json")
                cmd = [args.pimopt, "train", "--data", train, "--test", test, "--algo", algo, "--workers",
                       str(args.workers), "--epochs", str(args.epochs), "--threads", "1", "--backend",
                       args.backend, "--no-train-metrics", "-q", "--report", report, *train_args, *algo_args]
                if ranks > 1:
                    cmd = [mpirun, "-np", str(ranks), "--oversubscribe", "--bind-to", "none", *cmd]
                run(cmd, env)
                r = json.load(open(report))
                epochs = r["epochs"]
                acc = r["final"]["test"]["accuracy"]
                if accuracy is not None and acc != accuracy:
                    sys.exit(f"{data} {algo}: {ranks} ranks reached accuracy {acc}, 1 rank {accuracy}")
                accuracy = acc
                e = len(epochs)
                mean = lambda f: sum(f(x) for x in epochs) / e
                rows.append({
                    "data": data, "algo": algo, "ranks": ranks, "workers": args.workers,
                    "features": r["train_data"]["features"], "train_rows": r.get("mpi", {}).get(
                        "training_rows_total", r["train_data"]["rows"]),
                    "s_per_epoch": mean(lambda x: x["train_seconds"]),
                    "mpi_comm_s_per_epoch": mean(lambda x: x["phases_seconds"].get("mpi_comm", 0.0)),
                    "rank0_compute_s_per_epoch": mean(lambda x: x["phases_seconds"].get("worker_compute", 0.0)),
                    "mpi_bytes_per_epoch": mean(lambda x: x["traffic"]["mpi_bytes"]),
                    "syncs_per_epoch": mean(lambda x: x["syncs"]),
                    "test_accuracy": acc,
                })
                x = rows[-1]
                print(f"{data:6s} {algo:4s} ranks {ranks}: {x['s_per_epoch']:8.3f} s/epoch, mpi {x['mpi_comm_s_per_epoch']:7.3f} s, "
                      f"{x['mpi_bytes_per_epoch'] / 1e6:9.2f} MB/epoch over {x['syncs_per_epoch']:.0f} syncs, "
                      f"compute(rank 0) {x['rank0_compute_s_per_epoch']:.3f} s, test acc {acc:.4f}", flush=True)
    with open(os.path.join(OUT, "mpi_scaling.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    json.dump(rows, open(os.path.join(OUT, "mpi_scaling.json"), "w"), indent=1)
    print(f"wrote {OUT}/mpi_scaling.csv and .json")


if __name__ == "__main__":
    main()
