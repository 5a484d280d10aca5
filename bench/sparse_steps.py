#!/usr/bin/python3
"""Sparse steps: seconds per training epoch of pimopt's SGD, MB-SGD and GA-SGD (CPU backend) and of
scikit-learn's SGDClassifier on one Criteo-shaped set (2^20 features, 39 non-zeros per row, binary cache), run
interleaved: every round runs each contender once, in the same order, so that a change in the machine's load
touches all of them alike. Reports the median and the spread (min-max) over the rounds and the load average
before each round.

    /usr/bin/python3 bench/sparse_steps.py [--rows 1000000] [--rounds 3] [--threads 2] [--out bench/out]

pimopt's epoch time is the report's `train_seconds` of the last epoch (training only: no parsing, no evaluation;
--no-train-metrics). SGDClassifier runs one epoch (max_iter=1, constant learning rate, no intercept decay, the same
L2) on the same CSR arrays, read from the binary cache; its fit time is measured around `fit`. Logistic loss, lr
0.1, L2 1e-6, shuffled epochs everywhere. Needs python3-sklearn and python3-numpy; expects build/pimopt.
Writes OUT/sparse_steps.json and prints a markdown table.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import PIMOPT, ROOT, read_binary_dataset, run  # noqa: E402

FEATURES = 1 << 20
LR, REG = 0.1, 1e-6


def load_sparse_binary(path):
    """A sparse binary dataset as a SciPy CSR matrix and its labels."""
    values, labels = read_binary_dataset(path)
    if not isinstance(values, tuple):
        sys.exit(f"{path}: dense data; this benchmark is for sparse sets")
    row_ptr, col, val, features = values
    x = scipy.sparse.csr_matrix((val, col.astype(np.int32), row_ptr.astype(np.int64)),
                                shape=(len(row_ptr) - 1, features))
    return x, labels


def pimopt_epoch_seconds(data, algo, extra, threads, report):
    run([PIMOPT, "train", "--data", data, "--algo", algo, *extra, "--epochs", "2", "--lr", str(LR), "--reg",
         str(REG), "--lr-schedule", "constant", "--tol", "0", "--scale", "none", "--no-train-metrics", "-q",
         "--threads", str(threads), "--report", report])
    with open(report) as f:
        return json.load(f)["epochs"][-1]["train_seconds"]


def sklearn_epoch_seconds(x, y, seed):
    clf = SGDClassifier(loss="log_loss", alpha=REG, learning_rate="constant", eta0=LR, max_iter=1, tol=None,
                        shuffle=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        clf.fit(x, y)
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pimopt_sparse_")
    data = os.path.join(work, "criteo_shaped.bin")
    run([PIMOPT, "convert", f"sparse:rows={args.rows},features={FEATURES},seed=1", data])
    x, y = load_sparse_binary(data)
    contenders = {
        "pimopt SGD (batch 1)": lambda r: pimopt_epoch_seconds(data, "sgd", [], args.threads, r),
        "pimopt MB-SGD batch 256": lambda r: pimopt_epoch_seconds(data, "mbsgd", ["--batch", "256"], args.threads, r),
        "pimopt GA-SGD 4 workers, batch 256": lambda r: pimopt_epoch_seconds(
            data, "ga", ["--workers", "4", "--batch", "256"], args.threads, r),
        "scikit-learn SGDClassifier (batch 1)": lambda r: sklearn_epoch_seconds(x, y, r),
    }
    times = {name: [] for name in contenders}
    loads = []
    for round_index in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name, fn in contenders.items():
            times[name].append(fn(os.path.join(work, "report.json") if name.startswith("pimopt") else round_index))
    med = {name: statistics.median(t) for name, t in times.items()}
    sgd, sk = med["pimopt SGD (batch 1)"], med["scikit-learn SGDClassifier (batch 1)"]
    print(f"{args.rows} rows x {FEATURES} features, 39 non-zeros per row; {args.rounds} interleaved rounds; "
          f"load average before each round: {', '.join(f'{v:.2f}' for v in loads)}\n")
    print("| contender | s per epoch, median | spread (min-max) | / pimopt SGD | scikit-learn / this |")
    print("|---|---|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {med[name]:.3f} | {min(t):.3f}-{max(t):.3f} | {med[name] / sgd:.2f}x | "
              f"{sk / med[name]:.2f}x |")
    result = {"rows": args.rows, "features": FEATURES, "rounds": args.rounds, "threads": args.threads,
              "load_average": loads, "seconds_per_epoch": times, "median": med}
    with open(os.path.join(args.out, "sparse_steps.json"), "w") as f:
        json.dump(result, f, indent=2)
    os.remove(data)


if __name__ == "__main__":
    main()
