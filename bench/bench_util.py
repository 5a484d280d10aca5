"""Shared by the bench/ scripts: runs `pimopt train` on the PIM backend and reads its JSON report."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIMOPT = os.path.join(ROOT, "build", "pimopt")


def train(args, report, backend="pim"):
    """pimopt train --backend BACKEND -q --no-train-metrics --report REPORT ARGS...; exits with its output on
    failure."""
    cmd = [PIMOPT, "train", "--backend", backend, "-q", "--no-train-metrics", "--report", report] + args
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{res.stdout}")
    with open(report) as f:
        return json.load(f)
