#!/usr/bin/python3
"""pimopt against its peers, interleaved: PyTorch, scikit-learn's SGDClassifier and LIBLINEAR on the same data,
loss, regularization, batch and learning rate; every contender runs in a child process of its own, and every
round runs each contender once, in the same order (A, B, C, A, B, C, ...), so that a change in the machine's load
touches all of them alike. Tables give the median and the spread (min-max) over the rounds and the load average
before each round.

    /usr/bin/python3 bench/peers.py [--cases fashion-mnist,dense,criteo,parse,emulator] [--rounds 3]
                                    [--threads 2] [--dense-rows 200000] [--criteo-rows 1000000] [--out bench/out]

Cases:
  fashion-mnist  60,000 x 784 (classes 0,2,4,6 against the rest), batch 1, 8, 64 and 256: pimopt SGD / MB-SGD,
                 PyTorch MB-SGD, SGDClassifier (batch 1 only: it has no mini-batches), LIBLINEAR -s 0.
  dense          DENSE_ROWS x 4,096 synthetic (3.3 GB at 200,000 rows), batch 1, 64 and 256; the data rate of a
                 pimopt epoch against this machine's memory bandwidth (build/bench/pimopt_membw, every round).
  criteo         CRITEO_ROWS x 2^20 features, 39 non-zeros per row (the Criteo shape): pimopt SGD, MB-SGD and
                 GA-SGD at batch 256, SGDClassifier.
  parse          load throughput of the criteo set: pimopt reading LIBSVM text and its binary cache, against
                 liblinear-train's own reading (liblinear-train -s 0 -e 1e9: one solver iteration after the parse).
  emulator       a fashion-mnist epoch of MA-SGD, ADMM and CoCoA with 2,048 workers on the CPU backend and on the emulated
                 PIM system (2,048 DPUs, 16 tasklets): the emulator's cost against native training.

Every contender trains logistic regression with L2 strength 1/rows (LIBLINEAR's C = 1), a constant learning rate
(pimopt's automatic one for that batch: `resolved.lr` of its report), features as stored (no scaling), shuffled
epochs. Time per epoch is training only (no loading, no evaluation: pimopt's report `train_seconds`; the other
trainers are timed around their epoch loop); the test accuracy after each epoch is evaluated outside the timing.
Time to accuracy: the training time until the test accuracy first reaches the target (LIBLINEAR's test accuracy
minus 0.5 point where LIBLINEAR runs, else the best final accuracy of the case minus 0.5 point). LIBLINEAR solves
to its own tolerance: its time is its whole run less the same run stopped after one iteration (the parse). Peak RSS
is each child's maximum resident set (wait4), against the size of the training data as float32.
Needs python3-torch, python3-sklearn, python3-numpy, liblinear-tools (scripts/setup.sh --bench); expects
build/pimopt and build/bench/pimopt_membw. Writes OUT/peers.json and prints markdown tables.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402
from bench_util import PIMOPT, ROOT, read_binary_dataset, run  # noqa: E402

MEMBW = os.path.join(ROOT, "build", "bench", "pimopt_membw")
SELF = os.path.abspath(__file__)


# ------------------------------------------------------------------------------------------ child processes
def run_measured(cmd):
    """Runs CMD in a child; returns (stdout, wall seconds, peak RSS in MB). Exits with its output on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{out}")
    return out, wall, usage.ru_maxrss / 1024


def load_xy(path):
    """A binary dataset as (X, y01): a float32 array or a SciPy CSR matrix, and labels in {0, 1}."""
    import numpy as np
    values, labels = read_binary_dataset(path)
    if isinstance(values, tuple):
        import scipy.sparse
        row_ptr, col, val, features = values
        values = scipy.sparse.csr_matrix((val, col.astype(np.int32), row_ptr.astype(np.int64)),
                                         shape=(len(row_ptr) - 1, features))
    return values, (labels > 0).astype(np.float32)


def auc(labels01, scores):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(labels01, scores))


