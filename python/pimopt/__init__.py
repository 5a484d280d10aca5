"""pimopt from Python: scikit-learn estimators over pimopt's training pipeline, on the CPU backend or the emulated
UPMEM PIM system, and `train`, the functional entry point that mirrors `pimopt train`.

    import pimopt
    clf = pimopt.LogisticRegression(algo="admm", backend="pim", workers=256).fit(X, y)
    clf.score(X_test, y_test), clf.history_[-1], clf.times_

docs/python.md describes every parameter; they are `pimopt train`'s flags (docs and `pimopt params`), with '-'
written '_'. Errors in the data or the parameters raise ValueError with the CLI's message.
"""
import inspect
import json
import numbers
import os
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _core

__all__ = ["LogisticRegression", "LinearSVC", "train", "param_names", "param_infos", "load_dataset", "profile_names",
           "profile", "validate", "run_prim", "prim_benchmarks", "validate_kernels", "plan"]


def param_names():
    """The names of `pimopt train`'s parameters (its flags without the dashes)."""
    return list(_core.param_names())


def param_infos():
    """Each entry point's parameters as declared once in the library ("train" for train, the estimators and plan's
    **options; "plan", "run_prim", "validate_kernels", "load_dataset"): a dict of lists of {name, flag, type,
    required, default, min, max, min_exclusive, max_exclusive, auto, choices, applies_when}, as
    `pimopt params --format json` prints them for the commands."""
    return dict(_core.param_infos())


def _text(name, value):
    """VALUE when it is a str, else a TypeError naming the argument NAME."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: a str, not {type(value).__name__} {value!r}")
    return value


def _names_text(name, value):
    """A list of names as the comma text the library parses (a str passes as it is: "VA,RED"); a TypeError naming
    NAME for anything else (a str is never iterated character by character)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise TypeError(f"{name}: a list of str or a comma-separated str, not {value!r}")


def _options_text(options):
    """Keyword options as the library's parameter texts: names with dashes, values as the CLI would write them (the
    library checks each against its declaration, ValueError naming it)."""
    return {k.replace("_", "-"): _option_text(v, k) for k, v in options.items()}


def load_dataset(spec, **options):
    """A dataset as `pimopt train --data SPEC` reads it: a file (LIBSVM, IDX, pimopt binary) or a built-in name
    ("fashion-mnist", "fashion-mnist:test", "dense:rows=1000,features=64", "sparse:rows=10000", ...), with train's
    source options (input_format, positive_classes, storage). Returns (X, y): X a float32 array, or a SciPy CSR
    matrix for sparse data; y float32 labels +1 / -1."""
    X, y = _core.load_dataset(_text("spec", spec), _options_text(options))
    if isinstance(X, tuple):
        indptr, indices, data, n_features = X
        X = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_features))
    return X, y


def plan(data, *, algos=None, pilot_epochs=20, pilot_backend="cpu", timing_dpus=64, timing_rows_per_dpu=8192,
         **options):
    """Which algorithm reaches a target first on the emulated PIM system, as `pimopt plan --data DATA --json`:
    per algorithm a short convergence pilot (on the CPU backend, or the emulator with pilot_backend="pim") and one
    timed epoch on the emulator; returns a dict with each candidate's modeled seconds and bytes per epoch, epochs
    and modeled seconds to the target, and the recommended algorithm and flags. `options` are train's (dpus,
    profile, model, target_accuracy or target_auc, lr, ...; underscores for dashes); `algos` a list (default
    mbsgd, ga, ma, dsgd, admm, cocoa)."""
    opts = _options_text(options)
    opts["data"] = _option_text(data, "data")
    plan_options = _options_text({"pilot_epochs": pilot_epochs, "pilot_backend": pilot_backend,
                                  "timing_dpus": timing_dpus, "timing_rows_per_dpu": timing_rows_per_dpu})
    if algos is not None:
        plan_options["algos"] = _names_text("algos", algos)
    return _core.plan(opts, plan_options)


