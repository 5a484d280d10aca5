#!/usr/bin/env python3
"""Published UPMEM programs beyond PrIM, unmodified, on pimopt: SparseP's SpMV kernels, PIM-ML's linear and
logistic regression programs, SimplePIM's vector addition, reduction and histogram, and TransPimLib's
transcendental functions, each built with its own Makefile by pimopt's DPU toolchain (build/sdk/bin), run on the
emulator through libpimopt_dpu (dpu.h) under PIMOPT_MODELED_CLOCK=1, and judged by its own output check ("Outputs
are equal", "the result is correct": the DPUs' result equals the program's host reference; TransPimLib's largest
error against the host's libm, within 1e-2). Reports, per program, whether it built, ran and checked, and the kernel
time or cycles its own timer printed (modeled).

    bench/published_programs.py [--sparsep PATH/TO/SparseP] [--pim-ml PATH/TO/pim-ml] [--simplepim PATH]
                                [--transpimlib PATH] [--types INT32,FP64] [--dpus 8] [--json OUT.json]
                                [--markdown OUT.md]

The paths are the user's checkouts (github.com/CMU-SAFARI/SparseP, github.com/CMU-SAFARI/pim-ml,
github.com/CMU-SAFARI/SimplePIM, github.com/CMU-SAFARI/transpimlib); nothing of them enters this repository: each
program is copied to a scratch folder and built there. SparseP's check is compiled out by default (support/utils.h:
CHECK_CORR 0): the scratch copy sets it to 1, the one change made, and reads a random square matrix this script
writes in Matrix Market format. PIM-ML's programs make their own data; SimplePIM's run at their published sizes (its
histogram has no check of its own: it counts as checked when it runs); TransPimLib's microbenchmark runs 10 values
per tasklet (ARRAY_SIZE=10) for each function by its interpolated look-up table.
Exit status: 0 when every program built, ran and said its output was right; 1 otherwise; 2 for bad arguments.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import bench_util
from bench_util import atomic_open

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OK = re.compile(r"Outputs are equal", re.IGNORECASE)
KERNEL_TIME = re.compile(r"(?:DPU )?[Kk]ernel Time \(ms\):\s*([0-9.]+)")
SIMPLEPIM_OK = re.compile(r"the result is correct")
SIMPLEPIM_TIME = re.compile(r"(?:map|reduction) function kernel execution time : ([0-9.]+)")
SIMPLEPIM_PROGRAMS = ("va", "red", "hist")
TRANSPIMLIB_OPERATIONS = ("SIN", "COS", "EXP", "LOG", "SQRT")
TRANSPIMLIB_MAX_ERROR = re.compile(r"Max Error:\s*([0-9.eE+-]+)")
TRANSPIMLIB_CYCLES = re.compile(r"Cycles per Iteration:\s*([0-9.]+)")
SPARSEP_TYPES = ["INT8", "INT16", "INT32", "INT64", "FP32", "FP64"]
# PIM-ML programs that check their DPUs' model against the host's; the SUSY ones need the SUSY dataset, and
# LogReg_no_quantization/LogReg_int32LUT_float does not compile as published (an #else after an #else).
PIM_ML_SKIP = ("SUSY", "Baseline", "LogReg_no_quantization/LogReg_int32LUT_float")


def write_matrix(path, rows, seed):
    """A random square pattern matrix (a diagonal and up to 8 more entries a row) in Matrix Market format."""
    rng = random.Random(seed)
    entries = set()
    for i in range(rows):
        entries.add((i, i))
        for _ in range(rng.randint(0, 8)):
            entries.add((i, rng.randrange(rows)))
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n")
        f.write(f"{rows} {rows} {len(entries)}\n")
        for i, j in sorted(entries):
            f.write(f"{i + 1} {j + 1}\n")
    return len(entries)


def run_one(source, copy, make_args, command, sdk_bin, timeout_s, prepare=None):
    """Copies `source` (without build outputs), builds it with `make make_args`, runs `command` there. Returns a
    result dict: ok, kernel_ms (the program's own timer, modeled), error."""
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns("bin", "bin_*"))
    if prepare:
        prepare(copy)
    return build_and_run(copy, make_args, command, sdk_bin, timeout_s)


