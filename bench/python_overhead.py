#!/usr/bin/python3
"""What the Python binding adds to a training epoch: fashion-mnist, the same settings through the CLI
(`pimopt train --data fm.bin ...`) and through `pimopt.train` on the same arrays, interleaved (CLI, Python, CLI,
Python, ...). Compares the seconds per epoch of training (the report's `train_seconds`, median of the epochs) and
the whole call's wall time less the data loading (the CLI's `load_wall_seconds`; the arrays are in memory already).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--rounds 5] [--epochs 5]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402
from bench_util import PIMOPT, read_binary_dataset, run  # noqa: E402


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=bu.positive_int, default=5)
    ap.add_argument("--epochs", type=bu.positive_int, default=5)
    return ap


def main():
    args = build_parser().parse_args()
    import pimopt  # the binding (PYTHONPATH=build/python), after the arguments: a bad one is refused without it
    with tempfile.TemporaryDirectory(prefix="pimopt_pyoverhead_") as work:
        measure(args, pimopt, work)


def measure(args, pimopt, work):
    """The interleaved rounds; the converted set and the reports in the folder WORK."""
    data, report = os.path.join(work, "fm.bin"), os.path.join(work, "r.json")
    run([PIMOPT, "convert", "fashion-mnist", data])
    X, y = read_binary_dataset(data)
    settings = {"algo": "mbsgd", "batch": "64", "lr": "0.05", "epochs": str(args.epochs), "scale": "none",
                "lr-schedule": "constant", "tol": "0", "no-train-metrics": "true"}
    flags = [x for k, v in settings.items() for x in ((f"--{k}",) if v == "true" else (f"--{k}", v))]
    rows = {"CLI": [], "Python": []}
    for _ in range(args.rounds):
        start = time.perf_counter()
        run([PIMOPT, "train", "--data", data, "-q", "--report", report] + flags)
        wall = time.perf_counter() - start
        with open(report) as f:
            r = json.load(f)
        rows["CLI"].append((statistics.median(e["train_seconds"] for e in r["epochs"]),
                            wall - r["time"]["load_wall_seconds"]))
        start = time.perf_counter()
        result = pimopt.train(X, y, **{k.replace("-", "_"): v for k, v in settings.items()})
        wall = time.perf_counter() - start
        rows["Python"].append((statistics.median(e["train_seconds"] for e in result["epochs"]),
                               wall - result["report"]["time"]["load_wall_seconds"]))
    print(f"fashion-mnist, MB-SGD batch 64, {args.epochs} epochs, {args.rounds} interleaved rounds\n")
    print("| front end | s per epoch, median (min-max) | call less loading, s, median (min-max) |\n|---|---|---|")
    for name, values in rows.items():
        epochs, calls = [v[0] for v in values], [v[1] for v in values]
        print(f"| {name} | {statistics.median(epochs):.4f} ({min(epochs):.4f}-{max(epochs):.4f}) | "
              f"{statistics.median(calls):.3f} ({min(calls):.3f}-{max(calls):.3f}) |")
    ratio = statistics.median(v[0] for v in rows["Python"]) / statistics.median(v[0] for v in rows["CLI"])
    print(f"\nPython / CLI, seconds per epoch: {ratio:.3f}")


if __name__ == "__main__":
    main()
