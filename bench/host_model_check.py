#!/usr/bin/env python3
"""Out-of-sample check of the modeled host (include/pimopt/pim/host_model.h) on this machine.

1. Calibrate: `pimopt profile --calibrate-host` measures this machine's constants with a micro-benchmark (a loop
   summing 16 vectors of 4,096 int32 in cache, and 64 vectors streamed from memory); nothing of a training run.
2. Predict: train on the PIM backend with those constants as --profile-set (the reduction threads = --threads, no
   thread start: pimopt's pool keeps its threads), so the report's modeled_host_reduction is the model's
   prediction for this machine, and measured_host_reduction is what the same run's reductions took.
3. Report prediction / measurement per configuration (dense YFCC-like and sparse Criteo-like vectors, MA-SGD,
   GA-SGD with int64 gradients, ADMM's two passes, 16 to 1,024 DPUs) and the spread of that ratio.

Usage: python3 bench/host_model_check.py [--pimopt build/pimopt] [--threads 2] [--out bench/out]
Needs no Python packages. Takes about two minutes on a 2-core machine.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402
from bench_util import with_study_settings  # noqa: E402
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = [
    # (name, data, algo, dpus, extra flags)
    ("yfcc-like MA", "dense:rows=16384,features=4096,seed=1,test_rows=1", "ma", 256, ["--batch", "8"]),
    ("yfcc-like MA", "dense:rows=32768,features=4096,seed=1,test_rows=1", "ma", 1024, ["--batch", "8"]),
    ("yfcc-like GA", "dense:rows=16384,features=4096,seed=1,test_rows=1", "ga", 256, ["--batch", "2048"]),
    ("yfcc-like ADMM", "dense:rows=16384,features=4096,seed=1,test_rows=1", "admm", 256, ["--batch", "8"]),
    ("criteo-like MA", "sparse:rows=8192,features=1000000,seed=3,test_rows=1", "ma", 16, ["--batch", "64"]),
    ("criteo-like GA", "sparse:rows=8192,features=1000000,seed=3,test_rows=1", "ga", 16, ["--batch", "1024"]),
    ("criteo-like ADMM", "sparse:rows=8192,features=1000000,seed=3,test_rows=1", "admm", 16, ["--batch", "64"]),
    ("criteo-like MA", "sparse:rows=8192,features=1000000,seed=3,test_rows=1", "ma", 64, ["--batch", "32"]),
]


def run(cmd):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stdout}")
    return res.stdout


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pimopt", type=bu.path, default=os.path.join(ROOT, "build", "pimopt"))
    ap.add_argument("--threads", type=bu.thread_count, default=2)
    ap.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "bench", "out"))
    return ap


def main():
    args = build_parser().parse_args()
    os.makedirs(args.out, exist_ok=True)
    calib = run([args.pimopt, "profile", "--calibrate-host", "--budget", "3"])
    overrides = re.search(r"--profile-set (\S+)", calib).group(1)
    fields = dict(kv.split("=") for kv in overrides.split(","))
    fields["host_reduction_threads"] = str(args.threads)
    fields["host_thread_start_s"] = "0"
    profile_set = ",".join(f"{k}={v}" for k, v in fields.items())
    print(calib, end="")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, data, algo, dpus, extra in CONFIGS:
            report = os.path.join(tmp, "r.json")
            run([args.pimopt, "train", "--backend", "pim", "--data", data, "--algo", algo, "--dpus", str(dpus),
                 "--epochs", "1", "--threads", str(args.threads), "--lr", "0.01", "-q", "--no-train-metrics",
                 "--profile-set", profile_set, "--report", report] + with_study_settings(extra))
            with open(report) as f:
                r = json.load(f)
            ph = r["time"]["phases_seconds"]
            modeled, measured = ph["modeled_host_reduction"], ph["measured_host_reduction"]
            rows.append({"config": name, "dpus": dpus, "syncs": r["traffic"]["syncs"], "modeled_s": modeled,
                         "measured_s": measured, "ratio": modeled / measured})
            print(f"{name:18s} {dpus:5d} DPUs {rows[-1]['syncs']:5d} syncs: modeled {modeled:.4f} s, "
                  f"measured {measured:.4f} s, modeled/measured {modeled / measured:.2f}", flush=True)
    logs = [math.log(r["ratio"]) for r in rows]
    geo = math.exp(sum(logs) / len(logs))
    worst = max(max(r["ratio"], 1 / r["ratio"]) for r in rows)
    print(f"modeled/measured: geometric mean {geo:.2f}, worst factor {worst:.2f} over {len(rows)} configurations")
    with bu.atomic_open(os.path.join(args.out, "host_model_check.json")) as f:
        json.dump({"calibration": fields, "rows": rows, "geometric_mean_ratio": geo, "worst_factor": worst}, f,
                  indent=1)


if __name__ == "__main__":
    main()
