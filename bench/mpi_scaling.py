#!/usr/bin/env python3
"""MPI scaling bench: bytes and time per epoch for 1, 2 and 4 ranks on the dense and sparse synthetic sets.

Runs `pimopt train` for GA-SGD, MA-SGD and ADMM with a fixed number of workers (so every rank count trains the
same model: the bench checks that the test accuracy is identical) and records, per epoch: training wall time,
rank 0's time inside MPI calls, bytes sent over MPI by all ranks, synchronizations, and rank 0's compute time.
Writes bench/out/mpi_scaling.csv and .json and prints a table.

Each rank runs with --threads 1. On a 2-core machine 4 ranks are oversubscribed, so their times measure the
protocol's overhead, not a speed-up; bytes and sync counts are exact at any rank count.

Then projects the epoch time to 16, 32 and 64 nodes (weak scaling: every node keeps the 1-rank bench's rows) from
the measured 1-rank compute time, the exact bytes and syncs per epoch and the chain's cost model (docs/mpi.md):
  t_sync(P) = 2 * (P - 1 + V/c) * (alpha + c/B),  V = bytes one rank sends per direction, c = chunk bytes,
and, for comparison, a tree all-reduce (what exact integer sums allow: the PIM backend's MPI_Allreduce):
  t_tree(P) = 2 * log2(P) * alpha + 2 * (P - 1)/P * V/B.
Link bandwidth B and latency alpha are assumptions (printed), not measurements.

Usage: python3 bench/mpi_scaling.py [--pimopt build/pimopt] [--ranks 1 2 4] [--epochs 3]
       python3 bench/mpi_scaling.py --project-only   (re-print the projection from bench/out/mpi_scaling.json)
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402
from bench_util import with_study_settings  # noqa: E402

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


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pimopt", type=bu.path, default=os.path.join(ROOT, "build", "pimopt"))
    parser.add_argument("--ranks", type=bu.positive_int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--workers", type=bu.positive_int, default=4)
    parser.add_argument("--epochs", type=bu.positive_int, default=3)
    parser.add_argument("--backend", choices=bu.PIMOPT_BACKENDS, default="cpu")
    parser.add_argument("--project-only", action="store_true")
    return parser


def main():
    args = build_parser().parse_args()
    if args.project_only:
        saved = os.path.join(OUT, "mpi_scaling.json")
        if not os.path.isfile(saved):
            sys.exit(f"--project-only: no {saved}: run the bench without it first")
        with open(saved) as f:
            project(json.load(f))
        return
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
            reference = None
            for ranks in args.ranks:
                report = os.path.join(OUT, f"mpi_{data}_{algo}_{ranks}.json")
                cmd = [args.pimopt, "train", "--data", train, "--test", test, "--algo", algo, "--workers",
                       str(args.workers), "--epochs", str(args.epochs), "--threads", "1", "--backend",
                       args.backend, "--no-train-metrics", "-q", "--report", report,
                       *with_study_settings([*train_args, *algo_args])]
                if ranks > 1:
                    cmd = [mpirun, "-np", str(ranks), "--oversubscribe", "--bind-to", "none", *cmd]
                run(cmd, env)
                r = json.load(open(report))
                epochs = r["epochs"]
                acc = r["final"]["test"]["accuracy"]
                loss = r["final"]["test"]["log_loss"]
                if reference is not None and (acc, loss) != reference:
                    sys.exit(f"{data} {algo}: {ranks} ranks reached {(acc, loss)}, 1 rank {reference}")
                reference = (acc, loss)
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
                    "test_log_loss": loss,
                })
                x = rows[-1]
                print(f"{data:6s} {algo:4s} ranks {ranks}: {x['s_per_epoch']:8.3f} s/epoch, mpi {x['mpi_comm_s_per_epoch']:7.3f} s, "
                      f"{x['mpi_bytes_per_epoch'] / 1e6:9.2f} MB/epoch over {x['syncs_per_epoch']:.0f} syncs, "
                      f"compute(rank 0) {x['rank0_compute_s_per_epoch']:.3f} s, test acc {acc:.4f} loss {loss:.5f}", flush=True)
    with bu.atomic_open(os.path.join(OUT, "mpi_scaling.csv"), newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with bu.atomic_open(os.path.join(OUT, "mpi_scaling.json")) as f:
        json.dump(rows, f, indent=1)
    print(f"wrote {OUT}/mpi_scaling.csv and .json")
    project(rows)


def chunk_bytes(v, p):  # the ordered chain's message size (mpi_communicator.cc): clamp(n/P, 1024, 65536) floats
    return 4 * min(max((v // 4) // p, 1024), 65536)


def project(rows, alpha_s=5e-6, links_gbit=(25, 100), nodes=(16, 32, 64)):
    print(f"\nprojection, weak scaling (each node keeps the 1-rank bench's rows; compute = measured 1-rank time):"
          f"\nalpha = {alpha_s * 1e6:.0f} us per message, B = {' / '.join(str(b) for b in links_gbit)} Gbit/s (assumed)")
    print(f"{'data':6s} {'algo':4s} {'syncs':>6s} {'V_bytes':>9s} {'compute_s':>9s} " +
          " ".join(f"{f'P={p},{b}G':>11s}" for b in links_gbit for p in nodes) + f" {'P=64,25G,tree':>14s}")
    for r in rows:
        if r["ranks"] != 1:
            continue
        two = next((x for x in rows if x["data"] == r["data"] and x["algo"] == r["algo"] and x["ranks"] == 2), None)
        if two is None:
            continue
        syncs = r["syncs_per_epoch"]
        # Bytes one rank sends per direction and sync: at 2 ranks the chain sends V forward and V back.
        v = two["mpi_bytes_per_epoch"] / syncs / 2
        cells = []
        for b in links_gbit:
            bw = b * 1e9 / 8
            for p in nodes:
                c = min(chunk_bytes(v, p), v)
                t_sync = 2 * (p - 1 + math.ceil(v / c)) * (alpha_s + c / bw)
                cells.append(r["rank0_compute_s_per_epoch"] + syncs * t_sync)
        bw, p = links_gbit[0] * 1e9 / 8, nodes[-1]
        tree = r["rank0_compute_s_per_epoch"] + syncs * (2 * math.log2(p) * alpha_s + 2 * (p - 1) / p * v / bw)
        print(f"{r['data']:6s} {r['algo']:4s} {syncs:6.0f} {v:9.0f} {r['rank0_compute_s_per_epoch']:9.3f} " +
              " ".join(f"{c:11.3f}" for c in cells) + f" {tree:14.3f}")


if __name__ == "__main__":
    main()
