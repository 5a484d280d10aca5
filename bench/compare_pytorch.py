#!/usr/bin/python3
"""Epoch time of pimopt's MB-SGD and GA-SGD (logistic regression, CPU backend) side by side with the same
algorithms written in PyTorch, on the same data, batch, learning rate and epochs; plus LIBLINEAR's
time-to-accuracy on fashion-mnist and the fraction of the machine's memory bandwidth a dense pimopt epoch reaches.

Run with Debian's interpreter (needs python3-torch and python3-numpy):
    /usr/bin/python3 bench/compare_pytorch.py [--rows 200000] [--epochs 3] [--out bench/out]
It expects build/pimopt and build/bench/pimopt_membw (bench/run_bench.sh builds both).
Writes OUT/compare.json and OUT/compare.csv and prints a table. All ratios come from this one run.
"""
import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import read_binary_dataset, run, with_study_settings  # noqa: E402
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.path.join(ROOT, "build", "pimopt")
MEMBW = os.path.join(ROOT, "build", "bench", "pimopt_membw")


def load_binary(path):
    """A dense binary dataset as numpy arrays (values, labels)."""
    values, labels = read_binary_dataset(path)
    if isinstance(values, tuple):
        sys.exit(f"{path}: sparse data is not supported by this benchmark")
    return values, labels


