#!/usr/bin/env python3
"""The bench scripts' own arguments are checked as they are parsed, as pimopt's flags are (docs/reliability.md,
"The bench scripts' arguments").

Every bench/*.py that parses arguments builds its parser(s) in a function `build_parser()` (and `build_*_parser()`
for a child's command line). This test imports each script (which must need nothing beyond Python's standard library
for that: no numpy, torch, matplotlib, scikit-learn or the pimopt binding), walks every argument of every parser and
subcommand, and:
  - fails for an argument that takes a value but declares no bounds: its `type` must be one of bench/bench_util.py's
    types (which carry a `kind` and their bounds) or it must list `choices`; a bare int, float or str fails;
  - gives each argument values outside its declared bounds (for a number: 0, -1, -5, 1e308, nan, inf, 2.7 for an
    integer, '', 'abc', ...; for a list, a name, a path: the matching kinds of wrong) and expects argparse's usage
    error: exit 2, a message naming the argument, no traceback; and a value within them to pass;
  - checks each default against its own declaration;
  - runs every script once as a user would (a subprocess of this interpreter, PIMOPT pointing nowhere) with a refused
    value: exit 2, the same message, nothing on stdout, no traceback;
  - and the reported cases: `pim_opt_baselines.py predict --batch 0` (a ZeroDivisionError traceback before),
    negative `--rows` (a negative epoch time, exit 0, before) and rows too few for one step (an epoch of 0 s).
No benchmark runs: each refusal comes before any work. Takes about a second.
"""
import argparse
import contextlib
import importlib
import io
import math
import os
import re
import subprocess
import sys
import unittest

BENCH = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)
sys.dont_write_bytecode = True  # no __pycache__ left in bench/
HEAVY = ("numpy", "scipy", "torch", "matplotlib", "sklearn", "pimopt")
SCRIPTS = sorted(f[:-3] for f in os.listdir(BENCH) if f.endswith(".py") and f != "bench_util.py")
MISSING = os.path.join(os.sep, "nonexistent", "bench_args_test")
ENV = dict(os.environ, PIMOPT=os.path.join(MISSING, "pimopt"), PIMOPT_MEMBW=os.path.join(MISSING, "membw"),
           PYTHONDONTWRITEBYTECODE="1")

heavy_before = {m for m in HEAVY if m in sys.modules}
MODULES = {name: importlib.import_module(name) for name in SCRIPTS}
HEAVY_IMPORTED = sorted({m for m in HEAVY if m in sys.modules} - heavy_before)


def builders(module):
    """The module's parser builders: build_parser, build_worker_parser, ..."""
    return [getattr(module, n) for n in sorted(dir(module)) if re.fullmatch(r"build_\w*parser", n)]


