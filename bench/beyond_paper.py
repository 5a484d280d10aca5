#!/usr/bin/python3
"""Beyond PIM-Opt: what-if DPU links, faster host paths, compacted synchronization and decentralized training, on the
emulated UPMEM system.

Three workloads on which the algorithms differ in quality:
  yfcc     a dense YFCC-shaped set with overlapping classes (label noise, a weak planted direction);
  criteo   a sparse Criteo-shaped set (hashed categorical fields, 3% positives, PIM-Opt's 15:0.5 class weights);
  fashion  the real built-in fashion-mnist (60,000 rows x 784 features, min-max scaled; its test set).
Every algorithm (GA-SGD, MA-SGD, ADMM, D-PSGD over a ring, a 2-D torus and the chip/rank hierarchy, and CoCoA+, the
dual method that, like ADMM, synchronizes once per epoch) runs on every
profile: today's `pim-opt`, `host-x2`, `host-x4`, `links-rank`, `links-system` (the sums of GA-SGD, MA-SGD and ADMM
as all-reduces, D-PSGD's gossip DPU to DPU), today's hardware with PID-Comm's software collectives (`pim-opt
software`: --sync-path software), with PIM-MMU's transfer engine (`pim-mmu`) and with NUMA-aware allocation
(`numa-aware`) and, for the sparse workload, today's hardware with compacted
synchronization (`--sync-format auto`: index/value pairs up) and with asynchronous transfers (`--transfers async`:
each pull pipelined with the host's sums in chunks). A profile or format changes the modeled time, never
the model (tested), so each algorithm's test AUC per epoch is the same everywhere. The script reports:

  1. modeled seconds to a target test AUC (the best final AUC of all runs less 0.002) per algorithm and profile,
     with the timing model's error bar (`modeled_total_uncertainty`), at the emulated DPU count;
  2. the same projected to 2,048 DPUs (weak scaling: the run's rows per DPU; `--project-dpus`, which re-models
     transfers, host reduction and link exchanges, the hierarchical all-reduce included), assuming the epochs to
     the target stay those of the emulated run;
  3. the link bandwidth at which D-PSGD (torus) overtakes ADMM, from a sweep of `link_bytes_per_s` on
     `links-system` (ADMM on today's hardware and ADMM on the same links);
  4. which orderings hold across the error bars (a ranking holds when the intervals do not overlap).

Usage: /usr/bin/python3 bench/beyond_paper.py [--quick] [--workloads yfcc,criteo,fashion] [--out bench/out] [--check]
  --quick: 2 epochs; yfcc 32 DPUs x 4,096 rows x 512 features, criteo 16 DPUs x 4,096 rows x 16,384 features (fashion
  only when named: 64 DPUs), the profiles its checks need (pim-opt, links-system; criteo also compacted and
  async), CoCoA with one pass only, no link sweep;
  default: yfcc 256 DPUs x 32,768 rows x 4,096 features, criteo 64 DPUs x 65,536 rows x 65,536 features, fashion
  256 DPUs. 4 epochs each; local batches of 8 (yfcc, fashion) and 128 (criteo) rows per DPU.
Writes OUT/beyond_paper.json, OUT/beyond_paper.md and OUT/beyond_time_to_auc.png (with python3-matplotlib).
"""
import argparse
import json
import os
import sys
import tempfile

import bench_util as bu  # noqa: E402
from bench_util import train  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILES = ["pim-opt", "host-x2", "host-x4", "links-rank", "links-system"]
SOFTWARE = "pim-opt software"  # today's hardware with PID-Comm's software collectives (--sync-path software)
ENGINES = ["pim-mmu", "numa-aware"]  # today's hardware with a better transfer engine or NUMA-aware allocation
COMPACTED = "pim-opt compacted"  # today's hardware with --sync-format auto (sparse workload only)
ASYNC = "pim-opt async"  # today's hardware with --transfers async: pulls and host sums pipelined (sparse workload)
PROJECT_DPUS = 2048
LINK_SWEEP = [0.63e9 / 64, 0.63e9 / 16, 0.63e9 / 4, 0.63e9, 4 * 0.63e9]