def torch_train(x, y, algo, batch, lr, reg, epochs, workers, seed):
    """MB-SGD or GA-SGD for L2-regularized logistic regression: w <- w - lr (g/B + reg w), bias unregularized.
    GA-SGD: each global batch is cut into `workers` slices whose gradient sums are added before the step."""
    torch.manual_seed(seed)
    n, d = x.shape
    xt, yt = torch.from_numpy(x), torch.from_numpy((y > 0).astype(np.float32))
    w = torch.zeros(d, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    epoch_s = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(n)
        for start in range(0, n, batch):
            idx = perm[start:start + batch]
            rows = idx.shape[0]
            slices = [idx] if algo == "mbsgd" else list(torch.tensor_split(idx, workers))
            for part in slices:
                xb, yb = xt.index_select(0, part), yt.index_select(0, part)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(xb @ w + b, yb, reduction="sum")
                loss.backward()  # gradients accumulate over the slices (the host's sum)
            with torch.no_grad():
                w.mul_(1 - lr * reg).sub_(w.grad, alpha=lr / rows)
                b.sub_(b.grad, alpha=lr / rows)
                w.grad.zero_()
                b.grad.zero_()
        epoch_s.append(time.perf_counter() - t0)
    return w.detach().numpy(), float(b.detach()), epoch_s


def accuracy(w, b, x, y):
    return float(np.mean(((x @ w + b) > 0) == (y > 0)))


def pimopt_train(train, test, algo, batch, lr, reg, epochs, workers, seed, threads, out):
    report = os.path.join(out, f"pimopt_{algo}.json")
    cmd = [PIMOPT, "train", "--data", train, "--algo", algo, "--batch", str(batch), "--lr", str(lr), "--reg",
           str(reg), "--epochs", str(epochs), "--seed", str(seed), "--threads", str(threads), "--no-train-metrics",
           "--report", report, "-q"]
    if test:
        cmd += ["--test", test]
    if algo == "ga":
        cmd += ["--workers", str(workers)]
    run(with_study_settings(cmd))
    with open(report) as f:
        r = json.load(f)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200000, help="rows of the dense synthetic set (4096 features)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1, help="learning rate on fashion-mnist")
    ap.add_argument("--dense-lr", type=float, default=0.002,
                    help="learning rate on the dense set (4096 features in [0,1]: lr * n/4 must stay well below 2)")
    ap.add_argument("--reg", type=float, default=1e-5)
    ap.add_argument("--workers", type=int, default=8, help="GA-SGD workers")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--skip-dense", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(args.threads)
    results = {"machine": {"cpus": os.cpu_count(), "torch": torch.__version__, "torch_threads": args.threads}}

    bw = json.loads(run([MEMBW, "1024", str(args.threads)]))
    results["memory_bandwidth"] = bw

    datasets = []
    fm_train, fm_test = os.path.join(args.out, "fm_train.bin"), os.path.join(args.out, "fm_test.bin")
    run([PIMOPT, "convert", "fashion-mnist", fm_train])
    run([PIMOPT, "convert", "fashion-mnist:test", fm_test])
    datasets.append(("fashion-mnist", fm_train, fm_test, 64, args.lr))
    if not args.skip_dense:
        dense = os.path.join(args.out, f"dense_{args.rows}.bin")
        dense_test = os.path.join(args.out, f"dense_{args.rows}_test.bin")
        if not os.path.exists(dense):
            run([PIMOPT, "gen", "dense", "--rows", str(args.rows), "--features", "4096", "--out", dense])
            run([PIMOPT, "gen", "dense", "--rows", "10000", "--features", "4096", "--first-row", str(args.rows),
                 "--out", dense_test])
        datasets.append((f"dense {args.rows}x4096", dense, dense_test, args.batch, args.dense_lr))

    rows = []
    for name, train, test, batch, lr in datasets:
        x, y = load_binary(train)
        xt, yt = load_binary(test)
        for algo in ("mbsgd", "ga"):
            rep = pimopt_train(train, test, algo, batch, lr, args.reg, args.epochs, args.workers, 1,
                               args.threads, args.out)
            p_epochs = [e["train_seconds"] for e in rep["epochs"]]
            p_acc = rep["final"]["test"]["accuracy"]
            w, b, t_epochs = torch_train(x, y, algo, batch, lr, args.reg, args.epochs, args.workers, 1)
            t_acc = accuracy(w, b, xt, yt)
            p_med, t_med = float(np.median(p_epochs)), float(np.median(t_epochs))
            row = {"dataset": name, "algo": algo, "batch": batch, "lr": lr, "epochs": args.epochs,
                   "pimopt_epoch_s": p_med, "torch_epoch_s": t_med, "speedup": t_med / p_med,
                   "pimopt_test_acc": p_acc, "torch_test_acc": t_acc}
            data_bytes = x.nbytes
            row["pimopt_data_gb_per_s"] = data_bytes / p_med / 1e9
            row["fraction_of_read_bw"] = row["pimopt_data_gb_per_s"] / bw["read_gb_per_s"]
            row["fraction_of_copy_bw"] = row["pimopt_data_gb_per_s"] / bw["copy_gb_per_s"]
            rows.append(row)
            print(f"{name:22s} {algo:6s} B={batch:<5d} pimopt {p_med:8.4f} s/epoch  torch {t_med:8.4f} s/epoch  "
                  f"speedup {t_med / p_med:5.2f}x  acc {p_acc:.4f} vs {t_acc:.4f}  "
                  f"data {row['pimopt_data_gb_per_s']:.2f} GB/s = {100 * row['fraction_of_read_bw']:.0f}% of read bw",
                  flush=True)
        del x, xt
    results["epoch_time"] = rows

    # LIBLINEAR time-to-accuracy on fashion-mnist: LIBLINEAR's train time vs pimopt MB-SGD's cumulative training
    # time until its test accuracy first reaches LIBLINEAR's minus 0.5 point.
    fm_train_svm, fm_test_svm = os.path.join(args.out, "fm_train.svm"), os.path.join(args.out, "fm_test.svm")
    run([PIMOPT, "convert", "fashion-mnist", fm_train_svm])
    run([PIMOPT, "convert", "fashion-mnist:test", fm_test_svm])
    model = os.path.join(args.out, "liblinear.model")
    t0 = time.perf_counter()
    run(["liblinear-train", "-q", "-s", "0", "-c", "1", "-B", "1", fm_train_svm, model])
    ll_s = time.perf_counter() - t0
    out = run(["liblinear-predict", fm_test_svm, model, os.path.join(args.out, "liblinear.pred")])
    ll_acc = float(out.split("=")[1].split("%")[0]) / 100
    rep = pimopt_train(fm_train, fm_test, "mbsgd", 64, args.lr, args.reg, 10, args.workers, 1, args.threads,
                       args.out)
    target = ll_acc - 0.005
    elapsed, reached = 0.0, None
    for e in rep["epochs"]:
        elapsed += e["train_seconds"]
        if e["test"]["accuracy"] >= target:
            reached = elapsed
            break
    results["liblinear_time_to_accuracy"] = {
        "liblinear_train_s": ll_s, "liblinear_test_acc": ll_acc, "target_acc": target,
        "pimopt_mbsgd_s_to_target": reached,
        "speedup": (ll_s / reached) if reached else None}
    print(f"LIBLINEAR -s 0: {ll_s:.2f} s to {ll_acc:.4f}; pimopt mbsgd reaches {target:.4f} after "
          f"{reached if reached is not None else float('nan'):.3f} s"
          + (f" ({ll_s / reached:.1f}x faster)" if reached else " (never)"))
    print(f"memory bandwidth: copy {bw['copy_gb_per_s']:.2f} GB/s, read {bw['read_gb_per_s']:.2f} GB/s "
          f"({args.threads} threads)")

    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "compare.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
