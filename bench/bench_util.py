"""Shared by the bench/ scripts: runs `pimopt train` on the PIM backend and reads its JSON report."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.path.join(ROOT, "build", "pimopt")


# The studies compare like with like: fixed hyper-parameters, not pimopt's automatic defaults (which adapt the
# batch, learning rate, regularization and epochs to each data set and would differ between the configurations of
# one sweep). A flag the caller gives wins. These are the values the recorded results were measured with.
STUDY_SETTINGS = [("--scale", "none"), ("--reg", "1e-5"), ("--lr", "0.1"), ("--epochs", "10")]


def with_study_settings(args):
    """ARGS plus the STUDY_SETTINGS it does not set."""
    return list(args) + [x for flag, value in STUDY_SETTINGS if flag not in args for x in (flag, value)]


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