def profile_names():
    """The emulator's hardware profiles (`pimopt profile`)."""
    return list(_core.profile_names())


def _overrides_text(overrides, name="overrides"):
    """Profile overrides as "field=value,...": a str as it is, a dict field -> value; TypeError naming the argument
    NAME for anything else."""
    if overrides is None:
        return ""
    if isinstance(overrides, str):
        return overrides
    if isinstance(overrides, dict):
        return ",".join(f"{_text('overrides key', k)}={_option_text(v, k)}" for k, v in overrides.items())
    raise TypeError(f"{name}: a dict or a 'field=value,...' str, not {overrides!r}")


def profile(name="pim-opt", overrides=None):
    """A hardware profile's fields after OVERRIDES ("field=value,..." or a dict; `slots.<op>` for op costs), as
    `pimopt profile NAME --set ...` shows them: {field: value}, numbers as float."""
    def value(text):
        try:
            return float(text)
        except ValueError:
            return text
    return {k: value(v) for k, v in _core.profile(_text("name", name), _overrides_text(overrides)).items()}


def prim_benchmarks():
    """The PrIM benchmarks ported to the emulator (its validation kernels): VA, RED, SEL, UNI, HST-S, HST-L, TS,
    SCAN-SSA, SCAN-RSS, TRNS, MLP, GEMV, BS."""
    return list(_core.prim_benchmarks())


def run_prim(benchmark="VA", dpus=1, param=1 << 20, tasklets=16, profile="pim-opt", overrides=None, *,
             threads=0, scheduler="batched", shuffle_seed=0, kernels="program"):
    """One run of a PrIM benchmark on DPUS emulated DPUs of a profile (after OVERRIDES), its result checked
    against its host reference; KERNELS "program" runs its DPU program in C, "port" its C++ port. PARAM is the benchmark's size parameter over all DPUs (`pimopt prim --list`); the
    numbers are checked as `pimopt prim`'s flags are (ValueError naming the parameter: no 2.7 truncated, no
    negative wrapped around). Returns what `pimopt prim --json` prints: the modeled times PrIM's host program
    measures (kernel_s: every timed launch with its overhead, cpu_to_dpu_s, dpu_to_cpu_s, dpu_to_dpu_s) and their
    uncertainty, slowest_dpu_cycles (issue, revolver, dma, interference, sync, total), instructions, dmas,
    unaligned_dmas, resized_dmas, check (what was compared) and host_wall_s. docs/pim-emulator.md defines the
    terms."""
    options = _options_text({"dpus": dpus, "param": param, "tasklets": tasklets, "threads": threads,
                             "scheduler": scheduler, "shuffle_seed": shuffle_seed, "kernels": kernels})
    return dict(_core.run_prim(_text("benchmark", benchmark), options, _text("profile", profile),
                               _overrides_text(overrides)))


def validate_kernels(path=None, benchmarks=None, profile="pim-opt", overrides=None, *, threads=0, kernels="program"):
    """Leave-one-benchmark-out validation of the emulator's timing against PrIM kernels timed on UPMEM hardware
    (`pimopt validate`): runs every row of the CSV at PATH (default: $PIMOPT_HW_DATA, else the project's
    ../shared/data/upmem-hw-kernels.csv beside the source tree), fits the timing model's free constants on all
    benchmarks but one and predicts that one. Returns what `pimopt validate --json` writes: benchmarks (a list, one
    dict per benchmark: benchmark, rows, kernel_out_of_sample, kernel_in_sample, simulator, transfers_out_of_sample,
    ..., each with rows, median_abs, worst_abs and worst (signed); fold_kernel_constants), fitted_kernel_constants
    and fitted_transfer_constants (fitted on all), the mean medians, uncertainty and skipped (rows of benchmarks
    not ported). KERNELS: "program" (the benchmarks' DPU programs in C) or "port" (their C++ ports)."""
    if path is None:
        path = _core.default_hw_data_path()
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: a str or a path, not {path!r}")
    options = {"benchmarks": _names_text("benchmarks", benchmarks), "threads": _option_text(threads, "threads"),
               "kernels": _option_text(kernels, "kernels")}
    return dict(_core.validate_kernels(os.fspath(path), options, _text("profile", profile),
                                       _overrides_text(overrides)))


