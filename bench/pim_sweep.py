#!/usr/bin/python3
"""PIM training sweeps in the style of the PIM-Opt paper's figures, on the emulated UPMEM system.

  1. fashion-mnist (real data, fixed size = strong scaling): GA-SGD, MA-SGD, ADMM (LR) on 256..2,048 DPUs:
     test accuracy against the number of DPUs, and accuracy against modeled training time.
  2. Criteo-shaped sparse LR (10^6 features, 39 non-zeros, class weights 15 : 0.5), weak scaling: a 4-DPU run
     projected to 256..2,048 DPUs x 196,608 rows per DPU (PIM-Opt's configuration): modeled epoch time and its
     breakdown per algorithm, bytes moved; and the local batch sweep 1,024..8,192 for MA-SGD.
  3. YFCC-shaped dense LR (4,096 features in [0,1]), weak scaling: a 256-DPU run projected to 256..2,048 DPUs x
     3,328 rows per DPU.

Run with Debian's interpreter (needs python3-matplotlib): /usr/bin/python3 bench/pim_sweep.py [--out bench/out]
Writes OUT/pim_sweep.json, OUT/pim_sweep.csv and PNG plots. Projected numbers are extrapolations (see
include/pimopt/backends/projection.h, EpochProjection).
"""
import argparse
import csv
import json
import os

import bench_util as bu  # noqa: E402
from bench_util import timed_projection, train  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGOS = {"ga": "GA-SGD", "ma": "MA-SGD", "admm": "ADMM"}


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--epochs", type=bu.positive_int, default=3)
    return ap


