#!/usr/bin/python3
"""Thread scaling of the CPU backend and of the emulator: every algorithm's epoch at 1..N host threads on a dense
and a sparse shape, PyTorch's MB-SGD beside it at the same threads, the machine's read bandwidth at each thread
count (pimopt_membw) and each data-parallel epoch as a fraction of it, and a 2,048-DPU emulated epoch against the
CPU backend's. Every configuration's model is checked to be the same, bit for bit, at every thread count.

    /usr/bin/python3 bench/cpu_scaling.py [--threads 1,2,4,8,16] [--cases dense,sparse,emulator] [--rounds 1]
                                          [--dense-rows 200000] [--sparse-rows 1000000] [--epochs 2]
                                          [--no-torch] [--quick] [--out bench/out]

Cases:
  dense     DENSE_ROWS x 4,096 synthetic (`pimopt gen dense`; 3.3 GB at 200,000 rows): SGD; MB-SGD at batch 64 and
            1,024; GA-SGD, MA-SGD, ADMM and D-PSGD with 16 workers at batch 64 (GA-SGD: 1,024 over the workers);
            newton (one Newton step an epoch: its passes over the rows); PyTorch's MB-SGD at batch 64
            (bench/peers.py's loop) where PyTorch imports.
  sparse    SPARSE_ROWS x 2^20, 39 non-zeros a row (`pimopt gen sparse`, the Criteo shape): SGD; MB-SGD at batch
            256; GA-SGD, MA-SGD and ADMM with 16 workers at batch 256 (GA-SGD over the workers) and 64; newton.
  emulator  60,000 x 784 (the fashion-mnist shape, synthetic), MA-SGD and ADMM with 2,048 workers (the automatic
            batch: one row per worker and step), lr 0.05: the emulated PIM system (2,048 DPUs, 16 tasklets) against
            the CPU backend, at each thread count.

Time per epoch is pimopt's `train_seconds` (training only), the median over the epochs and then over the rounds;
every round runs each thread count once, in order, so that a change in the machine's load touches all of them.
"of read bw": the epoch's data bytes over its time, against pimopt_membw's read bandwidth at that thread count.
--quick runs small shapes at 1, 2 and 3 threads with no PyTorch (CTest's invariant check: same models at every
thread count). Writes OUT/cpu_scaling.json and OUT/cpu_scaling.md. The binaries are build/pimopt and
build/bench/pimopt_membw unless PIMOPT and PIMOPT_MEMBW name others (bench/many_core.sh sets them to a carried
build). Needs only Python's standard library (and PyTorch for its rows).
"""
import argparse
import hashlib
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402
from bench_util import PIMOPT, ROOT, run  # noqa: E402

MEMBW = os.environ.get("PIMOPT_MEMBW", os.path.join(ROOT, "build", "bench", "pimopt_membw"))
SELF = os.path.abspath(__file__)
CASES = ["dense", "sparse", "emulator"]
PHASE_COST = {}  # thread count -> the report's host_threads (the pool's measured fork-join cost)