def build_and_run(folder, make_args, command, sdk_bin, timeout_s, judge=None):
    """Builds `folder` with its own Makefile (`make make_args`) and runs `command` there (see run_one). `judge(output)`
    -> (ok, kernel time) for a program whose check is not "Outputs are equal"."""
    env = dict(os.environ, PATH=sdk_bin + os.pathsep + os.environ["PATH"], PIMOPT_MODELED_CLOCK="1")
    r = subprocess.run(["make"] + make_args, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        return {"ok": False, "kernel_ms": None, "error": "build failed: " + r.stdout[-1500:]}
    try:
        r = subprocess.run(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "kernel_ms": None, "error": f"timed out after {timeout_s} s"}
    out = r.stdout
    if judge:
        ok, kernel = judge(out)
        ok = ok and r.returncode == 0
    else:
        times = KERNEL_TIME.findall(out)
        ok = r.returncode == 0 and OK.search(out) is not None
        kernel = float(times[0]) if times else None
    return {"ok": ok, "kernel_ms": kernel, "error": None if ok else f"exit {r.returncode}: " + out[-1500:]}


def judge_simplepim(name):
    def judge(out):
        times = SIMPLEPIM_TIME.findall(out)
        return (name == "hist" or SIMPLEPIM_OK.search(out) is not None), float(times[0]) if times else None
    return judge


def judge_transpimlib(out):
    """The microbenchmark's largest error against the host's libm within 1e-2; its cycles per call."""
    errors, cycles = TRANSPIMLIB_MAX_ERROR.findall(out), TRANSPIMLIB_CYCLES.findall(out)
    return bool(errors) and max(float(e) for e in errors) < 1e-2, float(cycles[0]) if cycles else None


def kernel_text(suite, kernel):
    """The kernel figure a program printed, with its unit (TransPimLib's microbenchmark counts cycles)."""
    unit = "cycles a call" if suite == "TransPimLib" else "ms"
    return "-" if kernel is None else f"{kernel:.4g} {unit}"


def sparsep_programs(root):
    spmv = os.path.join(root, "spmv")
    for layout in ("1D", "2D"):
        base = os.path.join(spmv, layout)
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            if os.path.exists(os.path.join(base, name, "Makefile")):
                yield f"{layout}/{name}", os.path.join(base, name)


def pim_ml_programs(root):
    for top in ("Linear_Regression", "Logistic_Regression"):
        for dirpath, _, files in sorted(os.walk(os.path.join(root, top))):
            rel = os.path.relpath(dirpath, root)
            if "Makefile" in files and os.path.isdir(os.path.join(dirpath, "dpu")) and \
                    not any(s in rel for s in PIM_ML_SKIP):
                yield rel, dirpath


def enable_check(copy):
    path = os.path.join(copy, "support", "utils.h")
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("#define CHECK_CORR 0", "#define CHECK_CORR 1"))


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sparsep", type=bench_util.input_dir, help="a checkout of SparseP")
    parser.add_argument("--pim-ml", type=bench_util.input_dir, help="a checkout of pim-ml")
    parser.add_argument("--simplepim", type=bench_util.input_dir, help="a checkout of SimplePIM")
    parser.add_argument("--transpimlib", type=bench_util.input_dir, help="a checkout of TransPimLib")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), type=bench_util.path,
                        help="pimopt's build folder")
    parser.add_argument("--types", type=bench_util.NameList(SPARSEP_TYPES, "type"), default=["INT32"],
                        help="SparseP's element types, a comma list (default INT32)")
    parser.add_argument("--dpus", type=bench_util.int_range(1, 2048), default=8, help="NR_DPUS of every build")
    parser.add_argument("--matrix-rows", type=bench_util.int_range(16, 1 << 22), default=3000,
                        help="rows (and columns) of SparseP's random matrix")
    parser.add_argument("--timeout", type=bench_util.int_range(1, 86400), default=600,
                        help="seconds per program run")
    parser.add_argument("--json", type=bench_util.output_file, help="write the results as JSON here")
    parser.add_argument("--markdown", type=bench_util.output_file, help="write the table as Markdown here")
    return parser