def algorithms(ga_batch, local, lr, reg, quick=False):
    """Every algorithm of the study with its flags: GA-SGD's global batch, the others' local batch per DPU, the SGD
    methods' learning rate and L2; CoCoA (no learning rate, one pass of dual ascent per round) needs an L2: --reg auto
    (1 / rows) where the workload has none."""
    sgd = ["--lr", lr, "--reg", reg]
    batch = ["--batch", str(local)] + sgd
    return {
        "GA-SGD": ["--algo", "ga", "--batch", str(ga_batch)] + sgd,
        "MA-SGD": ["--algo", "ma"] + batch,
        "ADMM": ["--algo", "admm", "--rho", "0.01"] + batch,
        "D-PSGD ring": ["--algo", "dsgd", "--topology", "ring"] + batch,
        "D-PSGD torus": ["--algo", "dsgd", "--topology", "torus"] + batch,
        "D-PSGD hierarchical": ["--algo", "dsgd", "--topology", "hierarchical"] + batch,
        "CoCoA": ["--algo", "cocoa", "--reg", reg if float(reg) > 0 else "auto"],
    } | ({} if quick else {  # more local work per round, as CoCoA's papers trade it against communication
        "CoCoA x4": ["--algo", "cocoa", "--dual-passes", "4", "--reg", reg if float(reg) > 0 else "auto"]})


def workloads(quick):
    """Per workload: data, DPUs, common flags, and each algorithm's flags."""
    yfcc_dpus, yfcc_rows, features = (32, 4096, 512) if quick else (256, 32768, 4096)
    criteo_dpus, criteo_rows, criteo_features = (16, 4096, 16384) if quick else (64, 65536, 65536)
    fashion_dpus = 64 if quick else 256
    # --quick (the test suite's run): the profiles its checks need, no link sweep (collect).
    profiles = ["pim-opt", "links-system"] if quick else PROFILES + [SOFTWARE] + ENGINES
    local = 8  # rows per DPU per step (YFCC, as PIM-Opt)
    sparse_local = 128  # Criteo: PIM-Opt's 2,048 per DPU would leave one step per epoch at these rows per DPU
    return {
        "yfcc": {
            "data": f"dense:rows={yfcc_rows},features={features},separation=0.01,noise=0.1,seed=5,"
                    f"test-rows={yfcc_rows // 8}",
            "dpus": yfcc_dpus,
            "link_sweep": not quick,
            "common": ["--scale", "none"],
            "profiles": profiles,
            "algorithms": algorithms(16 * yfcc_dpus, local, "0.02", "1e-5", quick),
        },
        "criteo": {
            "data": f"sparse:rows={criteo_rows},features={criteo_features},vocabulary=10000,seed=5,"
                    f"test-rows={criteo_rows // 8}",
            "dpus": criteo_dpus,
            "link_sweep": not quick,
            # No L2 (as PIM-Opt's Criteo LR runs), so MA-SGD's model deltas are sparse too.
            "common": ["--scale", "none", "--class-weights", "15:0.5"],
            "profiles": profiles + [COMPACTED, ASYNC],
            "algorithms": algorithms(sparse_local * criteo_dpus, sparse_local, "0.05", "0", quick),
        },
        "fashion": {
            # The real built-in set: 60,000 dense rows of 784 features (min-max scaled), 40% positives.
            "data": "fashion-mnist:train",
            "dpus": fashion_dpus,
            "link_sweep": not quick,
            "common": ["--test", "fashion-mnist:test"],
            "profiles": profiles,
            "algorithms": algorithms(16 * fashion_dpus, local, "0.05", "1e-5", quick),
        },
    }


