#!/usr/bin/python3
"""Small real datasets (the ones scikit-learn bundles: Wisconsin breast cancer, handwritten digits, wine) as LIBSVM
files, and pimopt against LIBLINEAR on them.

  convert  (needs Debian's python3-sklearn) writes OUT/{breast_cancer,digits,wine}_{train,test}.svm: a stratified
           75 / 25 split with seed 0, labels +1 / -1 (breast cancer: malignant = +1; digits: 5-9 = +1; wine:
           cultivar 1 = +1), features on their natural scales. tests/data/real holds the files this wrote.
  compare  runs, per dataset, pimopt with no flags, pimopt --scale minmax, pimopt tune (cross-validated grid, then
           trained on all the training rows) and LIBLINEAR (-s 0 and -s 2, C = 1, bias), and prints the test
           accuracies and wall times as a markdown table. Needs build/pimopt and liblinear-tools only.

Usage: /usr/bin/python3 bench/real_datasets.py convert [--out tests/data/real]
       python3 bench/real_datasets.py compare [--data tests/data/real] [--check POINTS]
--check exits 1 when tuned pimopt is more than POINTS percentage points behind LIBLINEAR (the better of -s 0 and -s 2)
on any dataset (the CTest real_datasets_tuned_near_liblinear).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.environ.get("PIMOPT", os.path.join(ROOT, "build", "pimopt"))
DATASETS = ["breast_cancer", "digits", "wine"]
TUNE_FLAGS = ["--scale", "minmax", "--lr-schedule", "inverse-sqrt", "--lr-decay", "1", "--epochs", "100",
              "--cv", "5", "--grid", "reg=1e-6,1e-5,1e-4,1e-3,1e-2;lr=0.1,0.5,1,2;model=lr,svm"]


def convert(args):
    import sklearn.datasets as sd
    from sklearn.model_selection import train_test_split
    sets = {"breast_cancer": (sd.load_breast_cancer(), lambda y: y == 0),  # target 0 = malignant
            "digits": (sd.load_digits(), lambda y: y >= 5),
            "wine": (sd.load_wine(), lambda y: y == 1)}
    os.makedirs(args.out, exist_ok=True)
    for name, (bunch, positive) in sets.items():
        y = [1 if positive(t) else -1 for t in bunch.target]
        x_train, x_test, y_train, y_test = train_test_split(bunch.data, y, test_size=0.25, random_state=0,
                                                            stratify=y)
        for part, xs, ys in (("train", x_train, y_train), ("test", x_test, y_test)):
            path = os.path.join(args.out, f"{name}_{part}.svm")
            with open(path + ".tmp", "w") as f:
                for row, label in zip(xs, ys):
                    feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row) if v != 0)
                    f.write(f"{'+1' if label > 0 else '-1'} {feats}\n")
            os.replace(path + ".tmp", path)
            print(f"wrote {path}: {len(ys)} rows x {xs.shape[1]} features, {sum(1 for v in ys if v > 0)} positive")


def timed(cmd):
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stdout}")
    return res.stdout, time.perf_counter() - t0


def pimopt_accuracy(sub, train, test, flags):
    out, seconds = timed([PIMOPT, sub, "--data", train, "--test", test, "-q"] + flags)
    # The summary row: algo model train_acc test_acc ...
    row = [line.split() for line in out.splitlines() if re.match(r"^\w+\s+(lr|svm)\s+[0-9.]+\s+[0-9.]+", line)]
    best = re.search(r"best: (.*) \(cv", out)
    return float(row[-1][3]), seconds, best.group(1) if best else ""


def liblinear_accuracy(solver, train, test):
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        _, t1 = timed(["liblinear-train", "-s", str(solver), "-c", "1", "-B", "1", "-q", train, model])
        out, t2 = timed(["liblinear-predict", test, model, os.path.join(tmp, "p")])
    return float(re.search(r"Accuracy = ([0-9.]+)%", out).group(1)) / 100, t1 + t2


def compare(args):
    lines = ["| dataset | rows (train / test) | pimopt, no flags | pimopt `--scale minmax` | pimopt tune (best setting) "
             "| LIBLINEAR `-s 0` | LIBLINEAR `-s 2` |", "|---" * 7 + "|"]
    worst_gap = 0.0
    for name in DATASETS:
        train = os.path.join(args.data, f"{name}_train.svm")
        test = os.path.join(args.data, f"{name}_test.svm")
        rows = [sum(1 for _ in open(p)) for p in (train, test)]
        plain, t_plain, _ = pimopt_accuracy("train", train, test, [])
        scaled, t_scaled, _ = pimopt_accuracy("train", train, test, ["--scale", "minmax"])
        tuned, t_tuned, best = pimopt_accuracy("tune", train, test, TUNE_FLAGS)
        lr, t_lr = liblinear_accuracy(0, train, test)
        svm, t_svm = liblinear_accuracy(2, train, test)
        worst_gap = max(worst_gap, max(lr, svm) - tuned)
        lines.append(f"| {name} | {rows[0]} / {rows[1]} | {plain:.4f} ({t_plain:.2f} s) | {scaled:.4f} ({t_scaled:.2f} s) "
                     f"| {tuned:.4f} ({t_tuned:.1f} s; `{best}`) | {lr:.4f} ({t_lr:.2f} s) | {svm:.4f} ({t_svm:.2f} s) |")
    print("\n".join(lines))
    if args.check is not None and 100 * worst_gap > args.check:
        sys.exit(f"FAIL: tuned pimopt is {100 * worst_gap:.2f} points behind LIBLINEAR (allowed {args.check})")
    print(f"worst gap of tuned pimopt to LIBLINEAR: {100 * worst_gap:.2f} points")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "real"))
    m = sub.add_parser("compare")
    m.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "real"))
    m.add_argument("--check", type=float)
    args = ap.parse_args()
    {"convert": convert, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