def main():
    args = build_parser().parse_args()
    if not (args.sparsep or args.pim_ml or args.simplepim or args.transpimlib):
        build_parser().error("give --sparsep, --pim-ml, --simplepim and/or --transpimlib")
    sdk_bin = os.path.join(args.build, "sdk", "bin")
    if not os.path.exists(os.path.join(sdk_bin, "dpu-upmem-dpurte-clang")):
        sys.exit(f"published_programs.py: {sdk_bin}/dpu-upmem-dpurte-clang not built (clang and llvm-dev missing?)")
    scratch = tempfile.mkdtemp(prefix="pimopt-published-")
    results = []

    def report(suite, name, variant, result):
        results.append(dict(result, suite=suite, program=name, variant=variant))
        ms = kernel_text(suite, result["kernel_ms"])
        print(f"{suite:8} {name:48} {variant:6} {'ok' if result['ok'] else 'FAILED':6} kernel {ms}", flush=True)
        if not result["ok"]:
            print(result["error"], file=sys.stderr)

    if args.sparsep:
        matrix = os.path.join(scratch, "matrix.mtx")
        nnz = write_matrix(matrix, args.matrix_rows, seed=1)
        print(f"SparseP: a {args.matrix_rows} x {args.matrix_rows} matrix of {nnz} non-zeros")
        for name, source in sparsep_programs(args.sparsep):
            for t in args.types:
                copy = os.path.join(scratch, f"sparsep_{name.replace('/', '_')}_{t}")
                result = run_one(source, copy, [f"NR_DPUS={args.dpus}", f"TYPE={t}"],
                                 ["./bin/spmv_host", "-f", matrix], sdk_bin, args.timeout, prepare=enable_check)
                report("SparseP", name, t, result)
    if args.pim_ml:
        for name, source in pim_ml_programs(args.pim_ml):
            copy = os.path.join(scratch, "pimml_" + name.replace("/", "_"))
            result = run_one(source, copy, [f"NR_DPUS={args.dpus}"],
                             ["./bin/host_code", "-m", "2048", "-n", "16", "-i", "10", "-w", "0", "-e", "1"],
                             sdk_bin, args.timeout)
            report("PIM-ML", name, "", result)
    if args.simplepim or args.transpimlib:
        # Their programs reach the library beside them (../../lib, ../dpu) by relative paths: each checkout is copied
        # whole, without its git data and prebuilt binaries, and its programs are built where they lie in the copy.
        def copy_checkout(source, name):
            copy = os.path.join(scratch, name)
            shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "bin", "build"))
            return copy
    if args.simplepim:
        root = copy_checkout(args.simplepim, "simplepim")
        for name in SIMPLEPIM_PROGRAMS:
            folder = os.path.join(root, "benchmarks", name)
            os.makedirs(os.path.join(folder, "bin"), exist_ok=True)
            result = build_and_run(folder, [], ["./bin/host"], sdk_bin, args.timeout, judge_simplepim(name))
            report("SimplePIM", name, "", result)
    if args.transpimlib:
        root = copy_checkout(args.transpimlib, "transpimlib")
        folder = os.path.join(root, "microbenchmarks")
        for output in ("bin/dpu", "bin/host", "output"):  # its Makefile writes there, without making them
            os.makedirs(os.path.join(folder, output), exist_ok=True)
        for operation in TRANSPIMLIB_OPERATIONS:
            result = build_and_run(folder, ["method_performance", "ARRAY_SIZE=10", "METHOD=LUT_LDEXPF_INTERPOLATE",
                                            f"OPERATION={operation}"],
                                   ["./bin/host/transcendental_performance_host"], sdk_bin, args.timeout,
                                   judge_transpimlib)
            report("TransPimLib", operation, "", result)
    failures = sum(1 for r in results if not r["ok"])
    lines = ["| suite | program | type | checked | kernel (modeled) |", "|---|---|---|---|---|"]
    for r in results:
        ms = kernel_text(r["suite"], r["kernel_ms"])
        lines.append(f"| {r['suite']} | {r['program']} | {r['variant'] or '-'} | "
                     f"{'yes' if r['ok'] else 'NO'} | {ms} |")
    if args.json:
        with atomic_open(args.json) as f:
            json.dump({"dpus": args.dpus, "results": results}, f, indent=1)
    if args.markdown:
        with atomic_open(args.markdown) as f:
            f.write("\n".join(lines) + "\n")
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{len(results) - failures} of {len(results)} programs built, ran and checked their output")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
