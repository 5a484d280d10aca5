"""Shared by the bench/ scripts: runs pimopt (`train` with the studies' fixed settings) and reads its JSON report
and its binary dataset cache; the types that check the scripts' own arguments when they are parsed, and outputs
written whole or not at all. Needs only Python's standard library (numpy only for read_binary_dataset)."""
import argparse
import contextlib
import json
import math
import os
import re
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


# ------------------------------------------------------------------------------------ the scripts' own arguments
# argparse `type=` functions for every argument of the bench scripts that takes a value. Each checks its value while
# the arguments are parsed, before any work, so that a bad value is argparse's usage error: exit 2 and, e.g.,
# "argument --batch: must be an integer >= 1, got '0'" (as pimopt's own flags: docs/reliability.md). Each carries
# its `kind` and bounds, which tests/bench/bench_args_test.py reads to give every such argument values outside them;
# an argument declared with a bare int, float or no type at all fails that test.
INT_LIMIT = 2 ** 63  # no count of the scripts comes near it, and pimopt takes no count past 64 bits


def _shown(text, limit=40):
    """TEXT as a message quotes it: in quotes, shortened when long."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _integer(text):
    """TEXT as an integer: decimal digits with an optional '-' and nothing else (no spaces, '+', '_', '.',
    exponent or other digits); None when it is not one."""
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


class Bounded:
    """An argparse type: an integer (`integer`) or a finite real within [low, high]; `low_open` / `high_open`
    exclude the bound itself."""

    def __init__(self, integer, low=None, high=None, low_open=False, high_open=False):
        self.kind = "int" if integer else "float"
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open
        self.__name__ = self.describe()  # argparse names the type by it in its own messages

    def describe(self):
        what = "an integer" if self.kind == "int" else "a finite number"
        shown = str if self.kind == "int" else "{:g}".format
        lo = None if self.low is None else f"{'>' if self.low_open else '>='} {shown(self.low)}"
        hi = None if self.high is None else f"{'<' if self.high_open else '<='} {shown(self.high)}"
        if self.low is not None and self.high is not None:
            return f"{what} {lo} and {hi}" if self.low_open or self.high_open or self.kind == "float" else \
                f"{what} from {self.low} to {self.high}"
        return " ".join(x for x in (what, lo or hi) if x)

    def within(self, value):
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            return False
        return True

    def __call__(self, text):
        if self.kind == "int":
            value = _integer(text)
            if value is not None and self.within(value) and abs(value) < INT_LIMIT:
                return value
            limit = "" if value is None or abs(value) < INT_LIMIT else " and < 2^63"
        else:
            try:
                value = float(text) if text.strip() == text and "_" not in text else None
            except ValueError:
                value = None
            if value is not None and math.isfinite(value) and self.within(value):
                return value
            limit = ""
        raise argparse.ArgumentTypeError(f"must be {self.describe()}{limit}, got {_shown(text)}")


def int_range(low=None, high=None):
    """An integer within [low, high] (either may be None: unbounded on that side)."""
    return Bounded(True, low, high)


def float_range(low=None, high=None, low_open=False, high_open=False):
    """A finite real within [low, high]; low_open / high_open exclude the bound."""
    return Bounded(False, low, high, low_open, high_open)


positive_int = int_range(1)  # rows, batches, DPUs, workers, threads, epochs, rounds, repeats, sizes
nonnegative_int = int_range(0)  # seeds
positive_float = float_range(0, low_open=True)  # seconds, learning rates, bandwidths
nonnegative_float = float_range(0)
fraction = float_range(0, 1, low_open=True, high_open=True)  # shares strictly between 0 and 1
percentage_points = float_range(0, 100)  # a difference of two accuracies in points
MAX_THREADS = 1024  # pimopt's --threads takes at most 1,024 (AddThreadsParam)
thread_count = int_range(1, MAX_THREADS)


class IntList:
    """An argparse type: comma-separated integers, each within [low, high]; with `distinct` none twice; with
    `sort` the values sorted and repeats dropped (a set of counts)."""

    kind = "int_list"

    def __init__(self, low=1, high=None, distinct=False, sort=False):
        self.item = int_range(low, high)
        self.low, self.high, self.distinct, self.sort = low, high, distinct, sort
        self.__name__ = self.describe()

    def describe(self):
        return f"a comma-separated list of {'distinct ' if self.distinct else ''}integers " + \
            self.item.describe()[len("an integer "):]

    def __call__(self, text):
        values = []
        for item in text.split(","):
            try:
                values.append(self.item(item))
            except argparse.ArgumentTypeError:
                raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {_shown(text)}") from None
        if self.distinct and len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"must list each value once, got {_shown(text)}")
        return sorted(set(values)) if self.sort else values


positive_int_list = IntList(1)


class NameList:
    """An argparse type: comma-separated names out of `choices`, at least one, none twice (empty entries, as in
    'a,b,', are skipped); returns them in the given order. `what` names one entry in the message."""

    kind = "names"

    def __init__(self, choices, what="name"):
        self.choices, self.what = list(choices), what
        self.__name__ = f"comma-separated {what}s"

    def __call__(self, text):
        names = [n for n in text.split(",") if n]
        unknown = [n for n in names if n not in self.choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                (f"unknown {self.what} {_shown(unknown[0])}" if unknown else f"names no {self.what}: {_shown(text)}")
                + f" (choose from {', '.join(self.choices)})")
        if len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(f"names a {self.what} twice: {_shown(text)}")
        return names


class Path:
    """An argparse type: a file or folder name, never empty. `must` is None (anything, e.g. a program or an output
    to create), "file" (an existing file to read), "dir" (an existing folder), "out_file" (a file to write: not an
    existing folder) or "out_dir" (a folder to write into: not an existing file)."""

    kind = "path"

    def __init__(self, must=None):
        self.must = must
        self.__name__ = {None: "path", "file": "existing file", "dir": "existing folder", "out_file": "output file",
                         "out_dir": "output folder"}[must]

    def __call__(self, text):
        if not text:
            raise argparse.ArgumentTypeError("must be a path, got ''")
        problem = {"file": not os.path.isfile(text) and "is not an existing file",
                   "dir": not os.path.isdir(text) and "is not an existing folder",
                   "out_file": os.path.isdir(text) and "is a folder, not a file to write",
                   "out_dir": os.path.exists(text) and not os.path.isdir(text) and "exists and is not a folder",
                   None: False}[self.must]
        if problem:
            raise argparse.ArgumentTypeError(f"{_shown(text, 200)} {problem}")
        return text


path = Path()
input_file = Path("file")
input_dir = Path("dir")
output_file = Path("out_file")
output_dir = Path("out_dir")


def text_arg(pattern, description):
    """An argparse type: text matching the regular expression PATTERN in whole (`description` says what in the
    message)."""
    def parse(text):
        if re.fullmatch(pattern, text):
            return text
        raise argparse.ArgumentTypeError(f"must be {description}, got {_shown(text)}")
    parse.kind, parse.__name__ = "text", description
    return parse


# pimopt's algorithms and their aliases (`pimopt train --algo`; src/algorithms/*.cc register them), and backends.
PIMOPT_ALGORITHMS = ["sgd", "mbsgd", "mb-sgd", "ga", "ga-sgd", "ma", "ma-sgd", "admm", "dsgd", "d-psgd", "gossip",
                     "cocoa", "cocoa+", "newton", "newton-cg", "tron"]
PIMOPT_BACKENDS = ["cpu", "pim"]


# ----------------------------------------------------------------------------------------------------- outputs
@contextlib.contextmanager
def atomic_path(path):
    """A temporary name beside PATH (same folder, same extension: a plotting library picks the format by it) to
    write; renamed over PATH when the block ends without an exception, removed when it raises. PATH is then either
    the old file or the complete new one, never a part."""
    folder, base = os.path.split(path)
    stem, ext = os.path.splitext(base)
    tmp = os.path.join(folder, f".{stem}.{os.getpid()}.tmp{ext}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path, mode="w", **kwargs):
    """open(PATH, MODE) through atomic_path: the file appears complete, at the end of the block, or not at all."""
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f