def arguments(parser, prefix=()):
    """(subcommand prefix, action) for every argument of PARSER and of its subcommands' parsers."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from arguments(sub, prefix + (name,))
        elif not isinstance(action, argparse._HelpAction) and action.nargs != 0:
            yield prefix, action


def label(action):
    """The argument's name as argparse's messages give it."""
    return "/".join(action.option_strings) if action.option_strings else action.metavar or action.dest


def argv(prefix, action, value):
    return list(prefix) + ([f"{action.option_strings[-1]}={value}"] if action.option_strings else [value])


def kind(action):
    if action.choices is not None:
        return "choices"
    return getattr(action.type, "kind", None)


def int_literal(text):
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


def float_value(text):
    try:
        return float(text) if text.strip() == text and "_" not in text else None
    except ValueError:
        return None


def bounds_allow(t, value):
    """Whether the declared bounds of a bench_util.Bounded type T admit VALUE (computed here, not by T)."""
    if t.low is not None and (value < t.low or (t.low_open and value == t.low)):
        return False
    return t.high is None or not (value > t.high or (t.high_open and value == t.high))


def cases(action):
    """(values to refuse, values to accept) for ACTION, from its kind and declared bounds."""
    t, k = action.type, kind(action)
    if k == "int":
        tries = ["0", "-1", "-5", "1e308", "nan", "inf", "-inf", "2.7", "", "abc", " 5", "+5", "1_0", "9" * 30,
                 "0x10"] + [str(b + d) for b, d in ((t.low, -1), (t.high, 1)) if b is not None]

        def ok(v):
            n = int_literal(v)
            return n is not None and abs(n) < 2 ** 63 and bounds_allow(t, n)
        accept = [str(t.low if t.low is not None else 0)] + ([str(t.high)] if t.high is not None else [])
        return [v for v in tries if not ok(v)], accept
    if k == "float":
        tries = ["0", "-1", "-5", "1e308", "-1e308", "1e400", "nan", "inf", "-inf", "", "abc", " 1", "1_0"]

        def ok(v):
            x = float_value(v)
            return x is not None and math.isfinite(x) and bounds_allow(t, x)
        inside = (t.low + t.high) / 2 if t.low is not None and t.high is not None else \
            (t.low + 1 if t.low is not None else (t.high - 1 if t.high is not None else 0.0))
        return [v for v in tries if not ok(v)], [repr(inside)]
    if k == "int_list":
        tries = ["0", "-1", "-5", "1,0", "1,-5", "2.7", "1e308", "nan", "inf", "", "abc", "1,,2", ",", "1,abc",
                 "9" * 30]

        def ok(v):
            items = [int_literal(x) for x in v.split(",")]
            if any(n is None or abs(n) >= 2 ** 63 or not bounds_allow(t.item, n) for n in items):
                return False
            return not t.distinct or len(set(items)) == len(items)
        low = t.low if t.low is not None else 0
        refuse = [v for v in tries if not ok(v)] + ([f"{low},{low}"] if t.distinct else [])
        return refuse, [str(low), f"{low},{low + 1}"]
    if k == "names":
        first = t.choices[0]
        return ["abc", "", ",", f"{first},abc", f"{first},{first}"], [first, ",".join(t.choices)]
    if k == "choices":
        return ["abc", ""], [str(c) for c in action.choices]
    if k == "path":
        refuse = {"file": ["", MISSING, BENCH], "dir": ["", MISSING, __file__], "out_file": ["", BENCH],
                  "out_dir": ["", __file__], None: [""]}[t.must]
        accept = {"file": [__file__], "dir": [BENCH], "out_file": [os.path.join(MISSING, "x.json")],
                  "out_dir": [MISSING, BENCH], None: ["x"]}[t.must]
        return refuse, accept
    if k == "text":  # a pattern or a small format of its own: neither empty text nor a bare word is one
        return ["", "abc"], []
    raise AssertionError(f"unknown kind {k!r}")


def parse(build, args):
    """build().parse_args(ARGS) here: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build().parse_args(args)
        except SystemExit as e:
            return e.code, err.getvalue()
    return 0, err.getvalue()


def run_script(script, args):
    return subprocess.run([sys.executable, os.path.join(BENCH, script + ".py")] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=ENV, timeout=60)


def every_argument():
    """(script, builder, subcommand prefix, action) for every argument of every bench script's parsers."""
    for name, module in MODULES.items():
        for build in builders(module):
            for prefix, action in arguments(build()):
                yield name, build, prefix, action


class Discovery(unittest.TestCase):
    def test_importing_the_scripts_needs_no_heavy_package(self):
        self.assertEqual(HEAVY_IMPORTED, [], "imported by a bench script before its arguments are parsed")

    def test_every_parser_is_built_by_a_build_parser_function(self):
        for name, module in MODULES.items():
            with open(module.__file__) as f:
                made = f.read().count("argparse.ArgumentParser(")
            with self.subTest(script=name):
                self.assertTrue(hasattr(module, "build_parser"), "no build_parser()")
                self.assertEqual(made, len(builders(module)),
                                 "every argparse.ArgumentParser() must be made by a build_*parser() function")

    def test_every_argument_that_takes_a_value_declares_its_bounds(self):
        unbounded = [" ".join([name, *prefix, f"{label(action)} (type {getattr(action.type, '__name__', None)})"])
                     for name, _, prefix, action in every_argument() if kind(action) is None]
        self.assertEqual(unbounded, [], "give each a type from bench/bench_util.py (positive_int, fraction, "
                                        "IntList, NameList, Path, ...) or choices")

    def test_enumerates_the_arguments_of_the_report(self):
        found = {(name, prefix, label(action)) for name, _, prefix, action in every_argument()}
        for expected in [("pim_opt_baselines", ("predict",), "--batch"), ("pim_opt_baselines", ("predict",), "--rows"),
                         ("cpu_scaling", (), "--threads"), ("peers", (), "--rounds"), ("peers", (), "--batch"),
                         ("mpi_scaling", (), "--ranks"), ("real_datasets", ("compare",), "--check"),
                         ("beyond_paper", (), "--workloads"), ("svm_dual_finish", (), "--passes")]:
            self.assertIn(expected, found)


