"""Shared by the bench/ scripts: runs pimopt (`train` with the studies' fixed settings) and reads its JSON report
and its binary dataset cache."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.environ.get("PIMOPT", os.path.join(ROOT, "build", "pimopt"))


# The studies compare like with like: fixed hyper-parameters, not pimopt's automatic defaults (which adapt the
# batch, learning rate, regularization and epochs to each data set and would differ between the configurations of
# one sweep). A flag the caller gives wins. These are the values the recorded results were measured with.
STUDY_SETTINGS = [("--scale", "none"), ("--reg", "1e-5"), ("--lr", "0.1"), ("--epochs", "10")]


# The algorithms without a learning rate (pimopt refuses --lr for them).
NO_LEARNING_RATE = {"cocoa", "cocoa+"}


def with_study_settings(args):
    """ARGS plus the STUDY_SETTINGS it does not set (no --lr for an algorithm that takes none)."""
    args = list(args)
    algo = args[args.index("--algo") + 1] if "--algo" in args else None
    skip = {"--lr"} if algo in NO_LEARNING_RATE else set()
    return args + [x for flag, value in STUDY_SETTINGS if flag not in args and flag not in skip for x in (flag, value)]


def train(args, report, backend="pim"):
    """pimopt train --backend BACKEND -q --no-train-metrics --report REPORT ARGS... (with the STUDY_SETTINGS it
    does not set); exits with its output on failure."""
    cmd = [PIMOPT, "train", "--backend", backend, "-q", "--no-train-metrics", "--report", report] + \
        with_study_settings(args)
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stdout}")
    with open(report) as f:
        return json.load(f)


def timed_projection(report, what=""):
    """The report's projection; exits rather than let a table or a plot use a projection whose epoch could not be
    timed (its figures are null: the profile's links do not cover the target DPUs)."""
    p = report["projection"]
    if not p.get("timed", True):
        sys.exit(f"FAIL: {what + ': ' if what else ''}the projection to {p['dpus']} DPUs has no epoch time: "
                 f"{p['note']}")
    return p


def run(cmd):
    """Runs CMD and returns its output; exits with the output on failure."""
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"command failed ({res.returncode}): {' '.join(cmd)}\n{res.stdout}")
    return res.stdout


def read_binary_dataset(path):
    """pimopt's binary dataset cache (include/pimopt/data/binary_format.h; the checksum is not verified) as numpy
    arrays: (values, labels), values of shape (rows, features) for dense data, or a tuple (row_ptr, col, val,
    features) of CSR arrays for sparse data. Needs numpy."""
    import numpy as np
    header = np.fromfile(path, dtype=np.uint8, count=64)
    if bytes(header[:8]) != b"PIMOPTDS":
        sys.exit(f"{path}: not a pimopt binary dataset")
    flags = int(header[12:16].view(np.uint32)[0])
    rows, features, stored = (int(v) for v in header[16:40].view(np.uint64))
    offset = 64
    labels = np.fromfile(path, dtype=np.float32, count=rows, offset=offset)
    offset += 4 * rows * (2 if flags & 2 else 1)
    if not flags & 1:
        values = np.fromfile(path, dtype=np.float32, count=rows * features, offset=offset).reshape(rows, features)
        return values, labels
    row_ptr = np.fromfile(path, dtype=np.uint64, count=rows + 1, offset=offset)
    offset += 8 * (rows + 1)
    col = np.fromfile(path, dtype=np.uint32, count=stored, offset=offset)
    offset += 4 * stored
    val = np.fromfile(path, dtype=np.float32, count=stored, offset=offset)
    return (row_ptr, col, val, features), labels
