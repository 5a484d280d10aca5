#!/usr/bin/env python3
"""PIM-Opt's own training programs, unmodified, on pimopt's emulator, beside pimopt's --kernel pim-opt.

Builds the artifact's YFCC100M-HNfc6 benchmark programs (MA-SGD, GA-SGD and ADMM; LR and SVM: one epoch each) from a
user's checkout of PIM-Opt (the artifact is not in this repository) with pimopt's DPU toolchain under the SDK's
command names (build/sdk/bin), in a scratch copy (the checkout is not touched), writes small synthetic input in the
artifact's text format (`pimopt gen yfcc --format yfcc-text`), runs each program's own host program on the
emulator (libpimopt_dpu) with PIMOPT_REPORT, and trains pimopt's --kernel pim-opt on one DPU holding the same rows
with the same per-DPU batch, projected to the program's 256 DPUs. Compared per epoch: the modeled DPU kernel seconds
of the slowest DPU, the number of launches (synchronizations), and the bytes and modeled seconds each way between
host and DPUs (the program's own timers, read in modeled time: PIMOPT_MODELED_CLOCK=1).

The artifact fixes its sizes in its sources (851,968 rows of 4,096 features at 256 DPUs, the least it runs): the
program reads the rows the file has and leaves the rest zero, so its slowest DPU's kernel time is that of a full
shard (3,328 rows; a dense kernel's time does not depend on the values). Its models average 256 DPUs of which one
holds data, so they are not compared with pimopt's (a full-size run needs about 30 GB here).

Usage: bench/pim_opt_programs.py PATH/TO/PIM-Opt [--algos ma,ga,admm] [--models lr,svm] [--work DIR]
                                 [--json OUT.json] [--markdown OUT.md]
Needs build/ (pimopt with the DPU toolchain) and about 1.5 GB of memory and 2-3 minutes per program.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import bench_util

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
PIMOPT = os.path.join(BUILD, "pimopt")
ALGOS = {"ma": "MA-SGD", "ga": "GA-SGD", "admm": "ADMM"}
DPUS = 256             # the artifact's smallest configuration
ROWS_PER_DPU = 3328    # 851,968 / 256
FEATURES = 4096


def run(cmd, cwd=None, env=None, log=None):
    with open(log, "w") if log else open(os.devnull, "w") as out:
        return subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode


def fail(message):
    print(f"pim_opt_programs: {message}", file=sys.stderr)
    sys.exit(1)


def program_dir(checkout, algo, model):
    return os.path.join(checkout, "upmem_ml_coding", "UPMEM", ALGOS[algo], "YFCC100M-HNfc6", f"benchmark_{model.upper()}")


def input_names(program):
    """The train file name the host program opens at NR_DPUS = 256, and the folder its results go to."""
    text = ""
    for folder in ("host", "host_utils"):
        for f in sorted(os.listdir(os.path.join(program, folder))):
            if f.endswith(".c"):
                text += open(os.path.join(program, folder, f)).read()
    train = re.search(r'"%s/?(YFCC100M_train_corresponding_to_NR_DPUs_256_[^"]*\.txt)"', text)
    results = re.search(r'"%s/?(benchmark_UPMEM/YFCC100M-HNfc6/[^/"]+)/', text)
    if not train or not results:
        fail(f"{program}: the input file name or the results folder was not found (a different PIM-Opt version?)")
    return train.group(1), results.group(1)


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=bench_util.input_dir, help="a checkout of PIM-Opt (CMU-SAFARI/PIM-Opt)")
    parser.add_argument("--algos", type=bench_util.NameList(ALGOS, "algorithm"), default=list(ALGOS),
                        help="the algorithms, a comma list (default ma,ga,admm)")
    parser.add_argument("--models", type=bench_util.NameList(("lr", "svm"), "model"), default=["lr", "svm"],
                        help="the models, a comma list (default lr,svm)")
    parser.add_argument("--work", type=bench_util.output_dir, help="scratch folder (default: a temporary one, removed)")
    parser.add_argument("--json", type=bench_util.output_file, help="write the results as JSON here")
    parser.add_argument("--markdown", type=bench_util.output_file, help="write the table as Markdown here")
    return parser


def main():
    args = build_parser().parse_args()
    algos, models = args.algos, args.models
    if not os.path.isdir(os.path.join(args.checkout, "upmem_ml_coding")):
        fail(f"{args.checkout}: not a checkout of PIM-Opt (no upmem_ml_coding/)")
    if not os.path.exists(os.path.join(BUILD, "sdk", "bin", "dpu-upmem-dpurte-clang")):
        fail(f"{BUILD}/sdk/bin: pimopt was not built with the DPU toolchain")
    work = args.work or tempfile.mkdtemp(prefix="pim_opt_programs_")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    shard = os.path.join(data, "shard.txt")
    if run([PIMOPT, "gen", "yfcc", "--rows", str(ROWS_PER_DPU), "--features", str(FEATURES), "--seed", "7",
            "--format", "yfcc-text", "--out", shard]) != 0:
        fail("pimopt gen failed")
    env = dict(os.environ, PATH=os.path.join(BUILD, "sdk", "bin") + os.pathsep + os.environ["PATH"])
    rows = []
    for algo in algos:
        for model in models:
            name = f"{ALGOS[algo]} {model.upper()}"
            source = program_dir(args.checkout, algo, model)
            if not os.path.isdir(source):
                fail(f"{source}: missing")
            copy = os.path.join(work, f"{algo}_{model}")
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy)
            train_name, results = input_names(copy)
            target = os.path.join(data, train_name)
            if not os.path.exists(target):
                os.symlink(shard, target)
            dest = os.path.join(work, "dest")
            shutil.rmtree(os.path.join(dest, results), ignore_errors=True)  # a file of an earlier run is not this one's
            os.makedirs(os.path.join(dest, results))
            make = ["make", "-j1", f"NR_DPUS={DPUS}", "NR_TASKLETS=16", "AE=1", "SCALING=0",
                    f"SOURCE_DIR={data}/", f"DEST_DIR={dest}/"]
            if run(make, cwd=copy, env=env, log=os.path.join(copy, "build.log")) != 0:
                fail(f"{name}: the build failed (see {copy}/build.log)")
            report = os.path.join(copy, "report.json")
            t0 = time.time()
            rc = run(["./bin/host_code"], cwd=copy, env=dict(env, PIMOPT_REPORT=report, PIMOPT_MODELED_CLOCK="1"),
                     log=os.path.join(copy, "run.log"))
            wall = time.time() - t0
            if rc != 0:
                fail(f"{name}: the artifact's program exited {rc} (see {copy}/run.log)")
            launches = json.load(open(report))["launches"]
            artifact_kernel = sum(l["kernel_s"] for l in launches)
            results_file = [f for f in os.listdir(os.path.join(dest, results)) if f.endswith(".txt")]
            m = re.search(r"nr_batches_(\d+)", " ".join(results_file))
            if not m:
                fail(f"{name}: no results file in {dest}/{results}")
            steps = int(m.group(1))
            text = open(os.path.join(dest, results, results_file[0])).read()
            own = {}
            for key in ("CPU_DPU_epoch_elapsed_time", "CPU_DPU_epoch_giga_bytes", "DPU_CPU_epoch_elapsed_time",
                        "DPU_CPU_epoch_giga_bytes"):
                found = re.search(key + r" = ([0-9.]+)", text)
                if not found:
                    fail(f"{name}: {key} not in the program's results file")
                own[key] = float(found.group(1))
            batch = ROWS_PER_DPU // steps
            pim_report = os.path.join(copy, "pimopt.json")
            train = [PIMOPT, "train", "--data", shard, "--input-format", "yfcc-text", "--backend", "pim", "--workers", "1",
                     "--algo", algo, "--model", model, "--batch", str(batch), "--kernel", "pim-opt", "--epochs", "1",
                     "--lr", "0.015625", "--project-dpus", str(DPUS), "--project-rows-per-dpu", str(ROWS_PER_DPU),
                     "-q", "--report", pim_report]
            if algo == "admm":
                train += ["--rho", "0.01"]
            if run(train, log=os.path.join(copy, "pimopt.log")) != 0:
                fail(f"{name}: pimopt train failed (see {copy}/pimopt.log)")
            report_pimopt = json.load(open(pim_report))
            pimopt_kernel = report_pimopt["time"]["phases_seconds"]["modeled_dpu_kernel"]
            projection = report_pimopt["projection"]
            rows.append({"program": name, "launches": len(launches), "batch_per_dpu": batch,
                         "artifact_kernel_s": artifact_kernel, "pimopt_kernel_s": pimopt_kernel,
                         "pimopt_syncs": report_pimopt["epochs"][-1]["syncs"],
                         "difference": pimopt_kernel / artifact_kernel - 1, "artifact_wall_s": wall,
                         "artifact_to_dpu_gb": own["CPU_DPU_epoch_giga_bytes"],
                         "artifact_to_dpu_s": own["CPU_DPU_epoch_elapsed_time"],
                         "artifact_from_dpu_gb": own["DPU_CPU_epoch_giga_bytes"],
                         "artifact_from_dpu_s": own["DPU_CPU_epoch_elapsed_time"],
                         "pimopt_to_dpu_gb": projection["cpu_to_dpu_bytes"] / 1e9,
                         "pimopt_to_dpu_s": projection["modeled_cpu_to_dpu_s"],
                         "pimopt_from_dpu_gb": projection["dpu_to_cpu_bytes"] / 1e9,
                         "pimopt_from_dpu_s": projection["modeled_dpu_to_cpu_s"]})
            r = rows[-1]
            print(f"{name:12s} launches {r['launches']:4d} (pimopt syncs {r['pimopt_syncs']:4d})  kernel per epoch: "
                  f"artifact {artifact_kernel:.3f} s, pimopt {pimopt_kernel:.3f} s ({100 * r['difference']:+.1f}%)  "
                  f"[{wall:.0f} s]", flush=True)
            print(f"{'':12s} to DPUs: artifact {r['artifact_to_dpu_gb']:.4f} GB {r['artifact_to_dpu_s']:.3f} s, pimopt "
                  f"{r['pimopt_to_dpu_gb']:.4f} GB {r['pimopt_to_dpu_s']:.3f} s; from DPUs: artifact "
                  f"{r['artifact_from_dpu_gb']:.4f} GB {r['artifact_from_dpu_s']:.3f} s, pimopt "
                  f"{r['pimopt_from_dpu_gb']:.4f} GB {r['pimopt_from_dpu_s']:.3f} s", flush=True)
    if args.json:
        with bench_util.atomic_open(args.json) as f:
            json.dump({"dpus": DPUS, "rows_per_dpu": ROWS_PER_DPU, "features": FEATURES, "programs": rows}, f,
                      indent=2)
    if args.markdown:
        lines = ["| program | launches | batch per DPU | artifact's kernel / epoch | pimopt --kernel pim-opt | "
                 "difference | to DPUs: artifact / pimopt | from DPUs: artifact / pimopt |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['program']} | {r['launches']} | {r['batch_per_dpu']} | {r['artifact_kernel_s']:.3f} s | "
                         f"{r['pimopt_kernel_s']:.3f} s | {100 * r['difference']:+.1f}% | "
                         f"{r['artifact_to_dpu_gb']:.3f} GB, {r['artifact_to_dpu_s']:.3f} s / "
                         f"{r['pimopt_to_dpu_gb']:.3f} GB, {r['pimopt_to_dpu_s']:.3f} s | "
                         f"{r['artifact_from_dpu_gb']:.3f} GB, {r['artifact_from_dpu_s']:.3f} s / "
                         f"{r['pimopt_from_dpu_gb']:.3f} GB, {r['pimopt_from_dpu_s']:.3f} s |")
        with bench_util.atomic_open(args.markdown) as f:
            f.write("\n".join(lines) + "\n")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