def validate(profile="pim-opt", overrides=None):
    """The emulator's validation table on a profile: PrIM-style microbenchmarks (arithmetic throughput, MRAM DMA,
    host transfers, the VA and RED kernels) run on the emulator beside the published hardware numbers. A list of
    dicts: benchmark, modeled, published, error (relative), tolerance, unit, ok. The published values are at the
    pim-opt profile's 350 MHz."""
    return list(_core.validate(_text("profile", profile), _overrides_text(overrides)))


def _as_core_matrix(X):
    """X (array-like or a SciPy sparse matrix) as the core's input: a float32 C-order array (no copy when it is one
    already), or CSR arrays (indptr, indices, data, n_features) with sorted indices."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_canonical_format:  # canonical: sorted indices, no duplicates
            X = X.copy()
            X.sum_duplicates()  # also sorts the indices
        return (np.asarray(X.indptr, dtype=np.int64), np.asarray(X.indices, dtype=np.int64),
                np.asarray(X.data, dtype=np.float32), X.shape[1])
    return np.ascontiguousarray(X, dtype=np.float32)


def _option_text(value, name="value"):
    """A value as the CLI would write it: bools true / false, a float that is a whole number as that number (exact:
    2.0 -> "2"; 2.7, nan and inf stay what they are, for the library to refuse where a whole number is declared), a
    path as its text. TypeError naming NAME for a value no flag could hold (a list, a dict, None, an object)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"{name}: a number, str or bool, not {type(value).__name__} {value!r}")


def train(X, y, *, X_test=None, y_test=None, sample_weight=None, **options):
    """Trains as `pimopt train` does, on arrays: X (n_samples x n_features, NumPy or SciPy sparse), y with labels
    +1 / -1 (or 1 / 0, True / False), and train's options by name (`algo="ma"`, `lr_schedule="constant"`, `out=PATH`,
    ...). Returns a dict: coef (float32 weights that score the raw features), intercept, report (the JSON report
    as a dict: config, per-epoch metrics, time by phase, traffic, modeled PIM times), epochs (report["epochs"]) and,
    when pandas is installed, epochs_frame (the same as a DataFrame)."""
    def labels(v, name="y"):
        v = np.asarray(v, dtype=np.float64).ravel()
        if not np.all((v == 1) | (v == -1) | (v == 0)):
            raise ValueError(f"{name}: labels must be +1 and -1 (or 1 and 0)")
        if np.any(v == -1) and np.any(v == 0):  # three classes would be trained as two, silently
            raise ValueError(f"{name}: labels mix the +1/-1 and 1/0 conventions (-1 and 0 both present)")
        return np.where(v > 0, 1.0, -1.0).astype(np.float32)

    core_options = _options_text({name: value for name, value in options.items() if value is not None})
    X_core = _as_core_matrix(X)
    weights = np.empty(0, np.float32) if sample_weight is None else np.asarray(sample_weight, np.float32)
    if weights.ndim != 1:
        raise ValueError(f"sample_weight: one weight per row, a 1-d array, not of shape {weights.shape}")
    X_test_core = None if X_test is None else _as_core_matrix(X_test)
    y_test_core = np.empty(0, np.float32) if y_test is None else labels(y_test, "y_test")
    out = _core.train(core_options, X_core, labels(y), weights, X_test_core, y_test_core)
    report = json.loads(out["report"])
    # What the run said beside its numbers (the CLI prints them as notes): a training set of one class, features the
    # PIM backend clipped, a folded scaling that costs the raw-feature scores their precision.
    for note in report.get("notes", []):
        warnings.warn(f"pimopt: {note}", RuntimeWarning, stacklevel=2)
    result = {"coef": out["coef"], "intercept": out["intercept"], "report": report, "epochs": report["epochs"]}
    frame = _epochs_frame(report["epochs"])
    if frame is not None:
        result["epochs_frame"] = frame
    return result