def worker_torch(a):
    """MB-SGD for L2-regularized logistic regression in PyTorch: w <- w (1 - lr reg) - lr g / B, bias unregularized
    (pimopt's step)."""
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    x, y = load_xy(a.data)
    xt_np, yt_np = load_xy(a.test)
    load_s = time.perf_counter() - t0
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    xt = torch.from_numpy(xt_np)
    n, d = xs.shape
    w = torch.zeros(d, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    epoch_s, test_acc, test_auc = [], [], []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(n)
        for start in range(0, n, a.batch):
            idx = perm[start:start + a.batch]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(xs.index_select(0, idx) @ w + b,
                                                                        ys.index_select(0, idx), reduction="sum")
            loss.backward()
            with torch.no_grad():
                rows = idx.shape[0]
                w.mul_(1 - a.lr * a.reg).sub_(w.grad, alpha=a.lr / rows)
                b.sub_(b.grad, alpha=a.lr / rows)
                w.grad.zero_()
                b.grad.zero_()
        epoch_s.append(time.perf_counter() - t0)
        with torch.no_grad():
            scores = (xt @ w + b).numpy()
        test_acc.append(float(np.mean((scores > 0) == (yt_np > 0))))
        test_auc.append(auc(yt_np, scores))
    return {"epoch_s": epoch_s, "test_acc": test_acc, "test_auc": test_auc, "load_s": load_s}


def worker_sklearn(a):
    """SGDClassifier (logistic loss, constant learning rate, the same L2), one partial_fit per epoch."""
    import warnings
    import numpy as np
    from sklearn.linear_model import SGDClassifier
    t0 = time.perf_counter()
    x, y = load_xy(a.data)
    xt, yt = load_xy(a.test)
    load_s = time.perf_counter() - t0
    clf = SGDClassifier(loss="log_loss", alpha=a.reg, learning_rate="constant", eta0=a.lr, shuffle=True,
                        random_state=a.seed)
    epoch_s, test_acc, test_auc = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(a.epochs):
            t0 = time.perf_counter()
            clf.partial_fit(x, y, classes=np.array([0.0, 1.0]))
            epoch_s.append(time.perf_counter() - t0)
            test_acc.append(float(np.mean(clf.predict(xt) == yt)))
            test_auc.append(auc(yt, clf.decision_function(xt)))
    return {"epoch_s": epoch_s, "test_acc": test_acc, "test_auc": test_auc, "load_s": load_s}


def build_worker_parser():
    """The child's command line (`peers.py worker ...`, which python_contender builds)."""
    ap = argparse.ArgumentParser(prog="peers.py worker")
    ap.add_argument("kind", choices=["torch", "sklearn"])
    ap.add_argument("--data", type=bu.input_file, required=True)
    ap.add_argument("--test", type=bu.input_file, required=True)
    for flag, kind in (("--batch", bu.positive_int), ("--epochs", bu.positive_int), ("--seed", bu.nonnegative_int),
                       ("--threads", bu.thread_count), ("--lr", bu.positive_float), ("--reg", bu.nonnegative_float)):
        ap.add_argument(flag, type=kind, required=True)
    return ap


def worker_main(argv):
    a = build_worker_parser().parse_args(argv)
    print(json.dumps(worker_torch(a) if a.kind == "torch" else worker_sklearn(a)))


# ------------------------------------------------------------------------------------------ contenders
class Contender:
    """One trainer configuration: `command(round)` builds its command line, `parse(stdout, report)` its result
    ({"epoch_s": [...], "test_acc": [...], ...})."""

    def __init__(self, name, command, parse):
        self.name, self.command, self.parse = name, command, parse


def pimopt_contender(name, data, test, args, extra, work, sgd=True):
    """A pimopt run; `sgd`: a method with a learning rate, run at a constant one (the dual methods take none)."""
    report = os.path.join(work, "report.json")

    def command(seed):
        schedule = ["--lr-schedule", "constant"] if sgd else []
        return [PIMOPT, "train", "--data", data, "--test", test, "--scale", "none"] + schedule + [
                "--tol", "0", "--no-train-metrics", "-q", "--seed", str(seed), "--threads", str(args.threads),
                "--report", report] + extra

    def parse(_out):
        with open(report) as f:
            r = json.load(f)
        return {"epoch_s": [e["train_seconds"] for e in r["epochs"]],
                "test_acc": [e["test"]["accuracy"] for e in r["epochs"]],
                "test_auc": [e["test"]["auc"] for e in r["epochs"]], "load_s": r["time"]["load_wall_seconds"]}
    return Contender(name, command, parse)


def python_contender(name, kind, data, test, args, batch, lr, reg, epochs):
    def command(seed):
        return [sys.executable, SELF, "worker", kind, "--data", data, "--test", test, "--batch", str(batch),
                "--epochs", str(epochs), "--seed", str(seed), "--threads", str(args.threads), "--lr", str(lr),
                "--reg", str(reg)]
    return Contender(name, command, lambda out: json.loads(out.strip().splitlines()[-1]))


def liblinear_contender(train_svm, test_svm, work):
    model, pred = os.path.join(work, "liblinear.model"), os.path.join(work, "liblinear.pred")

    def command(_seed):
        # The solve alone: the whole run less a run stopped after one iteration (the parse), both timed here.
        return [sys.executable, SELF, "liblinear", train_svm, test_svm, model, pred]
    return Contender("LIBLINEAR -s 0 (C = 1)", command, lambda out: json.loads(out.strip().splitlines()[-1]))


def liblinear_main(argv):
    train_svm, test_svm, model, pred = argv
    t0 = time.perf_counter()
    run(["liblinear-train", "-q", "-s", "0", "-c", "1", "-B", "1", "-e", "1e9", train_svm, model])
    parse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run(["liblinear-train", "-q", "-s", "0", "-c", "1", "-B", "1", train_svm, model])
    total_s = time.perf_counter() - t0
    out = run(["liblinear-predict", test_svm, model, pred])
    acc = float(out.split("=")[1].split("%")[0]) / 100
    print(json.dumps({"solve_s": max(total_s - parse_s, 0.0), "total_s": total_s, "parse_s": parse_s,
                      "test_acc": [acc]}))


# ------------------------------------------------------------------------------------------ the runner
def resolved_lr(data, batch, threads, work):
    """pimopt's automatic learning rate for BATCH on DATA (one short run)."""
    report = os.path.join(work, "resolve.json")
    run([PIMOPT, "train", "--data", data, "--batch", str(batch), "--scale", "none", "--epochs", "1", "-q",
         "--no-train-metrics", "--threads", str(threads), "--report", report])
    with open(report) as f:
        r = json.load(f)["resolved"]
    return r["lr"], r["reg"]


def interleave(contenders, rounds, before_round=None):
    """Runs every contender once per round, in order; returns ({name: [result per round]}, [load average])."""
    results = {c.name: [] for c in contenders}
    loads = []
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        if before_round:
            before_round(r)
        for c in contenders:
            out, wall, rss_mb = run_measured(c.command(r + 1))
            res = c.parse(out)
            res["wall_s"], res["peak_rss_mb"] = wall, rss_mb
            results[c.name].append(res)
            print(f"  round {r + 1}: {c.name}: {summary_line(res)}", flush=True)
    return results, loads


def summary_line(res):
    if "epoch_s" in res:
        return f"{statistics.median(res['epoch_s']):.4f} s/epoch, acc {res['test_acc'][-1]:.4f}, " \
               f"{res['peak_rss_mb']:.0f} MB"
    return f"{res.get('solve_s', 0):.3f} s, acc {res['test_acc'][-1]:.4f}, {res['peak_rss_mb']:.0f} MB"


def med_spread(values, fmt="{:.3f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def time_to(res, target, metric):
    elapsed = 0.0
    for t, acc in zip(res["epoch_s"], res[metric]):
        elapsed += t
        if acc >= target:
            return elapsed
    return None


def training_table(title, results, loads, data_mb, target, target_note, metric="test_acc"):
    """Markdown: per contender the median (spread) epoch time, final test accuracy and AUC, time to the target of
    METRIC, peak RSS."""
    what = "accuracy" if metric == "test_acc" else "AUC"
    lines = [f"#### {title}", "", f"Load average before each round: {', '.join(f'{v:.2f}' for v in loads)}. "
             f"Target test {what} {target:.4f} ({target_note}). Training data {data_mb:.0f} MB (float32 values; "
             "uint32 columns too when sparse).", "",
             "| contender | s per epoch | test accuracy | test AUC | s to target | peak RSS, MB (x data) |",
             "|---|---|---|---|---|---|"]
    for name, runs in results.items():
        if "epoch_s" in runs[0]:
            epoch = med_spread([statistics.median(r["epoch_s"]) for r in runs], "{:.4f}")
            reach = [time_to(r, target, metric) for r in runs]
            reach_txt = med_spread([v for v in reach if v is not None]) if all(v is not None for v in reach) \
                else f"not in {len(runs[0]['epoch_s'])} epochs"
        else:
            epoch = "-"
            reach_txt = med_spread([r["solve_s"] for r in runs]) + " (solve)"
        acc = statistics.median(r["test_acc"][-1] for r in runs)
        auc_txt = f"{statistics.median(r['test_auc'][-1] for r in runs):.4f}" if "test_auc" in runs[0] else "-"
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        lines.append(f"| {name} | {epoch} | {acc:.4f} | {auc_txt} | {reach_txt} | {rss:.0f} ({rss / data_mb:.1f}x) |")
    return "\n".join(lines) + "\n"


def fashion_mnist_files(work, extension):
    """fashion-mnist's training and test sets in WORK as .bin or .svm files (converted once per work folder)."""
    paths = os.path.join(work, f"fm_train.{extension}"), os.path.join(work, f"fm_test.{extension}")
    for src, dst in zip(("fashion-mnist", "fashion-mnist:test"), paths):
        if not os.path.exists(dst):
            run([PIMOPT, "convert", src, dst])
    return paths


def case_fashion_mnist(args, work):
    train, test = fashion_mnist_files(work, "bin")
    train_svm, test_svm = fashion_mnist_files(work, "svm")
    contenders = [liblinear_contender(train_svm, test_svm, work)]
    for batch in (1, 8, 64, 256):
        lr, reg = resolved_lr(train, batch, args.threads, work)
        algo = ["--algo", "sgd"] if batch == 1 else ["--algo", "mbsgd", "--batch", str(batch)]
        contenders.append(pimopt_contender(f"pimopt {'SGD' if batch == 1 else 'MB-SGD'}, batch {batch}", train, test,
                                           args, algo + ["--lr", str(lr), "--reg", str(reg), "--epochs",
                                                         str(args.epochs)], work))
        contenders.append(python_contender(f"PyTorch MB-SGD, batch {batch}", "torch", train, test, args, batch, lr,
                                           reg, args.epochs))
        if batch == 1:
            contenders.append(python_contender("scikit-learn SGDClassifier, batch 1", "sklearn", train, test, args,
                                               1, lr, reg, args.epochs))
    results, loads = interleave(contenders, args.rounds)
    target = statistics.median(r["test_acc"][0] for r in results[contenders[0].name]) - 0.005
    table = training_table("fashion-mnist", results, loads, 60000 * 784 * 4 / 1e6, target,
                           "LIBLINEAR's minus 0.5 point")
    return {"results": results, "load_average": loads, "target": target}, table


def case_dense(args, work):
    rows = args.dense_rows
    train, test = os.path.join(work, f"dense_{rows}.bin"), os.path.join(work, "dense_test.bin")
    run([PIMOPT, "gen", "dense", "--rows", str(rows), "--features", "4096", "--out", train])
    run([PIMOPT, "gen", "dense", "--rows", "10000", "--features", "4096", "--first-row", str(rows), "--out", test])
    contenders = []
    for batch in (1, 64, 256):
        lr, reg = resolved_lr(train, batch, args.threads, work)
        algo = ["--algo", "sgd"] if batch == 1 else ["--algo", "mbsgd", "--batch", str(batch)]
        contenders.append(pimopt_contender(f"pimopt {'SGD' if batch == 1 else 'MB-SGD'}, batch {batch}", train, test,
                                           args, algo + ["--lr", str(lr), "--reg", str(reg), "--epochs",
                                                         str(args.dense_epochs)], work))
        if batch == 1:
            contenders.append(python_contender("scikit-learn SGDClassifier, batch 1", "sklearn", train, test, args,
                                               1, lr, reg, args.dense_epochs))
        else:
            contenders.append(python_contender(f"PyTorch MB-SGD, batch {batch}", "torch", train, test, args, batch,
                                               lr, reg, args.dense_epochs))
    bandwidth = []

    def membw(_round):
        bandwidth.append(json.loads(run([MEMBW, "1024", str(args.threads)])))
    results, loads = interleave(contenders, args.rounds, membw)
    best = max(statistics.median(r["test_acc"][-1] for r in runs) for runs in results.values())
    data_mb = rows * 4096 * 4 / 1e6
    table = training_table(f"dense {rows:,} x 4,096", results, loads, data_mb, best - 0.005,
                           "the best final accuracy minus 0.5 point")
    read = statistics.median(b["read_gb_per_s"] for b in bandwidth)
    copy = statistics.median(b["copy_gb_per_s"] for b in bandwidth)
    table += (f"\nMemory bandwidth ({args.threads} threads, pimopt_membw, median of the rounds): read {read:.1f} GB/s, "
              f"copy {copy:.1f} GB/s. Data rate of the pimopt epochs (data bytes / epoch time):\n\n"
              "| contender | GB/s | / read bandwidth |\n|---|---|---|\n")
    for name, runs in results.items():
        if name.startswith("pimopt"):
            rate = data_mb / 1e3 / statistics.median(statistics.median(r["epoch_s"]) for r in runs)
            table += f"| {name} | {rate:.2f} | {rate / read:.0%} |\n"
    return {"results": results, "load_average": loads, "bandwidth": bandwidth}, table


def criteo_files(args, work):
    train, test = os.path.join(work, "criteo.bin"), os.path.join(work, "criteo_test.bin")
    if not os.path.exists(train):
        run([PIMOPT, "gen", "sparse", "--rows", str(args.criteo_rows), "--out", train])
        run([PIMOPT, "gen", "sparse", "--rows", "100000", "--first-row", str(args.criteo_rows), "--out", test])
    return train, test


def case_criteo(args, work):
    train, test = criteo_files(args, work)
    lr, reg = 0.1, 1e-6
    common = ["--lr", str(lr), "--reg", str(reg), "--epochs", str(args.criteo_epochs)]
    contenders = [
        pimopt_contender("pimopt SGD, batch 1", train, test, args, ["--algo", "sgd"] + common, work),
        pimopt_contender("pimopt MB-SGD, batch 256", train, test, args, ["--algo", "mbsgd", "--batch", "256"] + common,
                         work),
        pimopt_contender("pimopt GA-SGD, 4 workers, batch 256", train, test, args,
                         ["--algo", "ga", "--workers", "4", "--batch", "256"] + common, work),
        python_contender("scikit-learn SGDClassifier, batch 1", "sklearn", train, test, args, 1, lr, reg,
                         args.criteo_epochs),
    ]
    results, loads = interleave(contenders, args.rounds)
    best = max(statistics.median(r["test_auc"][-1] for r in runs) for runs in results.values())
    nnz_mb = args.criteo_rows * 39 * 8 / 1e6  # a float32 value and a uint32 column per non-zero
    table = training_table(f"Criteo-shaped: {args.criteo_rows:,} x 2^20, 39 non-zeros per row (lr 0.1, L2 1e-6)",
                           results, loads, nnz_mb, best - 0.005, "the best final AUC minus 0.005", "test_auc")
    sgd = statistics.median(statistics.median(r["epoch_s"]) for r in results["pimopt SGD, batch 1"])
    sk = statistics.median(statistics.median(r["epoch_s"]) for r in results["scikit-learn SGDClassifier, batch 1"])
    table += "\n| contender | epoch / pimopt SGD's | SGDClassifier's epoch / this |\n|---|---|---|\n"
    for name, runs in results.items():
        m = statistics.median(statistics.median(r["epoch_s"]) for r in runs)
        table += f"| {name} | {m / sgd:.2f}x | {sk / m:.2f}x |\n"
    return {"results": results, "load_average": loads}, table


def case_parse(args, work):
    train, _ = criteo_files(args, work)
    svm = os.path.join(work, "criteo.svm")
    run([PIMOPT, "convert", train, svm])
    svm_mb, bin_mb = os.path.getsize(svm) / 1e6, os.path.getsize(train) / 1e6
    report = os.path.join(work, "parse.json")

    def pimopt_load(path):
        def command(_seed):
            return [PIMOPT, "train", "--data", path, "--epochs", "1", "--algo", "sgd", "--lr", "0.1",
                    "--scale", "none", "--no-train-metrics", "-q", "--threads", str(args.threads), "--report",
                    report]

        def parse(_out):
            with open(report) as f:
                return {"load_s": json.load(f)["time"]["load_wall_seconds"], "test_acc": [0.0]}
        return command, parse

    model = os.path.join(work, "ll.model")
    contenders = [Contender("pimopt, LIBSVM text", *pimopt_load(svm)),
                  Contender("pimopt, binary cache", *pimopt_load(train)),
                  Contender("liblinear-train, LIBSVM text", lambda _s: [
                      sys.executable, SELF, "time", "liblinear-train", "-q", "-s", "0", "-e", "1e9", svm, model],
                      lambda out: {"load_s": float(out.strip().splitlines()[-1]), "test_acc": [0.0]})]
    results, loads = interleave(contenders, args.rounds)
    lines = [f"#### Loading {args.criteo_rows:,} Criteo-shaped rows", "",
             f"Load average before each round: {', '.join(f'{v:.2f}' for v in loads)}. LIBSVM text {svm_mb:.0f} MB, "
             f"binary cache {bin_mb:.0f} MB. pimopt: the report's `load_wall_seconds` (read, check, build the "
             f"matrix); liblinear-train: its whole run with one solver iteration.", "",
             "| reader | seconds | MB/s of its input | peak RSS, MB |", "|---|---|---|---|"]
    for name, runs in results.items():
        size = bin_mb if "binary" in name else svm_mb
        secs = [r["load_s"] for r in runs]
        rate = [size / s for s in secs]
        lines.append(f"| {name} | {med_spread(secs)} | {med_spread(rate, '{:.0f}')} | "
                     f"{statistics.median(r['peak_rss_mb'] for r in runs):.0f} |")
    return {"results": results, "load_average": loads, "svm_mb": svm_mb, "bin_mb": bin_mb}, "\n".join(lines) + "\n"


def case_emulator(args, work):
    train, test = fashion_mnist_files(work, "bin")
    contenders = []
    for algo, title in (("ma", "MA-SGD"), ("admm", "ADMM"), ("cocoa", "CoCoA")):
        for backend in ("cpu", "pim"):
            extra = ["--algo", algo, "--workers", "2048", "--backend", backend, "--epochs", "3"]
            if algo != "cocoa":  # the dual method takes no learning rate
                extra += ["--lr", "0.05"]
            if backend == "pim":
                extra += ["--dpus", "2048"]
            contenders.append(pimopt_contender(f"{title}, 2,048 workers, {backend}", train, test, args, extra, work,
                                               sgd=algo != "cocoa"))
    results, loads = interleave(contenders, args.rounds)
    lines = ["#### A fashion-mnist epoch with 2,048 workers: emulated DPUs against CPU workers", "",
             f"Load average before each round: {', '.join(f'{v:.2f}' for v in loads)}. Local batch 1 (the automatic "
             "batch: 29 rows per worker), lr 0.05 (CoCoA: none), 3 epochs per run.", "",
             "| algorithm | CPU backend s/epoch | PIM backend s/epoch | PIM / CPU | test acc CPU / PIM |",
             "|---|---|---|---|---|"]
    for title in ("MA-SGD", "ADMM", "CoCoA"):
        cpu, pim = results[f"{title}, 2,048 workers, cpu"], results[f"{title}, 2,048 workers, pim"]
        c = [statistics.median(r["epoch_s"]) for r in cpu]
        p = [statistics.median(r["epoch_s"]) for r in pim]
        ratio = [b / a for a, b in zip(c, p)]
        lines.append(f"| {title} | {med_spread(c)} | {med_spread(p)} | {med_spread(ratio, '{:.2f}')}x | "
                     f"{cpu[0]['test_acc'][-1]:.4f} / {pim[0]['test_acc'][-1]:.4f} |")
    return {"results": results, "load_average": loads}, "\n".join(lines) + "\n"


CASES = {"fashion-mnist": case_fashion_mnist, "dense": case_dense, "criteo": case_criteo, "parse": case_parse,
         "emulator": case_emulator}


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=bu.NameList(CASES, "case"), default=list(CASES))
    ap.add_argument("--rounds", type=bu.positive_int, default=3)
    ap.add_argument("--threads", type=bu.thread_count, default=min(os.cpu_count() or 1, bu.MAX_THREADS))
    ap.add_argument("--epochs", type=bu.positive_int, default=5, help="epochs per fashion-mnist run")
    ap.add_argument("--dense-rows", type=bu.positive_int, default=200000)
    ap.add_argument("--dense-epochs", type=bu.positive_int, default=3)
    ap.add_argument("--criteo-rows", type=bu.positive_int, default=1000000)
    ap.add_argument("--criteo-epochs", type=bu.positive_int, default=2)
    ap.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--work", type=bu.output_dir, default=None,
                    help="scratch folder for the data files (default: a temporary one)")
    return ap


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        return worker_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "liblinear":
        return liblinear_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "time":  # wall seconds of a command
        t0 = time.perf_counter()
        run(sys.argv[2:])
        return print(time.perf_counter() - t0)
    args = build_parser().parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = args.work or tempfile.mkdtemp(prefix="pimopt_peers_")
    os.makedirs(work, exist_ok=True)
    everything = {"threads": args.threads, "rounds": args.rounds, "cpus": os.cpu_count()}
    tables = []
    for case in args.cases:
        print(f"case {case}", flush=True)
        everything[case], table = CASES[case](args, work)
        tables.append(table)
        print(table, flush=True)
    with bu.atomic_open(os.path.join(args.out, "peers.json")) as f:
        json.dump(everything, f, indent=2)
    with bu.atomic_open(os.path.join(args.out, "peers.md")) as f:
        f.write("\n".join(tables))
    print("\n".join(tables))


if __name__ == "__main__":
    main()