def run(name, flags, profile, common, tmp, overrides=None):
    args = common + flags
    if profile == COMPACTED:
        args += ["--profile", "pim-opt", "--sync-format", "auto"]
    elif profile == ASYNC:
        args += ["--profile", "pim-opt", "--transfers", "async"]
    elif profile == SOFTWARE:
        args += ["--profile", "pim-opt", "--sync-path", "software"]
    else:
        args += ["--profile", profile]
    if overrides:
        args += ["--profile-set", overrides]
    r = train(args + ["--project-dpus", str(PROJECT_DPUS)], os.path.join(tmp, "r.json"))
    epochs = []
    elapsed = bar = joules = 0.0
    for e in r["epochs"]:
        phases = e["phases_seconds"]
        elapsed += phases["modeled_total"]
        bar += phases.get("modeled_total_uncertainty", 0.0)
        joules += phases["modeled_energy_j"]
        epochs.append({"epoch": e["epoch"], "auc": e["test"]["auc"], "accuracy": e["test"]["accuracy"],
                       "modeled_s": elapsed, "uncertainty_s": bar,
                       "dpu_to_dpu_s": phases.get("modeled_dpu_to_dpu", 0.0)})
    n = len(epochs)
    projection = r.get("projection", {})
    return {"algorithm": name, "profile": profile, "overrides": overrides or "", "epochs": epochs,
            "s_per_epoch": elapsed / n, "bar_per_epoch": bar / n,
            "projected_s_per_epoch": projection.get("modeled_epoch_s"), "projection_note": projection.get("note", ""),
            "j_per_epoch": joules / n, "projected_j_per_epoch": projection.get("modeled_energy_j"),
            "to_host_bytes_per_epoch": r["traffic"]["workers_to_host_bytes"] / n}


def time_to(run_, target):
    for e in run_["epochs"]:
        if e["auc"] >= target:
            return e["modeled_s"], e["uncertainty_s"], e["epoch"]
    return None, None, None


def run_of(runs, name, profile):
    return next(x for x in runs if x["algorithm"] == name and x["profile"] == profile)


def fastest_lines(table, profiles):
    lines = []
    for profile in profiles:
        reached = sorted((t, bar, name) for (name, p), (t, bar) in table.items() if p == profile and t is not None)
        if len(reached) >= 2:
            (t1, b1, n1), (t2, b2, n2) = reached[0], reached[1]
            sure = "holds" if t1 + b1 < t2 - b2 else "within the error bars"
            lines.append(f"- `{profile}`: {n1} ({t1:.3f} s) ahead of {n2} ({t2:.3f} s): {sure}")
    return lines


def collect(key, w, tmp, epochs):
    """Every run of workload KEY: each algorithm on each profile, and the link sweep."""
    common = ["--data", w["data"], "--dpus", str(w["dpus"]), "--epochs", str(epochs)] + w["common"]
    runs = []
    for profile in w["profiles"]:
        for name, flags in w["algorithms"].items():
            runs.append(run(name, flags, profile, common, tmp))
            r = runs[-1]
            projected = r["projected_s_per_epoch"]
            projected = "n/a" if projected is None else f"{projected:.4f}"
            print(f"{key} {profile:18s} {name:20s} {r['s_per_epoch']:.4f} s/epoch ({projected} at {PROJECT_DPUS}), "
                  f"AUC {r['epochs'][-1]['auc']:.4f}", flush=True)
    sweep = []
    for bw in LINK_SWEEP if w["link_sweep"] else []:
        for name in ("D-PSGD torus", "ADMM"):
            r = run(name, w["algorithms"][name], "links-system", common, tmp, f"link_bytes_per_s={bw:g}")
            r["link_bytes_per_s"] = bw
            sweep.append(r)
        print(f"{key} links-system link {bw:.3g} B/s: D-PSGD torus {sweep[-2]['s_per_epoch']:.4f}, ADMM "
              f"{sweep[-1]['s_per_epoch']:.4f} s/epoch", flush=True)
    return runs, sweep


