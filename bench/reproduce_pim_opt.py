#!/usr/bin/python3
"""Reproduces PIM-Opt's headline comparison at the paper's scale: PIM (the emulator, pimopt's kernel and PIM-Opt's
own kernel, --kernel pim-opt) against the modeled CPU and GPU baselines (docs/baselines.md).

For each dataset shape and algorithm it trains on the emulated PIM system at a scale this machine runs, projects
the modeled epoch to PIM-Opt's weak-scaling configuration (2,048 DPUs x 3,328 rows on YFCC100M-HNfc6, x 196,608
rows on Criteo), and puts next to it the modeled epoch of PIM-Opt's CPU baseline (128 EPYC processes) and GPU
baseline (an A100, YFCC only), with their bands. The ratios it prints are compared with the claims attributed to
the paper ("PIM up to 1.9x / 3.2x faster than CPU / GPU on YFCC, 9x / 10x on Criteo").

The PIM side needs only build/pimopt; the baselines' cost models need no torch (their calibration,
bench/baseline_calibration.json, was measured with it: bench/pim_opt_baselines.py calibrate).

Usage: /usr/bin/python3 bench/reproduce_pim_opt.py [--out bench/out] [--quick]
Writes OUT/reproduce_pim_opt.json and OUT/reproduce_pim_opt.md (the tables the README quotes) and, without
--quick, the figures' analogues OUT/fig_{breakdown,throughput,quality_time,batch,scaling}.png with their tables in
the markdown report (needs python3-matplotlib).
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import pim_opt_baselines as baselines  # noqa: E402
import bench_util as bu  # noqa: E402
from bench_util import timed_projection, train  # noqa: E402

TARGET_DPUS = 2048
ALGOS = {"ma": "MA-SGD", "ga": "GA-SGD", "admm": "ADMM"}
# PIM-Opt's configurations (docs/sources.md [PIM-Opt]): YFCC b = 8 (MA, ADMM), global B = 4,096 (GA, Fig. 5);
# Criteo b = 2,048 (MA, ADMM), B = 262,144 (GA); lr 2^-6 / 1, reg 2^-12. Rows per DPU in the weak scaling runs.
SHAPES = {
    "yfcc": {"rows_per_dpu": 3328, "features": 4096, "run_dpus": 256,
             "data": "yfcc:rows=16384,test-rows=4096,seed=5",
             "flags": ["--lr", "0.015625", "--reg", "0.000244140625"],
             "batch": {"ma": 8, "ga": 4096 * 256 // TARGET_DPUS, "admm": 8},
             "cpu_batch": {"ma": 8, "ga": 32, "admm": 8}, "gpu_batch": 4096,
             # Accuracy: one epoch at 256 DPUs is 8 local steps (the model barely moves): 16 DPUs, 3 epochs.
             "quality": {"dpus": 16, "epochs": 3, "data": "yfcc:rows=16384,test-rows=4096,seed=5",
                         "batch": {"ma": 8, "ga": 64, "admm": 8}}},
    "criteo": {"rows_per_dpu": 196608, "features": 1000000, "run_dpus": 4,
               "data": "sparse:rows=16384,features=1000000,seed=3,test_rows=4096",
               "flags": ["--lr", "1", "--reg", "0.000244140625", "--class-weights", "15:0.5"],
               "batch": {"ma": 2048, "ga": 262144 * 4 // TARGET_DPUS, "admm": 2048},
               "cpu_batch": {"ma": 2048, "ga": 2048, "admm": 2048}, "gpu_batch": None,
               "quality": {"dpus": 4, "epochs": 3, "data": "sparse:rows=65536,features=1000000,seed=3,test_rows=8192",
                           "batch": {"ma": 2048, "ga": 512, "admm": 2048}}},
}
CLAIMS = {"yfcc": {"cpu": 1.9, "gpu": 3.2}, "criteo": {"cpu": 9.0, "gpu": 10.0}}


def kernel_flags(shape, algo, kernel):
    flags = ["--kernel", kernel] + SHAPES[shape]["flags"]
    if algo == "admm":
        flags += ["--rho", "0.000244140625"]
    if kernel == "pim-opt":  # the artifact visits rows in data order; its GA-SGD takes B/K rows per DPU
        flags += ["--no-shuffle"] + (["--ga-batches", "per-worker"] if algo == "ga" else [])
    return flags


def pim_epoch(shape, algo, kernel, tmp, dpus=TARGET_DPUS, rows_per_dpu=None, batch=None, model="lr"):
    """The modeled epoch at PIM-Opt's scale: one epoch here, projected to `dpus` x `rows_per_dpu`. `batch` is the
    batch of the run here (GA-SGD: B x run DPUs / target DPUs keeps PIM-Opt's rows per DPU per step)."""
    s = SHAPES[shape]
    flags = ["--data", s["data"], "--algo", algo, "--dpus", str(s["run_dpus"]), "--epochs", "1", "--model", model,
             "--batch", str(batch or s["batch"][algo]), "--project-dpus", str(dpus),
             "--project-rows-per-dpu", str(rows_per_dpu or s["rows_per_dpu"])] + kernel_flags(shape, algo, kernel)
    r = train(flags, tmp)
    p = timed_projection(r, f"{shape} {algo}")  # never a table cell from a missing figure
    return {"modeled_epoch_s": p["modeled_epoch_s"], "cpu_to_dpu_s": p["modeled_cpu_to_dpu_s"],
            "kernel_s": p["modeled_dpu_kernel_s"] + p["modeled_launch_overhead_s"],
            "dpu_kernel_s": p["modeled_dpu_kernel_s"],
            "dpu_to_cpu_s": p["modeled_dpu_to_cpu_s"], "host_reduction_s": p["host_reduction_s"],
            "bytes": p["cpu_to_dpu_bytes"] + p["dpu_to_cpu_bytes"], "mram_wram_bytes": p["mram_wram_bytes"],
            "command": "pimopt train --backend pim " + " ".join(flags)}


def pim_quality(shape, algo, kernel, tmp):
    """Test accuracy and AUC after a few epochs at a scale where the algorithms take enough steps."""
    q = SHAPES[shape]["quality"]
    flags = ["--data", q["data"], "--algo", algo, "--dpus", str(q["dpus"]), "--epochs", str(q["epochs"]),
             "--batch", str(q["batch"][algo])] + kernel_flags(shape, algo, kernel)
    test = train(flags, tmp)["final"]["test"]
    return {"test_accuracy": test["accuracy"], "test_auc": test["auc"],
            "command": "pimopt train --backend pim " + " ".join(flags)}


def cpu_backend_epoch(shape, algo, tmp):
    """pimopt's own CPU backend on this machine (what a user would run instead): the quality run's configuration,
    float32, all cores here; seconds per epoch extrapolated linearly in rows to the paper's data set."""
    s = SHAPES[shape]
    q = s["quality"]
    flags = ["--data", q["data"], "--algo", algo, "--workers", str(q["dpus"]), "--epochs", str(q["epochs"]),
             "--batch", str(q["batch"][algo])] + s["flags"] + (["--rho", "0.000244140625"] if algo == "admm" else [])
    r = train(flags, tmp, backend="cpu")
    rows = r["train_data"]["rows"]
    test = r["final"]["test"]
    return {"epoch_here_s": r["time"]["seconds_per_epoch"], "rows_here": rows,
            "epoch_s": r["time"]["seconds_per_epoch"] * TARGET_DPUS * s["rows_per_dpu"] / rows,
            "test_accuracy": test["accuracy"], "test_auc": test["auc"],
            "command": "pimopt train --backend cpu " + " ".join(flags)}


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--calibration", type=bu.input_file, default=baselines.DEFAULT_CALIBRATION)
    ap.add_argument("--quick", action="store_true", help="YFCC only (about a minute)")
    return ap


def main():
    args = build_parser().parse_args()
    try:  # the figures need it: refused before minutes of runs, not after them
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("reproduce_pim_opt.py: needs python3-matplotlib for its figures (scripts/setup.sh --bench installs "
                 "it); run it with /usr/bin/python3")
    os.makedirs(args.out, exist_ok=True)
    with open(args.calibration) as f:
        cal = json.load(f)
    tmp = os.path.join(args.out, "reproduce_report.json")
    rows = []
    for shape in (["yfcc"] if args.quick else ["yfcc", "criteo"]):
        s = SHAPES[shape]
        total_rows = TARGET_DPUS * s["rows_per_dpu"]
        gpu, resident = None, {}
        if s["gpu_batch"]:
            gpu = baselines.gpu_epoch(cal, total_rows, s["gpu_batch"], s["features"])
            # The GPU program a user would write: the training set in device memory (the H200), streamed in large
            # pinned chunks where it does not fit (the A100's 80 GB; docs/baselines.md).
            resident = {name: baselines.gpu_resident_epoch(total_rows, s["gpu_batch"], s["features"], system)
                        for name, system in baselines.GPU_SYSTEMS.items()}
        for algo in ALGOS:
            cpu = baselines.cpu_epoch(cal, shape, algo, total_rows, s["cpu_batch"][algo], s["features"])
            row = {"data": shape, "algo": algo, "cpu_epoch_s": cpu["epoch_s"], "cpu_band_s": cpu["band_s"],
                   "cpu_allreduce_factor": cpu["allreduce_factor"],
                   "gpu_epoch_s": gpu["epoch_s"] if gpu else None, "gpu_band_s": gpu["band_s"] if gpu else None}
            for name, r in resident.items():
                row[f"gpu_{name}_resident_epoch_s"] = r["epoch_s"]
                row[f"gpu_{name}_resident_band_s"] = r["band_s"]
                row[f"gpu_{name}_resident_mode"] = r["mode"]
            row["cpu_backend"] = cpu_backend_epoch(shape, algo, tmp)
            for kernel in ("pimopt", "pim-opt"):
                row[kernel] = pim_epoch(shape, algo, kernel, tmp)
                row[kernel + " quality"] = pim_quality(shape, algo, kernel, tmp)
                print(f"{shape:6s} {algo:5s} {kernel:7s}: PIM {row[kernel]['modeled_epoch_s']:9.2f} s/epoch, "
                      f"CPU {cpu['epoch_s']:9.2f}" + (f", GPU {gpu['epoch_s']:7.2f}" if gpu else ""), flush=True)
            rows.append(row)
    with bu.atomic_open(os.path.join(args.out, "reproduce_pim_opt.json")) as f:
        json.dump(rows, f, indent=1)

    # The table, and the headline ratios: the best PIM configuration against the best CPU / GPU one.
    lines = ["| data | algorithm | PIM, pimopt's kernel (s/epoch) | PIM, PIM-Opt's kernel | CPU baseline (band) | "
             "GPU baseline (band) | pimopt's CPU backend here (2 cores) | test accuracy, AUC: pimopt's kernel | "
             "PIM-Opt's kernel | CPU backend |", "|---" * 10 + "|"]
    def quality(r, kernel):
        q = r[kernel + " quality"] if kernel != "cpu_backend" else r[kernel]
        return f"{q['test_accuracy']:.4f}, {q['test_auc']:.4f}"
    for r in rows:
        gpu = f"{r['gpu_epoch_s']:.1f} ({r['gpu_band_s'][0]:.0f}-{r['gpu_band_s'][1]:.0f})" if r["gpu_epoch_s"] else "-"
        lines.append(f"| {r['data']} | {ALGOS[r['algo']]} | {r['pimopt']['modeled_epoch_s']:.2f} | "
                     f"{r['pim-opt']['modeled_epoch_s']:.2f} | {r['cpu_epoch_s']:.1f} "
                     f"({r['cpu_band_s'][0]:.1f}-{r['cpu_band_s'][1]:.1f}) | {gpu} | "
                     f"{r['cpu_backend']['epoch_s']:.1f} | {quality(r, 'pimopt')} | {quality(r, 'pim-opt')} | "
                     f"{r['cpu_backend']['test_accuracy']:.4f}, {r['cpu_backend']['test_auc']:.4f} |")
    # Ratios: the baseline's modeled epoch over PIM's, per algorithm (the GPU runs one SGD program for all), then the
    # largest ("up to") next to the claim.
    lines.append("")
    lines.append("| data | algorithm | CPU / PIM-Opt's kernel (band) | GPU / PIM-Opt's kernel (band) | "
                 "CPU / pimopt's kernel | GPU / pimopt's kernel |")
    lines.append("|---" * 6 + "|")

    def ratio(r, system, kernel):
        if r.get(f"{system}_epoch_s") is None:
            return None
        pim = r[kernel]["modeled_epoch_s"]
        lo, hi = r[f"{system}_band_s"]
        return r[f"{system}_epoch_s"] / pim, lo / pim, hi / pim

    def fmt(x, band=True):
        if x is None:
            return "-"
        return f"{x[0]:.2f}x ({x[1]:.2f}-{x[2]:.2f})" if band else f"{x[0]:.2f}x"
    for r in rows:
        lines.append(f"| {r['data']} | {ALGOS[r['algo']]} | {fmt(ratio(r, 'cpu', 'pim-opt'))} | "
                     f"{fmt(ratio(r, 'gpu', 'pim-opt'))} | {fmt(ratio(r, 'cpu', 'pimopt'), False)} | "
                     f"{fmt(ratio(r, 'gpu', 'pimopt'), False)} |")
    # The GPU program a user would write (the training set resident in device memory, or streamed in large chunks
    # where it does not fit): its modeled epoch over PIM's.
    if any(r.get("gpu_h200_resident_epoch_s") for r in rows):
        lines.append("")
        lines.append("| data | algorithm | GPU, resident data: A100 80 GB (mode) | H200 (mode) | "
                     "A100 resident / PIM-Opt's kernel (band) | H200 resident / PIM-Opt's kernel (band) | "
                     "A100 resident / pimopt's kernel | H200 resident / pimopt's kernel |")
        lines.append("|---" * 8 + "|")
        for r in rows:
            if not r.get("gpu_h200_resident_epoch_s"):
                continue
            cells = [f"{r['gpu_' + g + '_resident_epoch_s']:.2f} ({r['gpu_' + g + '_resident_mode']})"
                     for g in ("a100", "h200")]
            cells += [fmt(ratio(r, f"gpu_{g}_resident", "pim-opt")) for g in ("a100", "h200")]
            cells += [fmt(ratio(r, f"gpu_{g}_resident", "pimopt"), False) for g in ("a100", "h200")]
            lines.append(f"| {r['data']} | {ALGOS[r['algo']]} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| data | versus | claimed \"up to\" | modeled, PIM-Opt's kernel: largest ratio (algorithm) | "
                 "algorithms whose band contains the claim | verdict |")
    lines.append("|---" * 6 + "|")
    versus = {"cpu": ("cpu", "CPU (128 processes)"), "gpu": ("gpu", "GPU, the artifact's program (A100)"),
              "gpu_a100_resident": ("gpu", "GPU, resident data (A100: streamed)"),
              "gpu_h200_resident": ("gpu", "GPU, resident data (H200)")}
    for shape in sorted({r["data"] for r in rows}, key=list(SHAPES).index):
        rs = [r for r in rows if r["data"] == shape]
        for system, (claim_key, label) in versus.items():
            claim = CLAIMS[shape][claim_key]
            if rs[0].get(f"{system}_epoch_s") is None:
                if system in ("cpu", "gpu"):
                    lines.append(f"| {shape} | {label} | {claim}x | no such baseline in PIM-Opt for this dataset | - "
                                 "| - |")
                continue
            best = max(rs, key=lambda r: ratio(r, system, "pim-opt")[0])
            inside = [ALGOS[r["algo"]] for r in rs
                      if ratio(r, system, "pim-opt")[1] <= claim <= ratio(r, system, "pim-opt")[2]]
            central, lo, hi = ratio(best, system, "pim-opt")
            verdict = ("PIM faster beyond the band" if lo > 1 else "baseline faster beyond the band" if hi < 1
                       else "a tie within the band")
            lines.append(f"| {shape} | {label} | {claim}x | {fmt((central, lo, hi))} ({ALGOS[best['algo']]}) | "
                         f"{', '.join(inside) or 'none'} | best PIM algorithm: {verdict} |")
    if not args.quick:
        lines += studies(args.out, cal, rows, tmp)
    table = "\n".join(lines)
    with bu.atomic_open(os.path.join(args.out, "reproduce_pim_opt.md")) as f:
        f.write(table + "\n")
    print(table)


STUDY_BATCHES = {  # the paper's batch-size figures (Fig. 6, 11): model, algorithm, batches (GA: global)
    "yfcc": [("svm", "ma", [8, 16, 32, 64]), ("svm", "ga", [4096, 8192, 16384, 32768]), ("lr", "admm", [8, 16, 32, 64])],
    "criteo": [("svm", "ma", [1024, 2048, 4096, 8192]), ("svm", "ga", [131072, 262144, 524288]),
               ("lr", "admm", [1024, 2048, 4096, 8192])],
}
SCALING_DPUS = [256, 512, 1024, 2048]
SCALING_GA_BATCH = {"yfcc": 8192, "criteo": 262144}  # Fig. 7, 8, 12, 13


def run_batch(shape, algo, global_or_local_batch):
    """The batch of the run here for a batch at 2,048 DPUs (GA: B / 2,048 rows per DPU, times the run's DPUs)."""
    s = SHAPES[shape]
    if algo == "ga":
        return max(1, global_or_local_batch // TARGET_DPUS) * s["run_dpus"]
    return global_or_local_batch


def studies(out, cal, rows, tmp):
    """Analogues of the paper's Figures 2, 4 and 9 (breakdowns, throughput), 5 and 10 (accuracy vs time), 6 and 11
    (batch sizes), 7, 8, 12 and 13 (weak and strong scaling): PNGs in OUT and their tables (markdown lines)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    md = ["", "## Figures (PIM-Opt's kernel unless marked; modeled times at the paper's scale)", ""]
    shapes = sorted({r["data"] for r in rows}, key=list(SHAPES).index)
    kernels = {"pimopt": "pimopt's kernel", "pim-opt": "PIM-Opt's kernel"}
    phases = [("cpu_to_dpu_s", "CPU->DPU"), ("kernel_s", "DPU kernel + launches"), ("dpu_to_cpu_s", "DPU->CPU"),
              ("host_reduction_s", "host reduction")]

    # Fig. 4 / 9: per-epoch breakdown per algorithm, both kernels.
    fig, axes = plt.subplots(1, len(shapes), figsize=(6 * len(shapes), 4))
    md += ["### Per-epoch breakdown (Fig. 4, 9): `fig_breakdown.png`", "",
           "| data | algorithm | kernel | " + " | ".join(name for _, name in phases) + " | epoch (s) |",
           "|---" * (4 + len(phases)) + "|"]
    for ax, shape in zip(axes if len(shapes) > 1 else [axes], shapes):
        labels, bottoms = [], None
        bars = []
        for r in [r for r in rows if r["data"] == shape]:
            for kernel, kname in kernels.items():
                labels.append(f"{ALGOS[r['algo']]}\n{'pimopt' if kernel == 'pimopt' else 'PIM-Opt'}")
                bars.append([r[kernel][key] for key, _ in phases])
                md.append(f"| {shape} | {ALGOS[r['algo']]} | {kname} | " +
                          " | ".join(f"{r[kernel][key]:.2f}" for key, _ in phases) +
                          f" | {r[kernel]['modeled_epoch_s']:.2f} |")
        # Shares of the epoch (the epochs differ by 100x), each bar labelled with its modeled seconds.
        totals = [sum(b) for b in bars]
        bottoms = [0.0] * len(bars)
        for i, (_, name) in enumerate(phases):
            vals = [100 * b[i] / t for b, t in zip(bars, totals)]
            ax.bar(range(len(bars)), vals, bottom=bottoms, label=name)
            bottoms = [x + v for x, v in zip(bottoms, vals)]
        for i, t in enumerate(totals):
            ax.text(i, 101, f"{t:.3g} s", ha="center", fontsize=7)
        ax.set_xticks(range(len(bars)), labels, fontsize=7)
        ax.set(ylabel="share of the modeled epoch (%)", ylim=(0, 112), title=f"{shape}, 2,048 DPUs")
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    with bu.atomic_path(os.path.join(out, "fig_breakdown.png")) as png:
        fig.savefig(png, dpi=110)
    plt.close(fig)

    # Fig. 2: throughput and data movement per algorithm (Criteo when run, else YFCC).
    shape = shapes[-1]
    rs = [r for r in rows if r["data"] == shape]
    md += ["", f"### Throughput and data movement (Fig. 2), {shape}, PIM-Opt's kernel: `fig_throughput.png`", "",
           "| algorithm | CPU<->DPU GB/s | MRAM<->WRAM GB/s (all DPUs) | host<->DPU bytes | MRAM<->WRAM bytes |",
           "|---|---|---|---|---|"]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    bw_host, bw_mram, b_host, b_mram = [], [], [], []
    for r in rs:
        p = r["pim-opt"]
        bw_host.append(p["bytes"] / max(p["cpu_to_dpu_s"] + p["dpu_to_cpu_s"], 1e-12) / 1e9)
        bw_mram.append(p["mram_wram_bytes"] / max(p["dpu_kernel_s"], 1e-12) / 1e9)
        b_host.append(p["bytes"])
        b_mram.append(p["mram_wram_bytes"])
        md.append(f"| {ALGOS[r['algo']]} | {bw_host[-1]:.1f} | {bw_mram[-1]:.0f} | {p['bytes']:.3g} | "
                  f"{p['mram_wram_bytes']:.3g} |")
    x = range(len(rs))
    names = [ALGOS[r["algo"]] for r in rs]
    ax[0].bar([i - 0.2 for i in x], bw_host, 0.4, label="CPU<->DPU")
    ax[0].bar([i + 0.2 for i in x], bw_mram, 0.4, label="MRAM<->WRAM")
    ax[0].set(yscale="log", ylabel="GB/s", title=f"(a) throughput, {shape}")
    ax[1].bar([i - 0.2 for i in x], b_host, 0.4, label="host<->DPU")
    ax[1].bar([i + 0.2 for i in x], b_mram, 0.4, label="MRAM<->WRAM")
    ax[1].set(yscale="log", ylabel="bytes per epoch", title="(b) data movement")
    for a in ax:
        a.set_xticks(list(x), names)
        a.legend()
    fig.tight_layout()
    with bu.atomic_path(os.path.join(out, "fig_throughput.png")) as png:
        fig.savefig(png, dpi=110)
    plt.close(fig)

    # Fig. 5 / 10: quality against training time (10 epochs).
    md += ["", "### Quality against time, 10 epochs (Fig. 5, 10): `fig_quality_time.png`", "",
           "Test accuracy (YFCC) or AUC (Criteo) from the 3-epoch quality runs (16 / 4 DPUs; the paper's data does not "
           "fit here), time from the modeled epochs at 2,048 DPUs; the baselines at their modeled times with the "
           "quality of pimopt's CPU backend running the same algorithm (float32).", "",
           "| data | algorithm | system | 10 epochs (s) | test metric |", "|---|---|---|---|---|"]
    fig, axes = plt.subplots(1, len(shapes), figsize=(6 * len(shapes), 4))
    for ax, shape in zip(axes if len(shapes) > 1 else [axes], shapes):
        metric = "test_accuracy" if shape == "yfcc" else "test_auc"
        for r in [r for r in rows if r["data"] == shape]:
            pts = [("PIM, PIM-Opt's kernel", 10 * r["pim-opt"]["modeled_epoch_s"], r["pim-opt quality"][metric], "o"),
                   ("PIM, pimopt's kernel", 10 * r["pimopt"]["modeled_epoch_s"], r["pimopt quality"][metric], "s"),
                   ("CPU baseline", 10 * r["cpu_epoch_s"], r["cpu_backend"][metric], "^")]
            if r["gpu_epoch_s"]:
                pts.append(("GPU baseline (SGD)", 10 * r["gpu_epoch_s"], r["cpu_backend"][metric], "v"))
            for name, t, q, marker in pts:
                ax.scatter(t, 100 * q, marker=marker, label=f"{ALGOS[r['algo']]}, {name}")
                md.append(f"| {shape} | {ALGOS[r['algo']]} | {name} | {t:.1f} | {q:.4f} |")
        ax.set(xscale="log", xlabel="training time, 10 epochs (s, modeled)",
               ylabel="test accuracy (%)" if shape == "yfcc" else "test AUC (%)", title=shape)
        ax.legend(fontsize=6)
    fig.tight_layout()
    with bu.atomic_path(os.path.join(out, "fig_quality_time.png")) as png:
        fig.savefig(png, dpi=110)
    plt.close(fig)

    # Fig. 6 / 11: batch sizes, PIM (PIM-Opt's kernel) against the CPU baseline.
    md += ["", "### Batch size (Fig. 6, 11): `fig_batch.png`", "",
           "| data | model | algorithm | batch (GA: global) | PIM s/epoch | CPU baseline s/epoch |",
           "|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(len(shapes), 3, figsize=(14, 3.6 * len(shapes)), squeeze=False)
    for row_axes, shape in zip(axes, shapes):
        s = SHAPES[shape]
        for ax, (model, algo, batches) in zip(row_axes, STUDY_BATCHES[shape]):
            pim, cpu = [], []
            for b in batches:
                rb = run_batch(shape, algo, b)
                saved = s["data"]
                if shape == "criteo" and rb > 4096:  # each of the 4 DPUs needs a batch of rows
                    s["data"] = f"sparse:rows={4 * rb},features=1000000,seed=3,test_rows=4096"
                pim.append(pim_epoch(shape, algo, "pim-opt", tmp, batch=rb, model=model)["modeled_epoch_s"])
                s["data"] = saved
                cpu_b = b // 128 if algo == "ga" else b
                cpu.append(baselines.cpu_epoch(cal, shape, algo, TARGET_DPUS * s["rows_per_dpu"], cpu_b,
                                               s["features"])["epoch_s"])
                md.append(f"| {shape} | {model} | {ALGOS[algo]} | {b} | {pim[-1]:.2f} | {cpu[-1]:.1f} |")
            ax.plot(batches, pim, "o-", label="PIM (2,048 DPUs)")
            ax.plot(batches, cpu, "^--", label="CPU baseline (128 processes)")
            ax.set(xscale="log", yscale="log", xlabel="batch" + (" (global)" if algo == "ga" else " (per worker)"),
                   ylabel="s per epoch", title=f"{shape} {model.upper()} {ALGOS[algo]}")
            ax.legend(fontsize=7)
    fig.tight_layout()
    with bu.atomic_path(os.path.join(out, "fig_batch.png")) as png:
        fig.savefig(png, dpi=110)
    plt.close(fig)

    # Fig. 7, 8, 12, 13: weak and strong scaling, LR.
    md += ["", "### Weak and strong scaling, LR (Fig. 7, 8, 12, 13): `fig_scaling.png`", "",
           "Weak: the paper's rows per DPU at every DPU count; strong: the 256-DPU data set spread over more DPUs. "
           "GA-SGD's global batch is fixed (YFCC 8,192, Criteo 262,144), MA-SGD's and ADMM's local batch too.", "",
           "| data | scaling | algorithm | " + " | ".join(f"{k} DPUs" for k in SCALING_DPUS) + " |",
           "|---" * (3 + len(SCALING_DPUS)) + "|"]
    fig, axes = plt.subplots(len(shapes), 2, figsize=(11, 3.6 * len(shapes)), squeeze=False)
    for row_axes, shape in zip(axes, shapes):
        s = SHAPES[shape]
        for ax, mode in zip(row_axes, ("weak", "strong")):
            for algo in ALGOS:
                times = []
                for k in SCALING_DPUS:
                    rpd = s["rows_per_dpu"] if mode == "weak" else s["rows_per_dpu"] * 256 // k
                    rb = max(1, SCALING_GA_BATCH[shape] // k) * s["run_dpus"] if algo == "ga" else None
                    times.append(pim_epoch(shape, algo, "pim-opt", tmp, dpus=k, rows_per_dpu=rpd,
                                           batch=rb)["modeled_epoch_s"])
                md.append(f"| {shape} | {mode} | {ALGOS[algo]} | " + " | ".join(f"{t:.2f}" for t in times) + " |")
                ax.plot(SCALING_DPUS, times, "o-", label=ALGOS[algo])
            ax.set(xscale="log", yscale="log", xlabel="DPUs", ylabel="modeled s per epoch",
                   title=f"{shape}, {mode} scaling")
            ax.set_xticks(SCALING_DPUS, [str(k) for k in SCALING_DPUS])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.legend(fontsize=7)
    fig.tight_layout()
    with bu.atomic_path(os.path.join(out, "fig_scaling.png")) as png:
        fig.savefig(png, dpi=110)
    plt.close(fig)
    return md


if __name__ == "__main__":
    main()