class HostileValues(unittest.TestCase):
    def test_values_outside_the_declared_bounds_are_refused_naming_the_argument(self):
        count = 0
        for name, build, prefix, action in every_argument():
            if kind(action) is None:
                continue  # reported by test_every_argument_that_takes_a_value_declares_its_bounds
            refuse, accept = cases(action)
            for value in refuse:
                with self.subTest(script=name, argument=label(action), value=value):
                    code, err = parse(build, argv(prefix, action, value))
                    self.assertEqual(code, 2, err)
                    self.assertIn(f"argument {label(action)}: ", err)
                    self.assertNotIn("Traceback", err)
                    count += 1
            for value in accept:
                with self.subTest(script=name, argument=label(action), accepted=value):
                    _, err = parse(build, argv(prefix, action, value))
                    self.assertNotIn(f"argument {label(action)}:", err)
        self.assertGreater(count, 300)

    def test_defaults_are_within_their_own_declarations(self):
        for name, _, prefix, action in every_argument():
            if action.default is None or kind(action) in (None, "text"):
                continue
            default = action.default
            with self.subTest(script=name, argument=label(action), default=default):
                if kind(action) == "choices":
                    self.assertIn(default, action.choices)
                    continue
                if isinstance(default, str):
                    texts = [default]
                elif kind(action) in ("int_list", "names"):
                    texts = [",".join(str(v) for v in default)]
                elif isinstance(default, list):  # nargs="+"
                    texts = [str(v) for v in default]
                else:
                    texts = [repr(default)]
                for text in texts:
                    try:
                        action.type(text)
                    except argparse.ArgumentTypeError as e:
                        self.fail(f"default {default!r}: {e}")


class AsAUserRunsThem(unittest.TestCase):
    def test_each_script_refuses_a_bad_value_before_any_work(self):
        for name, module in MODULES.items():
            for build in builders(module):
                prefix, action = next((p, a) for p, a in arguments(build()) if kind(a) not in (None, "text"))
                value = cases(action)[0][0]
                args = argv(prefix, action, value)
                if build.__name__ == "build_worker_parser":
                    args = ["worker"] + args
                _, expected = parse(build, argv(prefix, action, value))
                with self.subTest(script=name, args=args):
                    res = run_script(name, args)
                    self.assertEqual(res.returncode, 2, res.stderr)
                    self.assertEqual(res.stdout, "")
                    self.assertNotIn("Traceback", res.stderr)
                    self.assertIn(expected.splitlines()[-1].split(" error: ", 1)[1], res.stderr)


class ReportedCases(unittest.TestCase):
    """`bench/pim_opt_baselines.py predict --batch 0` was a ZeroDivisionError traceback; a negative --rows modeled
    a negative epoch with exit 0; rows too few for one step an epoch of 0 s."""

    def refused(self, args, message):
        res = run_script("pim_opt_baselines", args)
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn(message, res.stderr)
        self.assertNotIn("Traceback", res.stderr)
        self.assertEqual(res.stdout, "")

    def test_batch_zero(self):
        self.refused(["predict", "--batch", "0"], "argument --batch: must be an integer >= 1, got '0'")
        self.refused(["predict", "--system", "gpu", "--data", "yfcc", "--rows", "4096", "--batch", "0"],
                     "argument --batch: must be an integer >= 1, got '0'")

    def test_negative_rows(self):
        for system in ("cpu", "gpu", "gpu-resident"):
            self.refused(["predict", "--system", system, "--data", "yfcc", "--rows", "-5", "--batch", "8"],
                         "argument --rows: must be an integer >= 1, got '-5'")

    def test_rows_short_of_one_step(self):
        self.refused(["predict", "--system", "cpu", "--data", "yfcc", "--rows", "1000", "--batch", "8"],
                     "argument --rows: must be at least one step of --batch 8 on 128 processes (1024 rows)")
        self.refused(["predict", "--system", "gpu", "--data", "yfcc", "--rows", "4095", "--batch", "4096"],
                     "argument --rows: must be at least one step of --batch 4096 (4096 rows)")

    def test_a_valid_prediction_is_unchanged(self):
        import json
        res = run_script("pim_opt_baselines", ["predict", "--system", "cpu", "--data", "yfcc", "--rows", "1024",
                                               "--batch", "8"])
        self.assertEqual(res.returncode, 0, res.stderr)
        r = json.loads(res.stdout)
        self.assertEqual(r["steps"], 1)
        self.assertGreater(r["epoch_s"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=1)