def _epochs_frame(epochs):
    """The per-epoch records as a pandas DataFrame, one row per epoch, nested fields as dotted columns
    ("train.accuracy", "phases_seconds.modeled_dpu_kernel", ...); None without pandas."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas.json_normalize(epochs)


# The estimators' keywords are generated from `pimopt train`'s parameter table (param_infos()["train"]), so that
# every parameter the library declares is one, with its declared default, and none outlives its parameter. The
# parameters below are the exceptions: those the table has but an estimator cannot take, and those it takes under
# scikit-learn's names. A parameter the library adds later becomes a keyword; tests/python/test_estimators.py checks
# these lists against what each parameter affects (`pimopt params`), so that an output or a data file never does.

# train's parameters that are no keyword of the estimators, and why (pimopt.train takes the outputs).
_NOT_ESTIMATOR_KEYWORDS = {
    "data": "the training data are fit's X and y",
    "test": "a data file: the estimators score arrays (score, decision_function)",
    "test-fraction": "a data file's split: split the arrays (train_test_split)",
    "input-format": "how data files are read",
    "positive-classes": "how IDX files are labelled: fit takes any two labels",
    "model": "the estimator's class: lr for LogisticRegression, svm for LinearSVC",
    "cv": "cross-validation is scikit-learn's (cross_val_score)",
    "scheduler": "how the emulator schedules tasklets: the same model and modeled times either way",
    "project-dpus": "a report-only extrapolation of the modeled epoch time",
    "project-rows-per-dpu": "a report-only extrapolation of the modeled epoch time",
    "out": "an output file", "liblinear-out": "an output file", "report": "an output file (report_ holds it)",
    "checkpoint": "an output file", "checkpoint-every": "an output file's period", "resume": "reads a checkpoint",
    "no-train-metrics": "what is evaluated and printed, never the model",
    "train-metrics-every-epoch": "which epochs are evaluated and printed (a certified stop either way)",
    "quiet": "what is printed",
    "target-accuracy": "a report-only milestone", "target-auc": "a report-only milestone",
}

# train's parameters that the estimators take under scikit-learn's names: parameter -> (keyword, default).
_SKLEARN_KEYWORDS = {
    "class-weights": ("class_weight", None),  # a dict {label: weight} or "balanced"
    "no-bias": ("fit_intercept", True),
    "no-shuffle": ("shuffle", True),
    "seed": ("random_state", 1),  # an int as it is; None or a RandomState draws a seed
}


def _keyword_default(info):
    """A train parameter's declared default as a keyword's default: its value (numbers as int or float, "auto", a
    choice's name, a flag as a bool); None where the table states the default as a note that depends on other
    parameters (epochs: "the algorithm's", dpus: "= --workers") or as empty text. A note "VALUE = meaning"
    (threads: "0 = all CPUs") gives VALUE."""
    text = info["default"]
    if info["type"] == "flag":
        return text == "on"
    if info.get("auto") and text == "auto":
        return "auto"
    if info["type"] == "choice":
        return text if text in info["choices"] else None
    if info["type"] == "text":
        return None if text == "-" else text
    parse = int if info["type"] in ("integer", "count") else float
    for candidate in (text, text.split(" = ")[0]):
        try:
            return parse(candidate)
        except ValueError:
            pass
    return None


def _estimator_keywords():
    """keyword -> (train parameter, default), in the table's order: every train parameter but
    _NOT_ESTIMATOR_KEYWORDS, under its name with '-' written '_' (or its scikit-learn name)."""
    keywords = {}
    for info in param_infos()["train"]:
        name = info["name"]
        if name in _NOT_ESTIMATOR_KEYWORDS:
            continue
        keyword, default = _SKLEARN_KEYWORDS.get(name, (name.replace("-", "_"), _keyword_default(info)))
        keywords[keyword] = (name, default)
    return keywords


_ESTIMATOR_KEYWORDS = _estimator_keywords()
# The estimators' __init__ signature: self, then every keyword (keyword-only) with its default.
_INIT_SIGNATURE = inspect.Signature(
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
    [inspect.Parameter(keyword, inspect.Parameter.KEYWORD_ONLY, default=default)
     for keyword, (_, default) in _ESTIMATOR_KEYWORDS.items()])


def _is_default(value, default):
    """Whether a keyword's VALUE is its DEFAULT (1 == 1.0; True is not 1; an array or a list never is)."""
    if isinstance(value, bool) != isinstance(default, bool) or isinstance(value, (list, tuple, dict, np.ndarray)):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


class _LinearClassifier(ClassifierMixin, BaseEstimator):
    """What both estimators share: binary labels mapped as scikit-learn does (classes_[1] is the positive class),
    training by `train`, prediction from coef_ and intercept_. The keywords are `pimopt train`'s parameters
    (_ESTIMATOR_KEYWORDS; `pimopt params` explains them), all keyword-only."""

    _model = None  # "lr" or "svm"

    def __init__(self, **params):
        # The signature, _INIT_SIGNATURE, is generated from the parameter table: scikit-learn reads the keywords
        # and their defaults from it (get_params, clone, repr), and binding to it refuses an unknown keyword as a
        # written-out __init__ would. scikit-learn's rule: __init__ only stores the values; fit checks them.
        try:
            bound = _INIT_SIGNATURE.bind(self, **params)
        except TypeError as e:
            raise TypeError(f"{type(self).__name__}: {e}") from None
        bound.apply_defaults()
        for keyword, value in bound.arguments.items():
            if keyword != "self":
                setattr(self, keyword, value)

    __init__.__signature__ = _INIT_SIGNATURE

    def _options(self, classes, y):
        """The keywords as train's options. A keyword is passed only when it is set and differs from its default,
        so that a default never trips the library's "only meaningful with" check (--lr with cocoa, --rho without
        admm, the PIM options on the CPU backend), while a value the user set where it does nothing is refused,
        naming it. None is the library's default."""
        options = {"model": self._model}
        for keyword, (name, default) in _ESTIMATOR_KEYWORDS.items():
            value = getattr(self, keyword)
            if name in _SKLEARN_KEYWORDS or value is None or _is_default(value, default):
                continue
            options[keyword] = _overrides_text(value, keyword) if keyword == "profile_set" else value
        if not self.fit_intercept:
            options["no_bias"] = True
        if not self.shuffle:
            options["no_shuffle"] = True
        if isinstance(self.random_state, numbers.Integral) and not isinstance(self.random_state, bool):
            options["seed"] = int(self.random_state)
        else:
            options["seed"] = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        if self.class_weight is not None:
            options["class_weights"] = self._class_weights_text(classes, y)
        return options

    def _class_weights_text(self, classes, y):
        if isinstance(self.class_weight, str):
            if self.class_weight != "balanced":
                raise ValueError(f"class_weight: 'balanced', a dict or None, not {self.class_weight!r}")
            counts = np.array([np.sum(y == c) for c in classes], dtype=np.float64)
            weights = len(y) / (len(classes) * counts)
        elif isinstance(self.class_weight, dict):
            unknown = [key for key in self.class_weight if not np.any(classes == key)]
            if unknown:  # a misspelled class would weigh nothing, silently (scikit-learn refuses it too)
                raise ValueError(f"class_weight: {unknown!r} not among the classes {list(classes)!r}")
            values = [self.class_weight.get(c, 1.0) for c in classes]
            if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
                raise TypeError(f"class_weight: the weights must be numbers, not {self.class_weight!r}")
            weights = np.array(values, dtype=np.float64)
        else:
            raise TypeError(f"class_weight: 'balanced', a dict or None, not {self.class_weight!r}")
        return f"{weights[1]!r}:{weights[0]!r}"

    def fit(self, X, y, sample_weight=None):
        """Trains on X (dense or sparse, float32 or float64) and y (any two labels); sample_weight optional."""
        X, y = self._validate_data(X, y, accept_sparse="csr", dtype=[np.float32, np.float64], order="C")
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(f"{type(self).__name__} trains binary classifiers: y needs 2 classes, got "
                             f"{len(classes)} class{'es' if len(classes) != 1 else ''}")
        weights = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float32)
        result = train(X, np.where(y == classes[1], 1.0, -1.0), sample_weight=weights, **self._options(classes, y))
        self.classes_ = classes
        self.coef_ = np.asarray(result["coef"], dtype=np.float64).reshape(1, -1)
        self.intercept_ = np.array([result["intercept"]], dtype=np.float64)
        if not self.fit_intercept and self.intercept_[0] != 0:
            # The bias is zero in the scaled features; min-max scaling's shift by each feature's minimum gives the
            # model of raw features one (scale="none" keeps scikit-learn's meaning: no intercept at all).
            warnings.warn("pimopt: fit_intercept=False fits no bias in the min-max scaled features, and the shift "
                          f"by each feature's minimum gives the raw-feature model intercept_ {self.intercept_[0]:.6g};"
                          " pass scale='none' (with features already scaled) for none", RuntimeWarning, stacklevel=2)
        self.n_iter_ = len(result["epochs"])
        self.report_ = result["report"]
        self.history_ = result["epochs"]
        self.times_ = result["report"]["time"]["phases_seconds"]
        return self

    def history_frame(self):
        """history_ as a pandas DataFrame (one row per epoch, nested fields as dotted columns); needs pandas."""
        check_is_fitted(self)
        frame = _epochs_frame(self.history_)
        if frame is None:
            raise ImportError("history_frame needs pandas (Debian: python3-pandas)")
        return frame

    def decision_function(self, X):
        """Scores X: positive for classes_[1]."""
        check_is_fitted(self)
        X = self._validate_data(X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False)
        return np.asarray(X @ self.coef_[0] + self.intercept_[0], dtype=np.float64).ravel()

    def predict(self, X):
        positive = self.decision_function(X) > 0  # first: it raises NotFittedError before classes_ is read
        return self.classes_[positive.astype(int)]

    def _more_tags(self):
        return {
            "binary_only": True,
            "_xfail_checks": {
                "check_sample_weights_invariance": (
                    "zero sample_weight is not equivalent to removing samples: the shuffled order of the epochs "
                    "depends on the number of rows"),
            },
        }


class LogisticRegression(_LinearClassifier):
    """L2-regularized logistic regression trained by pimopt (CoCoA+ by default, or SGD, MB-SGD, GA-SGD, MA-SGD,
    D-PSGD or ADMM; CPU or emulated PIM backend). The keywords are `pimopt train`'s parameters with '-' written '_'
    (docs/python.md lists them; `pimopt params` explains them), with its defaults: LIBLINEAR's C = 1 objective,
    scaled features, automatic batch and learning rate."""

    _model = "lr"

    def predict_proba(self, X):
        """[P(classes_[0]), P(classes_[1])] per row."""
        p = 1.0 / (1.0 + np.exp(-np.clip(self.decision_function(X), -700, 700)))
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))


class LinearSVC(_LinearClassifier):
    """L2-regularized linear SVM (hinge loss) trained by pimopt; the parameters are LogisticRegression's."""

    _model = "svm"