def main():
    args = build_parser().parse_args()
    import matplotlib  # after the arguments: a bad one is refused without it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(args.out, exist_ok=True)
    tmp = os.path.join(args.out, "report.json")
    rows = []
    dpu_counts = [256, 512, 1024, 2048]

    # 1. fashion-mnist, strong scaling.
    fm = {"ga": ["--batch", "4096", "--lr", "0.1"], "ma": ["--batch", "8", "--lr", "0.05"],
          "admm": ["--batch", "8", "--lr", "0.05", "--rho", "0.01"]}
    curves = {}
    for algo, flags in fm.items():
        for k in dpu_counts:
            r = train(["--data", "fashion-mnist", "--algo", algo, "--dpus", str(k), "--epochs", str(args.epochs),
                       "--lr-schedule", "inverse-sqrt", "--lr-decay", "1"] + flags, tmp)
            t, acc = 0.0, []
            for e in r["epochs"]:
                t += e["phases_seconds"]["modeled_total"]
                acc.append((t, e["test"]["accuracy"]))
            curves[(algo, k)] = acc
            ph = r["time"]["phases_seconds"]
            rows.append({"study": "fashion-mnist strong", "algo": algo, "dpus": k, "rows_per_dpu": 60000 // k,
                         "test_accuracy": r["final"]["test"]["accuracy"],
                         "modeled_epoch_s": ph["modeled_total"] / args.epochs,
                         "cpu_to_dpu_s": ph["modeled_cpu_to_dpu"] / args.epochs,
                         "kernel_s": ph["modeled_dpu_kernel"] / args.epochs,
                         "dpu_to_cpu_s": ph["modeled_dpu_to_cpu"] / args.epochs,
                         "host_reduction_s": ph["modeled_host_reduction"] / args.epochs,
                         "bytes": (r["traffic"]["host_to_workers_bytes"] + r["traffic"]["workers_to_host_bytes"])
                         / args.epochs,
                         "emulation_wall_s": r["time"]["train_wall_seconds"] / args.epochs})
            print(f"fashion-mnist {algo:5s} {k:5d} DPUs: test acc {rows[-1]['test_accuracy']:.4f}, "
                  f"modeled {rows[-1]['modeled_epoch_s']:.3f} s/epoch", flush=True)

    # 2. Criteo-shaped, weak scaling by projection from 4 DPUs.
    criteo_data = "sparse:rows=16384,features=1000000,seed=3,test_rows=4096"
    criteo = {"ga": ["--batch", "512"], "ma": ["--batch", "2048"], "admm": ["--batch", "2048", "--rho", "0.000244140625"]}
    def criteo_run(algo, flags, k, batch_label, data=criteo_data):
        r = train(["--data", data, "--algo", algo, "--dpus", "4", "--epochs", "1", "--lr", "1",
                   "--reg", "0.000244140625", "--class-weights", "15:0.5", "--project-dpus", str(k),
                   "--project-rows-per-dpu", "196608"] + flags, tmp)
        p = timed_projection(r)
        rows.append({"study": "criteo weak (projected)", "algo": algo, "dpus": k, "rows_per_dpu": 196608,
                     "batch": batch_label, "test_auc": r["final"]["test"]["auc"],
                     "modeled_epoch_s": p["modeled_epoch_s"], "cpu_to_dpu_s": p["modeled_cpu_to_dpu_s"],
                     "kernel_s": p["modeled_dpu_kernel_s"] + p["modeled_launch_overhead_s"],
                     "dpu_to_cpu_s": p["modeled_dpu_to_cpu_s"], "host_reduction_s": p["host_reduction_s"],
                     "bytes": p["cpu_to_dpu_bytes"] + p["dpu_to_cpu_bytes"]})
        print(f"criteo {algo:5s} {k:5d} DPUs b={batch_label}: {p['modeled_epoch_s']:.1f} s/epoch, "
              f"{rows[-1]['bytes']:.3g} bytes", flush=True)
    for algo, flags in criteo.items():
        for k in dpu_counts:
            criteo_run(algo, flags, k, flags[1])
    for b in [1024, 4096, 8192]:  # 2,048 is in the scaling runs above; a run needs >= b rows per DPU
        criteo_run("ma", ["--batch", str(b)], 2048, str(b),
                   f"sparse:rows={4 * max(4096, b)},features=1000000,seed=3,test_rows=4096")

    # 3. YFCC-shaped, weak scaling by projection from 256 DPUs x 64 rows.
    yfcc = {"ga": ["--batch", "2048"], "ma": ["--batch", "8"], "admm": ["--batch", "8", "--rho", "0.000244140625"]}
    for algo, flags in yfcc.items():
        for k in dpu_counts:
            r = train(["--data", "dense:rows=16384,features=4096,test_rows=2048", "--algo", algo, "--dpus", "256",
                       "--epochs", "1", "--lr", "0.015625", "--reg", "0.000244140625", "--project-dpus", str(k),
                       "--project-rows-per-dpu", "3328"] + flags, tmp)
            p = timed_projection(r)
            rows.append({"study": "yfcc weak (projected)", "algo": algo, "dpus": k, "rows_per_dpu": 3328,
                         "modeled_epoch_s": p["modeled_epoch_s"], "cpu_to_dpu_s": p["modeled_cpu_to_dpu_s"],
                         "kernel_s": p["modeled_dpu_kernel_s"] + p["modeled_launch_overhead_s"],
                         "dpu_to_cpu_s": p["modeled_dpu_to_cpu_s"], "host_reduction_s": p["host_reduction_s"],
                         "bytes": p["cpu_to_dpu_bytes"] + p["dpu_to_cpu_bytes"]})
            print(f"yfcc {algo:5s} {k:5d} DPUs: {p['modeled_epoch_s']:.2f} s/epoch", flush=True)

    with bu.atomic_open(os.path.join(args.out, "pim_sweep.json")) as f:
        json.dump(rows, f, indent=1)
    keys = sorted({k for r in rows for k in r})
    with bu.atomic_open(os.path.join(args.out, "pim_sweep.csv"), newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)

    # Plots.
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for algo in fm:
        pts = [r for r in rows if r["study"] == "fashion-mnist strong" and r["algo"] == algo]
        ax[0].plot([r["dpus"] for r in pts], [100 * r["test_accuracy"] for r in pts], "o-", label=ALGOS[algo])
        t, a = zip(*curves[(algo, 2048)])
        ax[1].plot(t, [100 * x for x in a], "o-", label=f"{ALGOS[algo]} (2,048 DPUs)")
    ax[0].set(xscale="log", xlabel="DPUs (fixed data)", ylabel="test accuracy (%)", title="fashion-mnist LR")
    ax[0].minorticks_off()
    ax[0].set_xticks(dpu_counts, [str(k) for k in dpu_counts])
    ax[1].set(xscale="log", xlabel="modeled training time (s)", ylabel="test accuracy (%)",
              title="accuracy vs modeled time")
    for a in ax:
        a.legend()
        a.grid(alpha=0.3)
    fig.tight_layout()
    with bu.atomic_path(os.path.join(args.out, "pim_fashion_mnist.png")) as png:
        fig.savefig(png, dpi=110)

    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    parts = [("cpu_to_dpu_s", "CPU->DPU"), ("dpu_to_cpu_s", "DPU->CPU"), ("host_reduction_s", "host reduction"),
             ("kernel_s", "DPU kernel")]
    for i, (study, title) in enumerate([("criteo weak (projected)", "Criteo-shaped LR, 2,048 DPUs (projected)"),
                                        ("yfcc weak (projected)", "YFCC-shaped LR, 2,048 DPUs (projected)")]):
        pts = [r for r in rows if r["study"] == study and r["dpus"] == 2048 and r.get("batch") in (None, "512", "2048")]
        bottom = [0.0] * len(pts)
        totals = [sum(r[key] for key, _ in parts) for r in pts]
        names = [f"{ALGOS[r['algo']]}\n{total:.3g} s/epoch" for r, total in zip(pts, totals)]
        for key, label in parts:
            vals = [100 * r[key] / total for r, total in zip(pts, totals)]
            ax[i].bar(names, vals, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax[i].set(ylabel="share of the modeled epoch time (%)", title=title)
        ax[i].legend(fontsize=8)
    for algo in criteo:
        pts = [r for r in rows if r["study"] == "criteo weak (projected)" and r["algo"] == algo
               and r.get("batch") in ("512", "2048")]
        ax[2].plot([r["dpus"] for r in pts], [r["modeled_epoch_s"] for r in pts], "o-", label=f"{ALGOS[algo]} Criteo")
    for algo in yfcc:
        pts = [r for r in rows if r["study"] == "yfcc weak (projected)" and r["algo"] == algo]
        ax[2].plot([r["dpus"] for r in pts], [r["modeled_epoch_s"] for r in pts], "s--", label=f"{ALGOS[algo]} YFCC")
    ax[2].set(xscale="log", yscale="log", xlabel="DPUs (weak scaling)", ylabel="modeled seconds per epoch",
              title="weak scaling (projected)")
    ax[2].minorticks_off()
    ax[2].set_xticks(dpu_counts, [str(k) for k in dpu_counts])
    ax[2].legend(fontsize=7)
    fig.tight_layout()
    with bu.atomic_path(os.path.join(args.out, "pim_breakdown_scaling.png")) as png:
        fig.savefig(png, dpi=110)
    print(f"wrote {args.out}/pim_sweep.json, pim_sweep.csv, pim_fashion_mnist.png, pim_breakdown_scaling.png")


if __name__ == "__main__":
    main()
