#!/usr/bin/env python3
"""pimopt's certified methods (cocoa, and newton for LR) against LIBLINEAR's optimum of the same objective, and
their time against liblinear-train's.

Both solve F_b(w, b) = (1/N) sum_i loss(y_i (w.x_i + b)) + (1/(2N)) (||w||^2 + b^2): LIBLINEAR's C = 1 with its bias
feature -B 1 (divided by N), pimopt's --reg auto with the bias regularized as cocoa and newton do. The features are
min-max scaled here (by the training rows) and both tools read the same scaled file (pimopt with --scale none).
LIBLINEAR solves to a tight tolerance (-e 1e-8: -s 0 for LR, -s 3, dual coordinate descent, for the hinge loss);
its model's F_b, computed here, is an upper bound of the optimum F*. For each set, model and pimopt algorithm:
  - pimopt's own certificate at its stop, the relative duality gap, is at most --tol (auto: 1%),
  - its distance to LIBLINEAR's objective is within that certificate: (F - F_lib) / F <= gap,
  - its dual value D = F - gap is below F_lib (weak duality: D <= F* <= F_lib).
With --time FILE [FILE ...] (LIBSVM files, e.g. fashion-mnist written by `pimopt convert fashion-mnist:train fm.svm
--format libsvm` and a Criteo-shaped set from `pimopt gen sparse --rows 300000 --out criteo.svm`): the wall time of `liblinear-train -s S -c 1 -B 1 FILE` (its default tolerance, one thread) against
`pimopt train --model M --data FILE --scale none --no-train-metrics` to its certified 1% (the default algorithm:
newton for LR, cocoa for the SVM; also cocoa for LR and the SVM with --no-shrinking), all parsing the same text
file, pimopt on all the machine's threads and on one (--threads 1), side by side.

Usage: dual_optimum.py [--data DIR] [--check] [--time FILE [FILE ...]]   (python3 on PATH suffices: no numpy)
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.environ.get("PIMOPT", os.path.join(ROOT, "build", "pimopt"))
SETS = ["breast_cancer", "digits", "wine"]
LIBLINEAR_SOLVER = {"lr": 0, "svm": 3}  # the same loss: logistic (primal Newton), hinge (dual CD)
# pimopt's algorithms with a certificate per model, the default first (newton takes the logistic loss only).
ALGOS = {"lr": ["newton", "cocoa"], "svm": ["cocoa"]}


def read_libsvm(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            x = {}
            for item in parts[1:]:
                j, v = item.split(":")
                x[int(j)] = float(v)
            rows.append((1 if float(parts[0]) > 0 else -1, x))
    return rows


def min_max_scaled(rows):
    cols = sorted({j for _, x in rows for j in x})
    lo = {j: min(x.get(j, 0.0) for _, x in rows) for j in cols}
    hi = {j: max(x.get(j, 0.0) for _, x in rows) for j in cols}
    out = []
    for y, x in rows:
        scaled = {}
        for j in cols:
            span = hi[j] - lo[j]
            v = (x.get(j, 0.0) - lo[j]) / span if span > 0 else 0.0
            if v != 0:
                scaled[j] = v
        out.append((y, scaled))
    return out


def write_libsvm(rows, path):
    with open(path, "w") as f:
        for y, x in rows:
            f.write(("+1" if y > 0 else "-1") + "".join(f" {j}:{v:.9g}" for j, v in sorted(x.items())) + "\n")


def liblinear_objective(model_path, rows, model):
    """F_b of a LIBLINEAR model (-B 1: its last weight is the bias) on ROWS."""
    with open(model_path) as f:
        lines = f.read().split("\n")
    labels = next(list(map(int, l.split()[1:])) for l in lines if l.startswith("label"))
    weights = [float(v) for v in lines[lines.index("w") + 1:] if v.strip()]
    sign = 1 if labels[0] == 1 else -1  # LIBLINEAR's weights score its first label
    bias = weights[-1]
    total = 0.0
    for y, x in rows:
        m = y * sign * (sum(weights[j - 1] * v for j, v in x.items() if j <= len(weights) - 1) + bias)
        if model == "svm":
            total += max(0.0, 1 - m)
        else:
            total += math.log1p(math.exp(-m)) if m > 0 else -m + math.log1p(math.exp(m))
    n = len(rows)
    return total / n + 0.5 / n * sum(w * w for w in weights)


def run(cmd):
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stdout}")
    return time.perf_counter() - t0


def pimopt_run(path, model, tmp, extra=()):
    """pimopt train with --scale none, -q and EXTRA (no --algo in EXTRA: the default, newton for LR, cocoa for SVM)."""
    report = os.path.join(tmp, "r.json")
    seconds = run([PIMOPT, "train", "--model", model, "--data", path, "--scale", "none", "-q",
                   "--report", report, *extra])
    with open(report) as f:
        r = json.load(f)
    last = r["epochs"][-1]
    return {"objective": last["train"]["objective"], "gap": last.get("duality_gap"),
            "relative_gap": last.get("relative_duality_gap"), "epochs": len(r["epochs"]),
            "reason": r["stopped"]["reason"], "tol": r["stopped"]["tol"], "seconds": seconds,
            "algo": r["config"]["algo"] if "algo" in r.get("config", {}) else "?"}


def compare(args):
    failures = []
    print("| dataset | model | algo | LIBLINEAR F_b (tight) | pimopt F_b | (F - F_lib) / F_lib | certified gap | "
          "epochs | time (pimopt / LIBLINEAR) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in SETS:
            rows = min_max_scaled(read_libsvm(os.path.join(args.data, f"{name}_train.svm")))
            path = os.path.join(tmp, f"{name}.svm")
            write_libsvm(rows, path)
            for model in ("lr", "svm"):
                model_path = os.path.join(tmp, f"{name}_{model}.model")
                t_lib = run(["liblinear-train", "-s", str(LIBLINEAR_SOLVER[model]), "-c", "1", "-B", "1", "-e", "1e-8",
                             "-q", path, model_path])
                f_lib = liblinear_objective(model_path, rows, model)
                for algo in ALGOS[model]:
                    p = pimopt_run(path, model, tmp, ["--algo", algo])
                    f, gap, rel = p["objective"], p["gap"], p["relative_gap"]
                    print(f"| {name} | {model} | {algo} | {f_lib:.6f} | {f:.6f} | {100 * (f - f_lib) / f_lib:.3f}% | "
                          f"{100 * rel:.3f}% | {p['epochs']} | {p['seconds']:.2f} s / {t_lib:.2f} s |")
                    where = f"{name} {model} {algo}"
                    if rel is None or rel > p["tol"] + 1e-12:
                        failures.append(f"{where}: certified gap {rel} above --tol {p['tol']} ({p['reason']})")
                        continue
                    if (f - f_lib) / f > rel + 1e-6:
                        failures.append(f"{where}: F is {(f - f_lib) / f:.3g} above LIBLINEAR's, beyond its "
                                        f"certificate {rel:.3g}")
                    if f - gap > f_lib * (1 + 1e-6):
                        failures.append(f"{where}: the dual {f - gap} exceeds LIBLINEAR's primal {f_lib}: not a "
                                        "lower bound")
    if args.time:
        # Each pimopt run without per-epoch train metrics (a run that stops on its certificate then checks it at
        # spaced epochs), on the machine's threads and on one; LIBLINEAR single-threaded, all parsing the same file.
        print("\n| file | model | liblinear-train (default tolerance) | pimopt train (certified 1%), all threads | "
              "ratio | the same on 1 thread | threads' speed-up |")
        print("|---|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmp:
            for path in args.time:
                for model in ("lr", "svm"):
                    t_lib = run(["liblinear-train", "-s", str(LIBLINEAR_SOLVER[model]), "-c", "1", "-B", "1", "-q",
                                 path, os.path.join(tmp, "m")])
                    variants = [("default", [])] + [(f"`--algo {a}`", ["--algo", a]) for a in ALGOS[model][1:]]
                    if model == "svm":
                        variants.append(("`--no-shrinking`", ["--no-shrinking"]))
                    for label, extra in variants:
                        p = pimopt_run(path, model, tmp, [*extra, "--no-train-metrics"])
                        q = pimopt_run(path, model, tmp, [*extra, "--no-train-metrics", "--threads", "1"])
                        print(f"| {os.path.basename(path)} | {model} (`-s {LIBLINEAR_SOLVER[model]}`), {label} "
                              f"({p['algo']}) | {t_lib:.2f} s | "
                              f"{p['seconds']:.2f} s ({p['epochs']} epochs, gap {100 * p['relative_gap']:.2f}%) | "
                              f"{p['seconds'] / t_lib:.2f} | {q['seconds']:.2f} s | "
                              f"{q['seconds'] / p['seconds']:.2f}x |")
    for f in failures:
        print("FAIL:", f)
    if args.check and failures:
        sys.exit(1)


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=bu.input_dir, default=os.path.join(ROOT, "tests", "data", "real"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a check fails")
    ap.add_argument("--time", metavar="FILE", type=bu.input_file, nargs="+",
                    help="also time both tools on these LIBSVM files (e.g. fashion-mnist's and a Criteo-shaped "
                         "`pimopt gen sparse --rows 300000`)")
    return ap


def main():
    compare(build_parser().parse_args())

if __name__ == "__main__":
    main()