def study(key, w, runs, sweep, epochs):
    """The tables of workload KEY from its runs. The target is the one PIM-Opt's algorithms set: the best final AUC
    of GA-SGD, MA-SGD, ADMM and D-PSGD less 0.002 (CoCoA solves another objective and may end higher: it is timed
    to the same target)."""
    target = max(r["epochs"][-1]["auc"] for r in runs if not r["algorithm"].startswith("CoCoA")) - 0.002
    profiles = w["profiles"]
    lines = [f"#### {key}: `{w['data']}`, {w['dpus']} DPUs, {epochs} epochs, flags `{' '.join(w['common'])}`", "",
             f"Target test AUC {target:.4f} (the best final AUC of GA-SGD, MA-SGD, ADMM and D-PSGD less 0.002). Cells: "
             "modeled seconds to the target "
             "(+- the timing model's error bar) and the epoch that reached it, or `-` when not reached.", ""]
    lines.append("| algorithm | final AUC | " + " | ".join(profiles) + " |")
    lines.append("|---" * (2 + len(profiles)) + "|")
    table = {}
    for name in w["algorithms"]:
        cells = []
        for profile in profiles:
            t, bar, epoch = time_to(run_of(runs, name, profile), target)
            table[(name, profile)] = (t, bar)
            cells.append(f"{t:.3f} +- {bar:.3f} ({epoch} ep)" if t is not None else "-")
        final = next(x for x in runs if x["algorithm"] == name)["epochs"][-1]["auc"]
        lines.append(f"| {name} | {final:.4f} | " + " | ".join(cells) + " |")
    lines += ["", f"Projected to {PROJECT_DPUS} DPUs (weak scaling, the epochs to the target as above): modeled "
              "seconds to the target, and seconds per epoch.", "",
              "| algorithm | " + " | ".join(profiles) + " |", "|---" * (1 + len(profiles)) + "|"]
    projected = {}
    for name in w["algorithms"]:
        cells = []
        for profile in profiles:
            r = run_of(runs, name, profile)
            _, _, epoch = time_to(r, target)
            per = r["projected_s_per_epoch"]
            if per is None:  # the profile's links do not reach that many DPUs
                cells.append("n/a*")
            elif epoch is not None:
                projected[(name, profile)] = (epoch * per, 0.0)
                cells.append(f"{epoch * per:.2f} ({per:.3f}/ep)")
            else:
                cells.append(f"- ({per:.3f}/ep)")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if any(r["projection_note"] for r in runs):
        lines += ["", "`*`: " + next(r["projection_note"] for r in runs if r["projection_note"])]
    lines += ["", f"Seconds per epoch at {w['dpus']} DPUs, and MB sent up to the host per epoch:", "",
              "| algorithm | " + " | ".join(profiles) + " |", "|---" * (1 + len(profiles)) + "|"]
    for name in w["algorithms"]:
        cells = []
        for p in profiles:
            r = run_of(runs, name, p)
            cells.append(f"{r['s_per_epoch']:.4f} ({r['to_host_bytes_per_epoch'] / 1e6:.1f} MB)")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", f"Modeled energy per epoch, joules, at {w['dpus']} DPUs and projected to {PROJECT_DPUS} "
              "(docs/pim-emulator.md \"Energy\": DPUs, host <-> DPU transfers, the host's reductions and launches):",
              "", "| algorithm | " + " | ".join(profiles) + " |", "|---" * (1 + len(profiles)) + "|"]
    for name in w["algorithms"]:
        cells = []
        for p in profiles:
            r = run_of(runs, name, p)
            projected_j = r["projected_j_per_epoch"]
            at_target = "n/a" if projected_j is None or r["projected_s_per_epoch"] is None else f"{projected_j:.3g}"
            cells.append(f"{r['j_per_epoch']:.3g} ({at_target})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    # The link bandwidth at which D-PSGD (torus, over links) overtakes ADMM.
    admm_today, admm_bar = table[("ADMM", "pim-opt")]
    lines += ["", "D-PSGD (torus) on `links-system` against ADMM on today's `pim-opt` and on the same links, modeled "
              "seconds to the target, as the DPU link bandwidth varies:", "",
              "| link_bytes_per_s | D-PSGD torus | ADMM on the same links | ADMM today | faster |",
              "|---|---|---|---|---|"]
    crossover = None

    def cell(t, bar):
        return "-" if t is None else f"{t:.3f} +- {bar:.3f}"
    for i in range(0, len(sweep), 2):
        d, a = sweep[i], sweep[i + 1]
        t, bar, _ = time_to(d, target)
        ta, bara, _ = time_to(a, target)
        best_admm = min((x for x in ((ta, bara), (admm_today, admm_bar)) if x[0] is not None), default=(None, None))
        faster = "-"
        if t is not None and best_admm[0] is not None:
            if t + bar < best_admm[0] - best_admm[1]:
                faster = "D-PSGD (beyond the error bars)"
                crossover = crossover or d["link_bytes_per_s"]
            elif t - bar > best_admm[0] + best_admm[1]:
                faster = "ADMM (beyond the error bars)"
            else:
                faster = "within the error bars"
        lines.append(f"| {d['link_bytes_per_s']:.3g} | {cell(t, bar)} | {cell(ta, bara)} | "
                     f"{cell(admm_today, admm_bar)} | {faster} |")
    lines += ["", "Lowest swept link bandwidth at which D-PSGD beats the faster ADMM beyond the error bars: "
              f"{'none' if crossover is None else f'{crossover:.3g} B/s'}.", "",
              f"Fastest to the target per profile at {w['dpus']} DPUs, and whether it beats the runner-up beyond the "
              "error bars:", ""]
    lines += fastest_lines(table, profiles)
    lines += ["", f"Fastest at {PROJECT_DPUS} DPUs (projected; no error bars):", ""]
    lines += [line.replace(": within the error bars", "").replace(": holds", "")
              for line in fastest_lines(projected, profiles)]
    return {"data": w["data"], "dpus": w["dpus"], "target_auc": target, "runs": runs, "link_sweep": sweep,
            "markdown": "\n".join(lines) + "\n"}


def check(key, w, result):
    for name in w["algorithms"]:
        curves = {tuple(e["auc"] for e in x["epochs"]) for x in result["runs"] if x["algorithm"] == name}
        if len(curves) != 1:
            sys.exit(f"FAIL: {key}: {name}'s test AUC differs between profiles: {curves}")

    def per_epoch(name, profile):
        return next(x for x in result["runs"] if x["algorithm"] == name and x["profile"] == profile)["s_per_epoch"]
    for name in ("D-PSGD ring", "D-PSGD torus", "MA-SGD", "GA-SGD"):
        if not per_epoch(name, "links-system") < per_epoch(name, "pim-opt"):
            sys.exit(f"FAIL: {key}: {name} is not cheaper with links between all DPUs")

    def joules(name, profile):
        return next(x for x in result["runs"] if x["algorithm"] == name and x["profile"] == profile)["j_per_epoch"]
    for name in w["algorithms"]:
        if not joules(name, "pim-opt") > 0:
            sys.exit(f"FAIL: {key}: {name} has no modeled energy")
    for name in ("MA-SGD", "GA-SGD"):  # links spare the host's transfers and reductions
        if not joules(name, "links-system") < joules(name, "pim-opt"):
            sys.exit(f"FAIL: {key}: {name} takes no less energy with links between all DPUs")
    if SOFTWARE in w["profiles"]:  # MA-SGD's averaging: the same bytes over the channels by either route
        for name in ("MA-SGD",):
            r = next(x for x in result["runs"] if x["algorithm"] == name and x["profile"] == SOFTWARE)
            if r["to_host_bytes_per_epoch"] != next(x for x in result["runs"] if x["algorithm"] == name and
                                                   x["profile"] == "pim-opt")["to_host_bytes_per_epoch"]:
                sys.exit(f"FAIL: {key}: software collectives move other bytes than the host route for {name}")
    if COMPACTED in w["profiles"]:
        for name in ("GA-SGD", "MA-SGD"):
            if not per_epoch(name, COMPACTED) < per_epoch(name, "pim-opt"):
                sys.exit(f"FAIL: {key}: compacted synchronization does not make {name}'s epoch cheaper")

    def projected(name, profile):
        return next(x for x in result["runs"] if x["algorithm"] == name and x["profile"] == profile)[
            "projected_s_per_epoch"]
    if ASYNC in w["profiles"]:
        for name in w["algorithms"]:
            if not per_epoch(name, ASYNC) <= per_epoch(name, "pim-opt"):
                sys.exit(f"FAIL: {key}: asynchronous transfers make {name}'s epoch dearer")
        if not projected("GA-SGD", ASYNC) < projected("GA-SGD", "pim-opt"):
            sys.exit(f"FAIL: {key}: asynchronous transfers do not shorten GA-SGD's epoch at {PROJECT_DPUS} DPUs")


WORKLOADS = ["yfcc", "criteo", "fashion"]  # workloads()'s keys


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workloads", type=bu.NameList(WORKLOADS, "workload"), default=None,
                    help="comma-separated: yfcc, criteo, fashion (default: all three; with --quick yfcc,criteo)")
    ap.add_argument("--out", type=bu.output_dir, default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--from-json", metavar="FILE", type=bu.input_file,
                    help="render the tables from an earlier run's beyond_paper.json instead of running pimopt")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every algorithm's test AUC per epoch is the same on every profile (a profile "
                         "changes modeled time only), links between all DPUs make the talking algorithms' epochs "
                         "cheaper and take less energy (MA-SGD, GA-SGD), compaction makes GA-SGD's and MA-SGD's sparse epochs "
                         "cheaper, asynchronous transfers never make an epoch dearer and shorten GA-SGD's at 2,048 DPUs, and software "
                         "collectives move MA-SGD's bytes as the host route does")
    return ap


