#!/usr/bin/python3
"""pimopt from Python, notebook style: fashion-mnist (classes 0,2,4,6 against the rest) trained by ADMM on the CPU
backend and on an emulated 256-DPU UPMEM system, the per-epoch accuracy, and the time breakdown of both runs
(a bar chart in python_quickstart.png when matplotlib is installed: scripts/setup.sh --bench).

    /usr/bin/python3 examples/python_quickstart.py        (after scripts/run.sh, which installs the package)
"""
import pimopt

# The built-in dataset, as the CLI reads it: X float32 (60,000 x 784), y +1 / -1.
X, y = pimopt.load_dataset("fashion-mnist")
X_test, y_test = pimopt.load_dataset("fashion-mnist:test")
print(f"train {X.shape}, test {X_test.shape}")

# The same algorithm and settings on both backends (PIM: every worker a DPU, fixed-point kernels, modeled times).
settings = dict(algo="admm", workers=256, batch=8, lr=0.05, epochs=3, scale="none")
runs = {}
for backend in ("cpu", "pim"):
    clf = pimopt.LogisticRegression(backend=backend, **settings).fit(X, y)
    runs[backend] = clf
    print(f"{backend}: test accuracy {clf.score(X_test, y_test):.4f}, epochs {clf.n_iter_}, "
          f"train accuracy per epoch {[round(e['train']['accuracy'], 4) for e in clf.history_]}")

# Where the time goes: the CPU run's measured phases, the PIM run's modeled phases of the real machine.
cpu_phases = {k: v for k, v in runs["cpu"].times_.items() if k not in ("data_load", "evaluation")}
pim_phases = {k: v for k, v in runs["pim"].times_.items()
              if k in ("modeled_cpu_to_dpu", "modeled_launch_overhead", "modeled_dpu_kernel", "modeled_dpu_to_cpu",
                       "modeled_host_reduction")}
for name, phases in (("CPU backend, measured s", cpu_phases), ("PIM system, modeled s", pim_phases)):
    print(name + ": " + ", ".join(f"{k} {v:.4f}" for k, v in phases.items()))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot (scripts/setup.sh --bench installs it)")
else:
    fig, ax = plt.subplots(figsize=(7, 3))
    for row, (label, phases) in enumerate((("CPU (measured)", cpu_phases), ("PIM (modeled)", pim_phases))):
        left = 0.0
        for phase, seconds in phases.items():
            ax.barh(row, seconds, left=left, label=phase)
            left += seconds
    ax.set_yticks([0, 1], ["CPU (measured)", "PIM (modeled)"])
    ax.set_xlabel("seconds for 3 epochs of ADMM, 256 workers")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig("python_quickstart.png", dpi=120)
    print("wrote python_quickstart.png")
