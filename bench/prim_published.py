#!/usr/bin/env python3
"""PrIM's published programs, unmodified, on pimopt: built with their own Makefiles by pimopt's DPU toolchain
(build/sdk/bin: dpu-upmem-dpurte-clang, dpu-pkg-config), run on the emulator through libpimopt_dpu (dpu.h), each
output checked by the program itself, under PIMOPT_MODELED_CLOCK=1 and PIMOPT_REPORT; each kernel time (the
modeled time of all its launches, from the report; the program's own timer is kept beside it) compared with the
hardware file's time and with pimopt's C++ port of the benchmark (`pimopt prim`) at the same configuration, and
the instructions the pass charged with the port's.

    bench/prim_published.py --prim PATH/TO/prim-benchmarks [--hw-data FILE] [--benchmarks VA,RED]
                            [--max-elements-per-dpu N] [--json OUT.json] [--markdown OUT.md]

PATH is the user's checkout of PrIM (github.com/CMU-SAFARI/prim-benchmarks); nothing of it enters this repository:
each benchmark is copied to a scratch folder and built there. Without the hardware file (PIMOPT_HW_DATA or
../shared/data/upmem-hw-kernels.csv), --configs "VA:4:262144,..." names the runs instead.
Exit status: 0 when every program built, ran and said its output was right; 1 otherwise; 2 for bad arguments.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import bench_util
from bench_util import atomic_open

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# How the hardware file's size parameter (over all DPUs) maps onto each host program's options (strong scaling:
# the parameter is the total), as the ports describe it (`pimopt prim --list`).
ARGS = {
    "VA": lambda p: ["-x", "1", "-i", str(p)],
    "RED": lambda p: ["-x", "1", "-i", str(p)],
    "SEL": lambda p: ["-x", "1", "-i", str(p)],
    "UNI": lambda p: ["-x", "1", "-i", str(p)],
    "HST-S": lambda p: ["-x", "1", "-i", str(p)],
    "HST-L": lambda p: ["-x", "1", "-i", str(p)],
    "SCAN-SSA": lambda p: ["-x", "1", "-i", str(p)],
    "SCAN-RSS": lambda p: ["-x", "1", "-i", str(p)],
    "TS": lambda p: ["-n", str(p), "-m", "64"],
    "MLP": lambda p: ["-m", str(p), "-n", str(p)],
    "GEMV": lambda p: ["-m", str(p), "-n", "64"],
    "TRNS": lambda p: ["-x", "1", "-m", "4", "-n", "8", "-o", str(p), "-p", "64"],
}
# The size per DPU a row puts on each DPU (for --max-elements-per-dpu).
PER_DPU = {"TRNS": lambda p, d: p * 4 * 8 * 64 // d, "MLP": lambda p, d: p * p // d}
KERNEL_TIME = re.compile(r"(DPU Kernel[A-Za-z ]*|Step [23]) Time \(ms\):\s*([0-9.]+)")
OK = re.compile(r"(Outputs|results) are equal", re.IGNORECASE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def default_hw_data():
    if os.environ.get("PIMOPT_HW_DATA"):
        return os.environ["PIMOPT_HW_DATA"]
    return os.path.join(os.path.dirname(ROOT), "shared", "data", "upmem-hw-kernels.csv")


def read_rows(args):
    if args.configs:
        rows = []
        for item in args.configs.split(","):
            name, dpus, param = item.split(":")
            rows.append({"benchmark": name, "dpus": int(dpus), "param": int(param), "hw_ms": None})
        return rows
    path = args.hw_data or default_hw_data()
    if not os.path.exists(path):
        sys.exit(f"prim_published.py: no hardware file at {path} (--hw-data, PIMOPT_HW_DATA, or --configs)")
    rows = []
    with open(path, newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            try:
                rows.append({"benchmark": r["benchmark"], "dpus": int(r["num_dpus"]),
                             "param": int(r["data_prep_param"]), "hw_ms": float(r["hw_kernel_ms"])})
            except (KeyError, ValueError) as e:
                sys.exit(f"prim_published.py: {path}:{line}: {e}")
    return rows


def build(prim, name, dpus, scratch, sdk_bin, log):
    """Copies the benchmark (without any build output it has) and builds it for `dpus` there: PrIM's host programs
    take NR_DPUS at compile time and some name their DPU binary ./bin/..., so each DPU count gets its own copy.
    Returns (the copy, the host program in it) or (None, why)."""
    copy = os.path.join(scratch, f"{name}_{dpus}")
    shutil.copytree(os.path.join(prim, name), copy, symlinks=True, ignore=shutil.ignore_patterns("bin", "bin_*"))
    env = dict(os.environ, PATH=sdk_bin + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["make", f"NR_DPUS={dpus}", "NR_TASKLETS=16"], cwd=copy, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(r.stdout)
    if r.returncode != 0:
        return None, r.stdout[-2000:]
    hosts = [f for f in os.listdir(os.path.join(copy, "bin")) if "host" in f and not f.startswith(".")]
    if not hosts:
        return None, "no host program built"
    return copy, os.path.join("bin", sorted(hosts)[0])


def run_program(copy, host, row, timeout_s):
    report = os.path.join(copy, "pimopt_report.json")
    env = dict(os.environ, PIMOPT_MODELED_CLOCK="1", PIMOPT_REPORT=report)
    cmd = [os.path.join(".", host), "-w", "0", "-e", "1"] + ARGS[row["benchmark"]](row["param"])
    try:
        r = subprocess.run(cmd, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout_s} s"}
    out = ANSI.sub("", r.stdout)
    kernels = [float(m.group(2)) for m in KERNEL_TIME.finditer(out)]
    ok = r.returncode == 0 and OK.search(out) is not None
    # The kernel time is the modeled time of every launch (kernel and launch overhead, as the hardware file and the
    # ports count it), from the run's PIMOPT_REPORT; the program's own kernel timer (timer_ms) spans one launch of
    # MLP's several and not all of TRNS's steps, and adds the host's real time between its timer calls.
    result = {"ok": ok, "kernel_ms": None, "timer_ms": sum(kernels) if kernels else None, "timers": len(kernels)}
    if os.path.exists(report):
        with open(report) as f:
            launches = json.load(f)["launches"]
        result["kernel_ms"] = 1e3 * sum(l["kernel_s"] + l["overhead_s"] for l in launches) if launches else None
        result["program_instructions"] = sum(l["instructions"] for l in launches)
        result["program_launches"] = len(launches)
        os.remove(report)
    if not ok:
        result["error"] = out[-1500:]
    return result


def run_port(pimopt, row, profile):
    r = subprocess.run([pimopt, "prim", row["benchmark"], "--dpus", str(row["dpus"]), "--param", str(row["param"]),
                        "--kernels", "port", "--profile", profile, "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return None, None
    port = json.loads(r.stdout)
    return port["kernel_s"] * 1e3, port.get("instructions")


def error_pct(model, hw):
    return None if model is None or not hw else 100.0 * (model - hw) / hw


# pimopt's profile presets (`pimopt profile --list`; src/pim/profile.cc).
PROFILES = ["pim-opt", "prim-2556", "prim-640", "upmem-2524", "future-fpu", "future-wide"]
CONFIG = bench_util.text_arg(r"[A-Z-]+:[1-9][0-9]*:[1-9][0-9]*(,[A-Z-]+:[1-9][0-9]*:[1-9][0-9]*)*",
                             "NAME:DPUS:PARAM,... (e.g. VA:4:262144)")


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prim", required=True, type=bench_util.input_dir, help="a checkout of PrIM's benchmarks")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), type=bench_util.path,
                        help="pimopt's build folder")
    parser.add_argument("--hw-data", type=bench_util.path,
                        help="the hardware file (default: PIMOPT_HW_DATA or ../shared/data)")
    parser.add_argument("--configs", type=CONFIG, help="NAME:DPUS:PARAM,... to run instead of the hardware file")
    parser.add_argument("--benchmarks", type=bench_util.NameList(sorted(ARGS), "benchmark"),
                        help="a comma list (default: every benchmark with a mapping)")
    parser.add_argument("--max-elements-per-dpu", type=bench_util.int_range(0), default=0,
                        help="skip larger rows (0: none)")
    parser.add_argument("--profile", default="pim-opt", choices=PROFILES,
                        help="the emulated system (PIMOPT_PROFILE)")
    parser.add_argument("--timeout", type=bench_util.int_range(1, 86400), default=600,
                        help="seconds per program run")
    parser.add_argument("--json", type=bench_util.output_file, help="write the rows as JSON here")
    parser.add_argument("--markdown", type=bench_util.output_file, help="write the table as Markdown here")
    return parser


def main():
    args = build_parser().parse_args()
    sdk_bin = os.path.join(args.build, "sdk", "bin")
    pimopt = os.path.join(args.build, "pimopt")
    if not os.path.exists(os.path.join(sdk_bin, "dpu-upmem-dpurte-clang")):
        sys.exit(f"prim_published.py: {sdk_bin}/dpu-upmem-dpurte-clang not built (clang and llvm-dev missing?)")
    wanted = set(args.benchmarks) if args.benchmarks else set(ARGS)
    rows = [r for r in read_rows(args) if r["benchmark"] in wanted]
    if args.max_elements_per_dpu:
        rows = [r for r in rows if PER_DPU.get(r["benchmark"], lambda p, d: p // d)(r["param"], r["dpus"])
                <= args.max_elements_per_dpu]
    os.environ["PIMOPT_PROFILE"] = args.profile
    scratch = tempfile.mkdtemp(prefix="pimopt-prim-")
    results, failures = [], 0
    with open(os.path.join(scratch, "build.log"), "w") as log:
        built = {}
        for row in rows:
            key = (row["benchmark"], row["dpus"])
            if key not in built:
                built[key] = build(args.prim, row["benchmark"], row["dpus"], scratch, sdk_bin, log)
            copy, host = built[key]
            out = dict(row)
            if copy is None:
                out.update(ok=False, error=f"build failed: {host}")
            else:
                out.update(run_program(copy, host, row, args.timeout))
            out["port_ms"], out["port_instructions"] = run_port(pimopt, row, args.profile)
            out["program_error_pct"] = error_pct(out.get("kernel_ms"), row["hw_ms"])
            out["port_error_pct"] = error_pct(out["port_ms"], row["hw_ms"])
            failures += 0 if out["ok"] else 1
            results.append(out)
            status = "ok" if out["ok"] else "FAILED"
            fmt = lambda v: "-" if v is None else f"{v:.4g}"
            print(f"{row['benchmark']:9} {row['dpus']:5} DPUs {row['param']:>9}  {status:6} "
                  f"program {fmt(out.get('kernel_ms'))} ms  port {fmt(out['port_ms'])} ms  hw {fmt(row['hw_ms'])} ms"
                  f"  ({fmt(out['program_error_pct'])}% / {fmt(out['port_error_pct'])}%)"
                  f"  instructions {fmt(out.get('program_instructions'))} / {fmt(out['port_instructions'])}", flush=True)
            if not out["ok"]:
                print(out.get("error", ""), file=sys.stderr)
    lines = ["| benchmark | rows | program: median abs error | program: mean | port: median abs error | port: mean "
             "| instructions, program / port (median) |",
             "|---|---|---|---|---|---|---|"]
    summary = {}
    for name in sorted({r["benchmark"] for r in results}):
        mine = [r for r in results if r["benchmark"] == name and r["program_error_pct"] is not None]
        if not mine:
            continue
        prog = [abs(r["program_error_pct"]) for r in mine]
        port = [abs(r["port_error_pct"]) for r in mine if r["port_error_pct"] is not None]
        summary[name] = {"rows": len(mine), "program_median": statistics.median(prog),
                         "program_mean": statistics.mean(prog),
                         "port_median": statistics.median(port) if port else None,
                         "port_mean": statistics.mean(port) if port else None}
        ratios = [r["program_instructions"] / r["port_instructions"] for r in mine
                  if r.get("program_instructions") and r.get("port_instructions")]
        summary[name]["instructions_ratio_median"] = statistics.median(ratios) if ratios else None
        s = summary[name]
        lines.append(f"| {name} | {s['rows']} | {s['program_median']:.1f}% | {s['program_mean']:.1f}% | "
                     + (f"{s['port_median']:.1f}% | {s['port_mean']:.1f}% |" if port else "- | - |")
                     + (f" {s['instructions_ratio_median']:.3f} |" if ratios else " - |"))
    if summary:
        table = "\n".join(lines)
        print("\nKernel time against the hardware file (absolute errors):\n" + table)
    if args.json:
        with atomic_open(args.json) as f:
            json.dump({"profile": args.profile, "rows": results, "summary": summary}, f, indent=1)
    if args.markdown and summary:
        with atomic_open(args.markdown) as f:
            f.write(table + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{len(results) - failures} of {len(results)} runs built, ran and checked their output")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