def torch_worker(argv):
    """Child: PyTorch MB-SGD epochs on a dense pimopt binary file (bench/peers.py's loop: logistic loss,
    w <- w (1 - lr reg) - lr g / B); prints {"epoch_s": [...]}. Reads the file without numpy."""
    import torch
    path, threads, batch, lr, reg, epochs = argv[0], int(argv[1]), int(argv[2]), float(argv[3]), float(argv[4]), \
        int(argv[5])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    if blob[:8] != b"PIMOPTDS":
        sys.exit(f"{path}: not a pimopt binary dataset")
    flags = struct.unpack_from("<I", blob, 12)[0]
    rows, features = struct.unpack_from("<QQ", blob, 16)
    if flags & 1:
        sys.exit(f"{path}: PyTorch's loop here takes dense data only")
    labels = torch.frombuffer(blob, dtype=torch.float32, count=rows, offset=64)
    offset = 64 + 4 * rows * (2 if flags & 2 else 1)
    xs = torch.frombuffer(blob, dtype=torch.float32, count=rows * features, offset=offset).view(rows, features)
    ys = (labels > 0).to(torch.float32)
    w = torch.zeros(features, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    epoch_s = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(rows)
        for start in range(0, rows, batch):
            idx = perm[start:start + batch]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(xs.index_select(0, idx) @ w + b,
                                                                        ys.index_select(0, idx), reduction="sum")
            loss.backward()
            with torch.no_grad():
                n = idx.shape[0]
                w.mul_(1 - lr * reg).sub_(w.grad, alpha=lr / n)
                b.sub_(b.grad, alpha=lr / n)
                w.grad.zero_()
                b.grad.zero_()
        epoch_s.append(time.perf_counter() - t0)
    print(json.dumps({"epoch_s": epoch_s}))


def torch_available():
    res = subprocess.run([sys.executable, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return res.returncode == 0


def pimopt_epoch(data, flags, threads, work, tag):
    """One pimopt run: (median seconds per epoch, sha256 of the saved model without its comment lines)."""
    report, model = os.path.join(work, f"{tag}.json"), os.path.join(work, f"{tag}.model")
    run([PIMOPT, "train", "--data", data, "--threads", str(threads), "-q", "--no-train-metrics", "--scale", "none",
         "--report", report, "--out", model] + flags)
    with open(report) as f:
        rep = json.load(f)
    if "host_threads" in rep:
        PHASE_COST.setdefault(threads, rep["host_threads"])
    with open(model) as f:
        body = "".join(line for line in f if not line.startswith("#"))
    return statistics.median(e["train_seconds"] for e in rep["epochs"]), hashlib.sha256(body.encode()).hexdigest()


def torch_epoch(data, threads, batch, lr, reg, epochs):
    out = run([sys.executable, SELF, "--torch-worker", data, str(threads), str(batch), str(lr), str(reg), str(epochs)])
    return statistics.median(json.loads(out.strip().splitlines()[-1])["epoch_s"])


def read_bandwidth(threads, quick):
    """pimopt_membw's read and copy bandwidth (GB/s) at each thread count."""
    out = run([MEMBW, "64" if quick else "1024", "--threads", ",".join(str(t) for t in threads)])
    return {p["threads"]: p for p in json.loads(out)["points"]}


def configs(case, quick):
    """(name, pimopt flags, data-parallel: reads the whole set once per epoch) of a case."""
    lr, reg = ("0.002", "1e-5") if case == "dense" else ("0.1", "1e-6")
    common = ["--lr", lr, "--reg", reg]
    workers = "4" if quick else "16"
    if case == "dense":
        return [("SGD (one row per step)", ["--algo", "sgd"], False),
                ("MB-SGD, batch 64", ["--algo", "mbsgd", "--batch", "64"], True),
                ("MB-SGD, batch 1,024", ["--algo", "mbsgd", "--batch", "1024"], True),
                (f"GA-SGD, {workers} workers, batch 1,024", ["--algo", "ga", "--workers", workers, "--batch", "1024"],
                 True),
                (f"MA-SGD, {workers} workers, batch 64", ["--algo", "ma", "--workers", workers, "--batch", "64"], True),
                (f"ADMM, {workers} workers, batch 64", ["--algo", "admm", "--workers", workers, "--batch", "64"], True),
                (f"D-PSGD, {workers} workers, batch 64", ["--algo", "dsgd", "--workers", workers, "--batch", "64"],
                 True),
                ("Newton (LR; an epoch is one Newton step)", ["--algo", "newton", "--tol", "0"], True)], common
    return [("SGD (one row per step)", ["--algo", "sgd"], False),
            ("MB-SGD, batch 256", ["--algo", "mbsgd", "--batch", "256"], True),
            (f"GA-SGD, {workers} workers, batch 256", ["--algo", "ga", "--workers", workers, "--batch", "256"], True),
            (f"MA-SGD, {workers} workers, batch 64", ["--algo", "ma", "--workers", workers, "--batch", "64"], True),
            (f"ADMM, {workers} workers, batch 64", ["--algo", "admm", "--workers", workers, "--batch", "64"], True),
            ("Newton (LR; an epoch is one Newton step)", ["--algo", "newton", "--tol", "0"], True)], common


def generate(case, args, work):
    path = os.path.join(work, f"{case}.bin")
    if case == "dense":
        rows = 3000 if args.quick else args.dense_rows
        run([PIMOPT, "gen", "dense", "--rows", str(rows), "--features", "512" if args.quick else "4096", "--out", path])
    elif case == "sparse":
        rows = 20000 if args.quick else args.sparse_rows
        extra = ["--features", "65536", "--vocabulary", "4000"] if args.quick else []
        run([PIMOPT, "gen", "sparse", "--rows", str(rows), "--out", path] + extra)
    else:
        rows = 6000 if args.quick else 60000
        run([PIMOPT, "gen", "dense", "--rows", str(rows), "--features", "784", "--out", path])
    return path


def data_bytes(path):
    with open(path, "rb") as f:
        header = f.read(64)
    flags = struct.unpack_from("<I", header, 12)[0]
    rows, features, stored = struct.unpack_from("<QQQ", header, 16)
    return rows * features * 4 if not flags & 1 else stored * 8  # dense floats; sparse (column, value) pairs


def scale_case(case, args, work, bandwidth, failures):
    data = generate(case, args, work)
    rows = {}
    if case == "emulator":
        dpus = "64" if args.quick else "2048"
        # The automatic batch (1 row per worker and step at 2,048 workers on 60,000 rows), as bench/peers.py's.
        entries = [(f"{algo} {dpus} workers, {backend}", ["--algo", algo, "--workers", dpus, "--lr", "0.05",
                                                          "--reg", "1e-5", "--backend", backend],
                    False) for algo in ("ma", "admm") for backend in ("cpu", "pim")]
    else:
        entries, common = configs(case, args.quick)
        # newton has no learning rate (it refuses --lr): it takes the regularization only.
        entries = [(name, flags + (common[2:] if "newton" in flags else common), parallel)
                   for name, flags, parallel in entries]
    for name, flags, parallel in entries:
        rows[name] = {"flags": flags, "data_parallel": parallel, "epoch_s": {t: [] for t in args.threads}}
    if case == "dense" and args.torch:
        rows["PyTorch MB-SGD, batch 64"] = {"flags": [], "data_parallel": True, "epoch_s": {t: [] for t in args.threads}}
    for rnd in range(args.rounds):
        for name, row in rows.items():
            digests = set()
            for t in args.threads:
                if name.startswith("PyTorch"):
                    row["epoch_s"][t].append(torch_epoch(data, t, 64, 0.002, 1e-5, args.epochs))
                    continue
                seconds, digest = pimopt_epoch(data, row["flags"] + ["--epochs", str(args.epochs)], t, work,
                                               f"{case}_{rnd}_{t}")
                row["epoch_s"][t].append(seconds)
                digests.add(digest)
            if len(digests) > 1:
                failures.append(f"{case}: {name}: the model differs between thread counts {args.threads}")
    nbytes = data_bytes(data)
    for row in rows.values():
        row["median_s"] = {t: statistics.median(v) for t, v in row["epoch_s"].items()}
        if row["data_parallel"]:
            row["of_read_bandwidth"] = {t: nbytes / s / 1e9 / bandwidth[t]["read_gb_per_s"]
                                        for t, s in row["median_s"].items() if t in bandwidth}
    return {"data": os.path.basename(data), "data_bytes": nbytes, "rows": rows}


def seconds(v):
    return f"{v:.3f}" if v >= 0.1 else f"{v:.3g}"


def markdown(results, bandwidth, threads, args):
    out = []
    head = "| s/epoch | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}" for t in threads) + \
        " | best / 1 thread | " + f"{threads[-1]} vs best | of read bw at {threads[-1]} |"
    for case, res in results.items():
        out.append(f"\n**{case}** ({res['data']}, {res['data_bytes'] / 1e9:.2f} GB of values)\n")
        out.append(head)
        out.append("|" + "---|" * (len(threads) + 4))
        for name, row in res["rows"].items():
            med = row["median_s"]
            best = min(med.values())
            cells = [f"**{seconds(med[t])}**" if med[t] == best and len(threads) > 1 else seconds(med[t])
                     for t in threads]
            frac = row.get("of_read_bandwidth", {}).get(threads[-1])
            out.append(f"| {name} | " + " | ".join(cells) + f" | {med[threads[0]] / best:.1f}x | "
                       f"{med[threads[-1]] / best:.2f}x | {f'{frac:.0%}' if frac is not None else '-'} |")
        if case == "emulator":
            out.append("")
            for algo in ("ma", "admm"):
                pim = next(r for n, r in res["rows"].items() if n.startswith(algo + " ") and n.endswith("pim"))
                cpu = next(r for n, r in res["rows"].items() if n.startswith(algo + " ") and n.endswith("cpu"))
                out.append(f"- {algo}: emulated epoch / CPU backend's: " + ", ".join(
                    f"{pim['median_s'][t] / cpu['median_s'][t]:.1f}x at {t}" for t in threads))
    out.append("\n| read bandwidth (pimopt_membw) | " + " | ".join(
        f"{bandwidth[t]['read_gb_per_s']:.1f} GB/s" for t in threads) + " |")
    out.append("|" + "---|" * (len(threads) + 1))
    if PHASE_COST:
        out.append("\nFork-join cost of a phase, measured by the thread pool when it starts (report's `host_threads`): " +
                   "; ".join(f"{t} threads: {c['phase_fixed_ns'] / 1e3:.1f} us on 2 + {c['phase_per_thread_ns'] / 1e3:.2f} us "
                             f"per further thread (a phase uses at most {c['usable_per_phase']})"
                             for t, c in sorted(PHASE_COST.items()) if t > 1))
    return "\n".join(out) + "\n"


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=bu.IntList(1, bu.MAX_THREADS, sort=True), default=None,
                    help="comma-separated thread counts (default 1, 2, 4, ... up to nproc)")
    ap.add_argument("--cases", type=bu.NameList(CASES, "case"), default=CASES)
    ap.add_argument("--rounds", type=bu.positive_int, default=1)
    ap.add_argument("--dense-rows", type=bu.positive_int, default=200000)
    ap.add_argument("--sparse-rows", type=bu.positive_int, default=1000000)
    ap.add_argument("--epochs", type=bu.positive_int, default=2)
    ap.add_argument("--no-torch", dest="torch", action="store_false")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "bench", "out"))
    return ap


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        torch_worker(sys.argv[2:])
        return
    args = build_parser().parse_args()
    cpus = len(os.sched_getaffinity(0))
    if args.threads is None:  # given: sorted, each once
        args.threads = [1, 2, 3] if args.quick else \
            sorted({min(2 ** i, cpus) for i in range(0, 11) if 2 ** i <= 2 * cpus})
    cases = args.cases
    if args.quick:
        args.torch, args.epochs = False, 1
    elif args.torch and not torch_available():
        print("PyTorch does not import here: its rows are left out", file=sys.stderr)
        args.torch = False
    os.makedirs(args.out, exist_ok=True)
    bandwidth = read_bandwidth(args.threads, args.quick)
    failures, results = [], {}
    with tempfile.TemporaryDirectory(prefix="pimopt_scaling_") as work:
        for case in cases:
            results[case] = scale_case(case, args, work, bandwidth, failures)
    table = markdown(results, bandwidth, args.threads, args)
    meta = {"cpus": cpus, "threads": args.threads, "rounds": args.rounds, "epochs": args.epochs,
            "load_average": os.getloadavg(), "bandwidth": bandwidth, "phase_cost": PHASE_COST, "cases": results,
            "failures": failures,
            "command": " ".join(sys.argv)}
    for name, text in (("cpu_scaling.json", json.dumps(meta, indent=1)), ("cpu_scaling.md", table)):
        with bu.atomic_open(os.path.join(args.out, name)) as f:
            f.write(text)
    print(table)
    if failures:
        sys.exit("FAILED: " + "; ".join(failures))


if __name__ == "__main__":
    main()