def main():
    args = build_parser().parse_args()
    all_workloads = workloads(args.quick)
    keys = args.workloads or (["yfcc", "criteo"] if args.quick else ["yfcc", "criteo", "fashion"])
    epochs = 2 if args.quick else 4  # --quick: what its checks need (every check is per epoch)
    results = {}
    earlier = None
    if args.from_json:
        with open(args.from_json) as f:
            earlier = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        for k in keys:
            if earlier is not None:
                if k not in earlier:
                    sys.exit(f"--from-json: {args.from_json} has no workload '{k}'")
                runs, sweep = earlier[k]["runs"], earlier[k]["link_sweep"]
            else:
                runs, sweep = collect(k, all_workloads[k], tmp, epochs)
            results[k] = study(k, all_workloads[k], runs, sweep, epochs)
            if args.check:
                check(k, all_workloads[k], results[k])
    md = "\n".join(results[k]["markdown"] for k in keys)
    os.makedirs(args.out, exist_ok=True)
    with bu.atomic_open(os.path.join(args.out, "beyond_paper.json")) as f:
        json.dump(results, f, indent=1)
    with bu.atomic_open(os.path.join(args.out, "beyond_paper.md")) as f:
        f.write(md)
    print(md)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: python3-matplotlib is not installed)")
        return
    columns = max(len(all_workloads[k]["profiles"]) for k in keys)
    fig, axes = plt.subplots(len(keys), columns, figsize=(3.6 * columns, 3.3 * len(keys)), squeeze=False)
    for row, k in zip(axes, keys):
        res = results[k]
        profiles = all_workloads[k]["profiles"]
        for ax, profile in zip(row, profiles):
            for r in (x for x in res["runs"] if x["profile"] == profile):
                ax.plot([e["modeled_s"] for e in r["epochs"]], [e["auc"] for e in r["epochs"]], marker=".",
                        label=r["algorithm"])
            ax.axhline(res["target_auc"], color="grey", linewidth=0.5)
            ax.set_xscale("log")
            ax.set_title(f"{k}: {profile}", fontsize=9)
            ax.set_xlabel("modeled seconds")
        for ax in row[len(profiles):]:
            ax.axis("off")
        row[0].set_ylabel("test AUC")
    axes[0][len(all_workloads[keys[0]]["profiles"]) - 1].legend(fontsize=6)
    fig.tight_layout()
    with bu.atomic_path(os.path.join(args.out, "beyond_time_to_auc.png")) as png:
        fig.savefig(png, dpi=100)


if __name__ == "__main__":
    main()
