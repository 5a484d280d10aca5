#!/usr/bin/python3
"""Small real datasets (the ones scikit-learn bundles: Wisconsin breast cancer, handwritten digits, wine) as LIBSVM
files, and pimopt against LIBLINEAR on them.

  convert  (needs Debian's python3-sklearn) writes OUT/{breast_cancer,digits,wine}_{train,test}.svm: a stratified
           75 / 25 split with seed 0, labels +1 / -1 (breast cancer: malignant = +1; digits: 5-9 = +1; wine:
           cultivar 1 = +1), features on their natural scales. tests/data/real holds the files this wrote.
  compare  runs, per dataset and model (LR, SVM), LIBLINEAR (C = 1, bias; -s 0 for LR, -s 2, the squared hinge,
           for SVM) and pimopt with no flags beyond the data and the model, for every algorithm, and prints markdown
           tables: test
           accuracy on the split with the epochs pimopt used and the wall times, and 5-fold cross-validated accuracy
           (liblinear-train -v 5, pimopt train --cv 5) on the training rows, which resolves differences a few test
           rows cannot. Then pimopt tune (cross-validated reg and model). Needs build/pimopt and liblinear-tools only.
           --extra NAME=TRAIN,TEST adds a dataset (e.g. fashion-mnist converted to LIBSVM) to the test-split table
           only (no cross-validation, no tuning). --optimum (with /usr/bin/python3 and python3-sklearn) adds how far
           each run's training objective ends above the optimum of the same objective.

Usage: /usr/bin/python3 bench/real_datasets.py convert [--out tests/data/real]
       python3 bench/real_datasets.py compare [--data tests/data/real] [--check POINTS] [--check-tuned POINTS]
                                              [--extra NAME=TRAIN,TEST ...] [--algos sgd,mbsgd,...] [--optimum]
--check exits 1 when pimopt with no flags (any algorithm, either model) is more than POINTS percentage points behind
LIBLINEAR's cross-validated accuracy (-s 0 / -s 2); --check-tuned when tuned pimopt is more than POINTS behind
LIBLINEAR's better test accuracy (the CTest real_datasets_defaults_near_liblinear).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.environ.get("PIMOPT", os.path.join(ROOT, "build", "pimopt"))
DATASETS = ["breast_cancer", "digits", "wine"]
ALGOS = ["sgd", "mbsgd", "ga", "ma", "admm"]
LR_ONLY = {"newton", "newton-cg", "tron"}  # the logistic loss only: their SVM cells are "-"
# LIBLINEAR's solvers: the logistic loss (-s 0); for the SVM its default, the squared hinge (-s 2, primal): its hinge
# solver (-s 3) hits its iteration cap on these raw features (digits: 77.4% cross-validated against 89.9%).
SOLVER = {"lr": 0, "svm": 2}
TUNE_FLAGS = ["--cv", "5", "--grid", "reg=auto,1e-5,1e-4,1e-3,1e-2;model=lr,svm"]


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
            with bu.atomic_open(path) as f:
                for row, label in zip(xs, ys):
                    feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row) if v != 0)
                    f.write(f"{'+1' if label > 0 else '-1'} {feats}\n")
            print(f"wrote {path}: {len(ys)} rows x {xs.shape[1]} features, {sum(1 for v in ys if v > 0)} positive")


def timed(cmd):
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stdout}")
    return res.stdout, time.perf_counter() - t0


def pimopt_run(sub, train, test, flags):
    """(test accuracy, wall seconds, epochs, best setting of tune or "", final training objective, the run's
    relative duality gap at its stop: pimopt's own bound on (F - F*) / F, None when not computed)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        out, seconds = timed([PIMOPT, sub, "--data", train, "--test", test, "-q", "--report", report] + flags)
        with open(report) as f:
            r = json.load(f)
    best = re.search(r"best: (.*) \(cv", out)
    certificate = r.get("stopped", {}).get("relative_duality_gap")
    # A run that regularizes the bias (cocoa) also reports the objective without that term: the one F* is of.
    train = r["final"]["train"]
    objective = train.get("objective_without_bias_penalty", train["objective"])
    return (r["final"]["test"]["accuracy"], seconds, len(r["epochs"]), best.group(1) if best else "", objective,
            certificate)


def optimum(train, model):
    """The optimum of pimopt's default objective on TRAIN: features min-max scaled by the training set, mean loss +
    1/(2N) ||w||^2 (LIBLINEAR's C = 1 over N), unpenalized bias; scikit-learn solves it to a tight tolerance (the
    SVM's bias is penalized lightly through a large intercept scaling). Needs Debian's python3-sklearn."""
    import warnings
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import LinearSVC
    warnings.filterwarnings("ignore")  # LinearSVC warns it stopped at max_iter; its F is an upper bound of F*
    x, y = load_svmlight_file(train)
    x = MinMaxScaler().fit_transform(x.toarray())
    y = np.where(y > 0, 1, -1)
    if model == "lr":
        fit = LogisticRegression(C=1, max_iter=50000, tol=1e-12).fit(x, y)
    else:
        fit = LinearSVC(C=1, loss="hinge", max_iter=500000, tol=1e-10, intercept_scaling=100).fit(x, y)
    margin = y * (x @ fit.coef_[0] + fit.intercept_[0])
    loss = np.logaddexp(0, -margin) if model == "lr" else np.maximum(0, 1 - margin)
    return float(np.mean(loss) + 0.5 / len(y) * np.sum(fit.coef_ ** 2))


def pimopt_cv(train, flags):
    out, _ = timed([PIMOPT, "train", "--data", train, "--cv", "5", "-q"] + flags)
    return float(re.search(r"cross-validation: accuracy ([0-9.]+)", out).group(1))


def liblinear_accuracy(solver, train, test):
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        _, t1 = timed(["liblinear-train", "-s", str(solver), "-c", "1", "-B", "1", "-q", train, model])
        out, t2 = timed(["liblinear-predict", test, model, os.path.join(tmp, "p")])
    return float(re.search(r"Accuracy = ([0-9.]+)%", out).group(1)) / 100, t1 + t2


def liblinear_cv(solver, train):
    out, _ = timed(["liblinear-train", "-s", str(solver), "-c", "1", "-B", "1", "-v", "5", "-q", train])
    return float(re.search(r"Accuracy = ([0-9.]+)%", out).group(1)) / 100


def compare(args):
    algos = args.algos
    sets = [(n, os.path.join(args.data, f"{n}_train.svm"), os.path.join(args.data, f"{n}_test.svm"), True)
            for n in DATASETS]
    for name, train, test in args.extra:
        sets.append((name, train, test, False))
    head = "| dataset | rows (train / test) | model | LIBLINEAR | " + " | ".join(f"pimopt {a}" for a in algos) + " |"
    rule = "|---" * (4 + len(algos)) + "|"
    split_lines, cv_lines, tune_lines = [head, rule], [head.replace("rows (train / test)", "training rows"), rule], [
        "| dataset | pimopt tune: best setting | test accuracy (time) | LIBLINEAR best of -s 0 / -s 2 |",
        "|---|---|---|---|"]
    gap_lines = ["| dataset | model | optimum F* | " + " | ".join(f"pimopt {a}" for a in algos) + " |",
                 "|---" * (3 + len(algos)) + "|"]
    worst_cv, worst_tuned = 0.0, 0.0
    for name, train, test, small in sets:
        rows = [sum(1 for _ in open(p)) for p in (train, test)]
        best_liblinear = 0.0
        for model in ("lr", "svm"):
            ll, t_ll = liblinear_accuracy(SOLVER[model], train, test)
            best_liblinear = max(best_liblinear, ll)
            cells, gaps = [], []
            best_objective = optimum(train, model) if args.optimum and small else None
            for algo in algos:
                if algo in LR_ONLY and model != "lr":
                    cells.append("-")
                    gaps.append("-")
                    continue
                acc, seconds, epochs, _, objective, certificate = pimopt_run(
                    "train", train, test, ["--model", model, "--algo", algo])
                cells.append(f"{acc:.4f} ({epochs} ep, {seconds:.2f} s)")
                bound = f"<= {100 * certificate:.2f}%" if certificate is not None else "-"
                if best_objective:
                    gaps.append(f"{100 * (objective - best_objective) / best_objective:.2f}% ({bound})")
                else:
                    gaps.append(f"- ({bound})")
            split_lines.append(f"| {name} | {rows[0]} / {rows[1]} | {model} | {ll:.4f} ({t_ll:.2f} s) | "
                               + " | ".join(cells) + " |")
            star = f"{best_objective:.5f}" if best_objective else "-"
            gap_lines.append(f"| {name} | {model} | {star} | " + " | ".join(gaps) + " |")
            if not small:
                continue
            ll_cv = liblinear_cv(SOLVER[model], train)
            cv_cells = []
            for algo in algos:
                if algo in LR_ONLY and model != "lr":
                    cv_cells.append("-")
                    continue
                acc = pimopt_cv(train, ["--model", model, "--algo", algo])
                worst_cv = max(worst_cv, ll_cv - acc)
                cv_cells.append(f"{acc:.4f}")
            cv_lines.append(f"| {name} | {rows[0]} | {model} | {ll_cv:.4f} | " + " | ".join(cv_cells) + " |")
        if small:
            tuned, t_tuned, _, best, _, _ = pimopt_run("tune", train, test, TUNE_FLAGS)
            worst_tuned = max(worst_tuned, best_liblinear - tuned)
            tune_lines.append(f"| {name} | `{best}` | {tuned:.4f} ({t_tuned:.1f} s) | {best_liblinear:.4f} |")
    print("Test accuracy (epochs used, wall time of the whole command):\n")
    print("\n".join(split_lines))
    print("\n5-fold cross-validated accuracy on the training rows:\n")
    print("\n".join(cv_lines))
    print("\nTraining objective above the optimum of the same objective, (F - F*) / F* (with --optimum), and in "
          "parentheses pimopt's own certificate at its stop, the relative duality gap (F - D) / F >= (F - F*) / F:\n")
    print("\n".join(gap_lines))
    print(f"\npimopt tune {' '.join(TUNE_FLAGS)}:\n")
    print("\n".join(tune_lines))
    print(f"\nworst gap of pimopt (no flags) to LIBLINEAR, cross-validated: {100 * worst_cv:.2f} points; "
          f"of tuned pimopt on the test split: {100 * worst_tuned:.2f} points")
    if args.check is not None and 100 * worst_cv > args.check:
        sys.exit(f"FAIL: pimopt with no flags is {100 * worst_cv:.2f} points behind LIBLINEAR (allowed {args.check})")
    if args.check_tuned is not None and 100 * worst_tuned > args.check_tuned:
        sys.exit(f"FAIL: tuned pimopt is {100 * worst_tuned:.2f} points behind LIBLINEAR (allowed {args.check_tuned})")


def extra_dataset(text):
    """--extra NAME=TRAIN,TEST: (NAME, TRAIN, TEST), both files existing."""
    name, _, files = text.partition("=")
    parts = files.split(",")
    if not name or len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"must be NAME=TRAIN,TEST, got {text!r}")
    for f in parts:
        bu.input_file(f)  # names the file that is missing
    return name, parts[0], parts[1]


extra_dataset.kind = "text"


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "tests", "data", "real"))
    m = sub.add_parser("compare")
    m.add_argument("--data", type=bu.input_dir, default=os.path.join(ROOT, "tests", "data", "real"))
    m.add_argument("--check", type=bu.percentage_points, metavar="POINTS")
    m.add_argument("--check-tuned", type=bu.percentage_points, metavar="POINTS")
    m.add_argument("--extra", type=extra_dataset, action="append", default=[], metavar="NAME=TRAIN,TEST")
    m.add_argument("--algos", type=bu.NameList(bu.PIMOPT_ALGORITHMS, "algorithm"), default=list(ALGOS))
    m.add_argument("--optimum", action="store_true", help="also the objective gap to scikit-learn's optimum")
    return ap


def main():
    args = build_parser().parse_args()
    {"convert": convert, "compare": compare}[args.cmd](args)

if __name__ == "__main__":
    main()
