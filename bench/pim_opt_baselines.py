#!/usr/bin/python3
"""Cost models of PIM-Opt's CPU and GPU baselines at the paper's scale, calibrated on this machine.

PIM-Opt compares its UPMEM runs with two PyTorch baselines (docs/baselines.md):
  cpu  2 x AMD EPYC 7742, 128 processes (1 thread each), gloo: MA-SGD as a local step then an all-reduce of the
       model after every mini-batch ("ma1"), GA-SGD as DDP's gradient all-reduce, ADMM as one local epoch then
       gather / scatter through rank 0. Dense data (YFCC) goes through a DataLoader that fetches sample by sample;
       sparse data (Criteo) through a hand-written binary linear model with Python loops over the batch.
  gpu  one A100-80GB PCIe, mini-batch SGD with batch 4,096 (YFCC only), data streamed from pinned host memory by a
       DataLoader with one worker.
Nothing of that hardware is here, so each baseline is a cost model whose pieces are measured on this machine and
carried to the paper's hardware by written rules:
  - per-step compute and per-sample loading of PyTorch on one core, measured here with the same operations,
    scaled by the clock ratio (the steps are dominated by Python and small-tensor dispatch, which scale with clock);
  - gloo's all-reduce: latency and bandwidth measured here with 2 processes over loopback, extended to P processes
    by the ring algorithm (2 (P - 1) steps of bytes / P);
  - the GPU: PCIe and HBM bandwidths and the launch overhead per operation from published figures.
`calibrate` measures the pieces (writes JSON), `validate` runs the CPU baselines' loops here with 2 processes and
compares each measured epoch with the model's prediction from the calibration alone (out of sample), `predict`
prints the modeled epoch at the paper's scale. Needs Debian's python3-torch (scripts/setup.sh --bench).

Usage: /usr/bin/python3 bench/pim_opt_baselines.py calibrate [--out bench/out/baseline_calibration.json]
       /usr/bin/python3 bench/pim_opt_baselines.py validate [--processes 2,4] [--rows-per-process R]
                        [--calibration FILE]
       /usr/bin/python3 bench/pim_opt_baselines.py predict --system cpu|gpu|gpu-resident [--gpu a100|h200]
                        --data yfcc|criteo --algo ma|ga|admm --rows N --batch B [--calibration FILE]
       python3 bench/pim_opt_baselines.py loops [--processes 2,8,16] [--gpu-rows 262144] [--out FILE]
                        (on a machine with many cores and a GPU, PyTorch only: `bash bench/many_core.sh baselines`
                        runs it)
The model functions (cpu_epoch, gpu_epoch) need no torch; tests/bench/baseline_model_test.py checks them.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_util as bu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CALIBRATION = os.path.join(ROOT, "bench", "baseline_calibration.json")

# ----------------------------------------------------------------------------------------------- the paper's systems
# Sources: docs/sources.md. "inferred" values are derived in docs/baselines.md.
CPU_SYSTEM = {
    "processes": 128,  # [PIM-Opt] baseline: 128 processes on 2 x EPYC 7742 (64 cores each), 1 thread each
    "cores": 128,  # [EPYC-7742]: every core runs a process
    "clock_hz": 2.6e9,  # inferred: EPYC 7742 all-core clock under load (2.25 GHz base, 3.4 GHz single-core boost)
    "clock_band": (2.25e9, 3.4e9),
}
# gloo's all-reduce at P processes over the ring model built from the loopback pair (docs/baselines.md "Process
# scaling"): fitted by fit_process_scaling on the baselines' loops timed at 2, 8 and 16 processes on a 16-core
# machine (the measured points are tabulated there). Up to half the cores the ring holds (measured / ring 0.84-1.71);
# with a process on every core (PIM-Opt's 128 on 128) gloo took 1.68x (MA-SGD) and 3.09x (GA-SGD) the ring's time:
# central value their geometric mean, band the lowest ratio measured at any size to twice the highest (the factor 2
# is the allowance for carrying 16 processes to 128).
ALLREDUCE_SCALING = {
    "half_machine": {"factor": 1.07, "band": (0.84, 1.71)},
    "full_machine": {"factor": 2.28, "band": (0.84, 6.18)},
}
# The GPU systems. The artifact's program streams every batch from host memory (gpu_epoch); the program a GPU user
# would write keeps the training set in device memory, or streams it in large pinned chunks where it does not fit
# (gpu_resident_epoch).
GPU_SYSTEMS = {
    "a100": {  # [PIM-Opt]'s GPU baseline
        "name": "A100 80GB PCIe",
        "pcie_bytes_per_s": 24e9,  # inferred: PCIe 4.0 x16 (31.5 GB/s raw), pinned host->device copies reach ~24 GB/s
        "pcie_band": (20e9, 26e9),
        "hbm_bytes_per_s": 1.935e12,  # [A100] A100 80GB PCIe: 1,935 GB/s
        "memory_bytes": 80e9,  # [A100]
        "op_overhead_s": 10e-6,  # inferred: PyTorch eager dispatch + CUDA launch per operator
        "ops_per_step": 14,  # forward (addmm), loss (BCE with logits: ~4), backward (~5), SGD with weight decay (~4)
        "host_clock_hz": 2.3e9,  # [PIM-Opt] GPU host: 2 x Xeon Gold 5118 (2.3 GHz base, 3.2 GHz boost)
        "host_clock_band": (2.3e9, 3.2e9),
    },
    "h200": {  # [H200]; the host rates measured on the machine that ran the loops (docs/baselines.md)
        "name": "H200",
        "pcie_bytes_per_s": 55.2e9,  # measured there: pinned host->device copies
        "pcie_band": (50e9, 58e9),
        "hbm_bytes_per_s": 4.8e12,  # [H200] HBM3e, 4.8 TB/s
        "memory_bytes": 141e9,  # [H200]
        "op_overhead_s": 10e-6,
        "ops_per_step": 14,
        "host_clock_hz": None,  # its calibration was measured there: no clock scaling (see calibration_for)
        "host_clock_band": (None, None),
    },
}
GPU_SYSTEM = GPU_SYSTEMS["a100"]
# The artifact's GPU program measured on the H200 machine over the model calibrated there: 7.70 s against 5.72 s
# (262,144 rows; loader-bound, the device's work 0.09 s). The upper edge of gpu_epoch's band.
LOADER_MEASURED_OVER_MODEL = 7.69879541015625 / 5.7184760699355826
# The resident-data step (the artifact's step on a batch indexed from a training set in device memory): a fixed
# cost per step, fitted on the H200 run of 262,144 rows (64 steps of 4,096: 0.0518 s per epoch), and HBM passes over
# the batch (the index gather reads and writes it, the forward and the backward read it). Predicts the same run at
# PIM-Opt's 6,815,744 rows (1,664 steps) at 1.35 s against 1.33-1.47 s measured (docs/baselines.md).
RESIDENT_STEP = {"fixed_s": 0.754e-3, "band": (0.5, 2.0), "hbm_passes": 4}


# ------------------------------------------------------------------------------------------------------ cost models
def ring_allreduce_s(processes, nbytes, alpha_s, bytes_per_s):
    """gloo's ring all-reduce: 2 (P - 1) steps, each a message of nbytes / P plus a latency."""
    if processes <= 1:
        return 0.0
    return 2 * (processes - 1) * (alpha_s + nbytes / processes / bytes_per_s)


def allreduce_factor(processes, cores, scaling=None):
    """The measured all-reduce over the ring model at `processes` on a machine of `cores` (ALLREDUCE_SCALING):
    (central, low, high). Half the cores or fewer: the half-machine values; a process on every core: the
    full-machine ones; log-linear in processes between."""
    scaling = scaling or ALLREDUCE_SCALING
    half, full = scaling["half_machine"], scaling["full_machine"]
    share = processes / cores
    t = min(max(math.log2(max(share, 1e-9) / 0.5), 0.0), 1.0)  # 0 at half the cores or fewer, 1 at all of them

    def mix(a, b):
        return math.exp((1 - t) * math.log(a) + t * math.log(b))
    return mix(half["factor"], full["factor"]), mix(half["band"][0], full["band"][0]), mix(half["band"][1],
                                                                                          full["band"][1])


def _dense_step_s(cal, batch, features):
    c = cal["dense_step"]
    return c["base_s"] + c["per_element_s"] * batch * features


def _dense_load_s(cal, batch, features):
    c = cal["dense_load"]
    return c["base_s"] + batch * (c["per_sample_s"] + c["per_element_s"] * features)


def _sparse_step_s(cal, batch, features):
    c = cal["sparse_step"]
    return c["base_s"] + c["per_sample_s"] * batch + c["per_model_element_s"] * features


def cpu_epoch(cal, data, algo, rows, batch, features, system=CPU_SYSTEM, clock_hz=None):
    """Modeled seconds of one epoch of PIM-Opt's CPU baseline, as the artifact times it.

    batch is per process (MA, ADMM: b; GA: the per-process share of the global batch). Returns a dict with the
    breakdown, the total and a band from the documented ranges of the scaling rules."""
    p = system["processes"]
    steps = rows // (p * batch)  # each process walks its rows / P in batches (DistributedSampler, no shuffle)
    factor, factor_lo, factor_hi = allreduce_factor(p, system.get("cores", p))

    def at(clock):
        scale = cal["clock_hz"] / clock  # this machine's seconds -> the EPYC's
        if data == "yfcc":
            compute = _dense_step_s(cal, batch, features) * scale
            load = _dense_load_s(cal, batch, features) * scale
        else:
            compute = _sparse_step_s(cal, batch, features) * scale
            load = cal["sparse_load"]["per_sample_s"] * batch * scale
        model_bytes = 4 * (features + 1)
        ar = cal["allreduce"]
        if algo == "ma":  # "ma1": step, then all-reduce of the weights and of the bias; loading not timed
            comm = ring_allreduce_s(p, 4 * features, ar["alpha_s"], ar["bytes_per_s"]) + ring_allreduce_s(
                p, 4, ar["alpha_s"], ar["bytes_per_s"])
            parts = {"compute_s": steps * compute, "allreduce_s": steps * comm, "load_s": 0.0}
        elif algo == "ga":  # gradient all-reduce every step; the epoch timer covers the loading too
            comm = ring_allreduce_s(p, model_bytes, ar["alpha_s"], ar["bytes_per_s"])
            if data == "yfcc":  # DDP's gradient hooks and bucket copies (measured without communication)
                compute += cal["dense_step"].get("ga_sync_extra_s", 0.0) * scale
            parts = {"compute_s": steps * compute, "allreduce_s": steps * comm, "load_s": steps * load}
        else:  # ADMM: a local epoch (loading timed), then gather + scatter of the model through rank 0
            extra = cal["dense_step"]["admm_extra_s"] if data == "yfcc" else 0.0
            gather = (p - 1) * (ar["alpha_s"] + model_bytes / ar["bytes_per_s"])
            parts = {"compute_s": steps * (compute + extra * scale), "allreduce_s": 2 * gather,
                     "load_s": steps * load}
        parts["ring_allreduce_s"] = parts["allreduce_s"]  # the ring model of the loopback pair
        parts["allreduce_s"] *= factor  # ... as measured at this share of the machine's cores
        parts["epoch_s"] = parts["compute_s"] + parts["allreduce_s"] + parts["load_s"]
        return parts

    clock = clock_hz or system["clock_hz"]
    out = at(clock)
    slow, fast = at(system["clock_band"][0]), at(system["clock_band"][1])
    # The all-reduce within its measured band (allreduce_factor); the steps and the loading up to x2 (measured up to
    # 2x the model with every core busy: gloo's threads share them).
    out["band_s"] = (fast["compute_s"] + fast["load_s"] + factor_lo * fast["ring_allreduce_s"],
                     2 * (slow["compute_s"] + slow["load_s"]) + factor_hi * slow["ring_allreduce_s"])
    out["allreduce_factor"] = factor
    out["steps"] = steps
    return out


def gpu_epoch(cal, rows, batch, features, system=GPU_SYSTEM):
    """Modeled seconds of one epoch of PIM-Opt's GPU baseline (dense data): a three-stage pipeline - the loader
    worker fetching and collating samples, the pinning thread copying the batch into pinned memory, the main thread
    copying it to the device and running the step - whose slowest stage sets the pace."""
    steps = rows // batch
    nbytes = 4 * batch * (features + 1)

    def at(host_clock, pcie, load_factor=1.0):
        scale = cal["clock_hz"] / host_clock if host_clock else 1.0  # None: calibrated on that host
        load = _dense_load_s(cal, batch, features) * scale * load_factor
        pin = nbytes / cal["memcpy_bytes_per_s"] * scale
        device = nbytes / pcie + nbytes / system["hbm_bytes_per_s"] + system["ops_per_step"] * system["op_overhead_s"]
        stage = max(load, pin, device)
        return {"load_s": steps * load, "pin_s": steps * pin, "device_s": steps * device, "epoch_s": steps * stage,
                "bound": ["load", "pin", "device"][[load, pin, device].index(stage)]}

    out = at(system["host_clock_hz"], system["pcie_bytes_per_s"])
    lo = at(system["host_clock_band"][1], system["pcie_band"][1])["epoch_s"]
    # The loader worker ran 1 / 0.74 = 1.35x its model on the H200 machine (calibrated there; docs/baselines.md).
    hi = at(system["host_clock_band"][0], system["pcie_band"][0], LOADER_MEASURED_OVER_MODEL)["epoch_s"]
    out["band_s"] = (lo, hi)
    out["steps"] = steps
    return out


def gpu_resident_epoch(rows, batch, features, system=GPU_SYSTEM, step=None):
    """Modeled seconds of one epoch of the GPU program a user would write: the artifact's step on batches indexed
    from the training set held in device memory (RESIDENT_STEP: a fixed cost per step and HBM passes over the
    batch). Where the set does not fit the device's memory it is streamed in large pinned chunks, overlapped with
    the steps: the epoch is then the longer of the steps and the set's bytes over PCIe."""
    step = step or RESIDENT_STEP
    steps = rows // batch
    set_bytes = 4 * rows * (features + 1)
    batch_bytes = 4 * batch * (features + 1)

    def at(fixed_s, pcie):
        device = steps * (fixed_s + step["hbm_passes"] * batch_bytes / system["hbm_bytes_per_s"])
        if set_bytes <= 0.9 * system["memory_bytes"]:  # room left for the model, the batch and the allocator
            return device, "resident"
        streamed = set_bytes / pcie
        return max(device, streamed), "streamed" if streamed > device else "steps"

    epoch, mode = at(step["fixed_s"], system["pcie_bytes_per_s"])
    lo, _ = at(step["fixed_s"] * step["band"][0], system["pcie_band"][1])
    hi, _ = at(step["fixed_s"] * step["band"][1], system["pcie_band"][0])
    return {"epoch_s": epoch, "band_s": (lo, hi), "mode": mode, "steps": steps, "set_bytes": set_bytes,
            "fits": set_bytes <= 0.9 * system["memory_bytes"]}


def fit_resident_step(measured_s, rows, batch, features, system, passes=RESIDENT_STEP["hbm_passes"]):
    """RESIDENT_STEP's fixed cost from a resident-data epoch measured on `system`: the time per step less the HBM
    passes over the batch."""
    return measured_s / (rows // batch) - passes * 4 * batch * (features + 1) / system["hbm_bytes_per_s"]


def fit_process_scaling(loops, cal, cores):
    """ALLREDUCE_SCALING from the CPU loops timed at several process counts on a machine of `cores` (records
    {processes, algo, batch, rows, measured_s}, as `loops` writes them) and that machine's calibration: for MA-SGD
    and GA-SGD (whose epochs the all-reduce dominates) the all-reduce time the measurement implies (measured epoch
    less the model's steps and loading) over the ring model's. Returns the scaling, every point, and each
    full-machine point predicted from the other algorithm's factor alone (leave one algorithm out)."""
    points = []
    for r in loops:
        if r["algo"] not in ("ma", "ga") or r["processes"] < 2:  # one process: no all-reduce to compare
            continue
        here = dict(CPU_SYSTEM, processes=r["processes"], cores=r["processes"], clock_hz=cal["clock_hz"],
                    clock_band=(cal["clock_hz"], cal["clock_hz"]))  # cores = processes: factor 1, the bare ring
        m = cpu_epoch(cal, "yfcc", r["algo"], r["rows"], r["batch"], 4096, system=here)
        rest = m["compute_s"] + m["load_s"]
        points.append({"processes": r["processes"], "algo": r["algo"], "share": r["processes"] / cores,
                       "measured_s": r["measured_s"], "rest_s": rest, "ring_s": m["ring_allreduce_s"],
                       "ratio": (r["measured_s"] - rest) / m["ring_allreduce_s"]})

    def summary(ratios):
        central = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        return {"factor": round(central, 2), "band": (round(min(ratios), 2), round(max(ratios), 2))}
    half = [p["ratio"] for p in points if p["share"] <= 0.5]
    full = [p["ratio"] for p in points if p["share"] >= 1]
    # Full machine: from the lowest ratio measured at any size to twice the highest (carrying 16 processes to 128).
    # A share with no point (too few process counts on this machine) has no fit (None).
    scaling = {"half_machine": summary(half) if half else None,
               "full_machine": {"factor": summary(full)["factor"],
                                "band": (round(min(half + full), 2), round(2 * max(full), 2))} if full else None}
    held_out = []
    for p in points:
        others = [q["ratio"] for q in points if q["share"] >= 1 and q["algo"] != p["algo"]]
        if p["share"] >= 1 and others:
            predicted = p["rest_s"] + math.exp(sum(map(math.log, others)) / len(others)) * p["ring_s"]
            held_out.append({"processes": p["processes"], "algo": p["algo"], "measured_s": p["measured_s"],
                             "predicted_s": predicted, "error": predicted / p["measured_s"] - 1})
    return {"scaling": scaling, "points": points, "held_out": held_out}


# ------------------------------------------------------------------------------------------------ measurements here
def _best(fn, reps=5):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _clock_hz():
    """This core's clock from a dependent chain of integer adds in C (via pimopt's calibration; $PIMOPT names the
    binary). None where no pimopt binary is at hand: the loops' predictions then need no clock (both sides are
    this machine)."""
    import re
    import subprocess
    binary = os.environ.get("PIMOPT", os.path.join(ROOT, "build", "pimopt"))
    if not os.path.exists(binary):
        return None
    out = subprocess.run([binary, "profile", "--calibrate-host", "--budget", "1"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return float(re.search(r"clock\s+([0-9.e+]+) Hz", out).group(1))


class _RowDataset:
    """Samples stored as rows of one tensor, label first, fetched one by one (the artifact's dense dataset does)."""

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i][1:], self.data[i][:1]


def _dense_step_fn(torch, features, batch, admm=False, sync=False):
    """One optimizer step of the artifact's dense baselines: a Linear model wrapped in DistributedDataParallel (in
    a one-process group here, so that the wrapper's per-step cost is measured without any communication), under
    no_sync for MA and ADMM, synchronizing for GA."""
    import contextlib
    model = torch.nn.Linear(features, 1)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    opt = torch.optim.SGD(ddp.parameters(), lr=2 ** -6, weight_decay=0 if admm else 2 ** -12)
    x = torch.rand(batch, features)
    y = (torch.rand(batch, 1) > 0.5).float()
    u = torch.zeros(1, features)

    def step():
        with contextlib.nullcontext() if sync else ddp.no_sync():
            loss = loss_fn(ddp(x), y)
            if admm:
                loss = loss + 2 ** -12 * torch.norm(model.weight + u, p=1)
            opt.zero_grad()
            loss.backward()
        opt.step()
    return step


def _sparse_step_fn(torch, features, batch):
    """The artifact's sparse binary model: Python loops over the batch for the scores and the gradient scatter,
    then dense whole-model updates (its cost is per sample plus per model element)."""
    weights = torch.zeros(features)
    grad = torch.zeros(features)
    idx = torch.randint(0, features, (batch, 39))
    y = (torch.rand(batch) > 0.97).float()

    def step():
        nonlocal weights
        scores = torch.zeros(batch)
        for i, x in enumerate(idx):
            scores[i] = torch.sum(torch.index_select(weights, 0, x))
        g = torch.sigmoid(scores) - y
        g = torch.where(y == 1.0, 15.0 * g, 0.5 * g)
        grad.zero_()
        for i, x in enumerate(idx):
            grad[x] += g[i]
        grad.div_(batch)
        grad.mul_(-2 ** -1)
        weights = weights + grad - 2 ** -1 * 2 ** -12 * weights
    return step


def calibrate(args):
    cal = _calibration()
    out = args.out or DEFAULT_CALIBRATION
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with bu.atomic_open(out) as f:
        json.dump(cal, f, indent=1)
    print(json.dumps(cal, indent=1))
    print(f"wrote {out}")


def _calibration():
    """The pieces of the cost models, measured on this machine (one thread)."""
    import torch
    torch.set_num_threads(1)
    # Without a clock (no pimopt binary) the EPYC's stands in: predictions for this machine then scale by 1.
    cal = {"clock_hz": _clock_hz() or CPU_SYSTEM["clock_hz"], "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d")}
    import torch.distributed as dist
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", "29516"
    dist.init_process_group("gloo", rank=0, world_size=1)
    n = 4096
    # Dense step: fitted over the batch sizes the baselines use (8 .. 256 per process).
    pts = [(b, _best(lambda s=_dense_step_fn(torch, n, b): [s() for _ in range(20)]) / 20) for b in (8, 32, 256)]
    slope = (pts[-1][1] - pts[0][1]) / ((pts[-1][0] - pts[0][0]) * n)
    admm = _best(lambda s=_dense_step_fn(torch, n, 8, True): [s() for _ in range(20)]) / 20 - pts[0][1]
    sync = _best(lambda s=_dense_step_fn(torch, n, 32, sync=True): [s() for _ in range(20)]) / 20 - pts[1][1]
    dist.destroy_process_group()
    cal["dense_step"] = {"base_s": pts[0][1] - slope * 8 * n, "per_element_s": slope, "admm_extra_s": max(admm, 0),
                         "ga_sync_extra_s": max(sync, 0), "points": pts}
    # Dense loading: a DataLoader fetching sample by sample and collating (no workers: the CPU baseline).
    data = torch.rand(4096, n + 1)
    loads = []
    for b in (8, 256):
        loader = torch.utils.data.DataLoader(_RowDataset(data), batch_size=b)

        def run(loader=loader):
            for i, _ in enumerate(loader):
                if i == 15:
                    break
        loads.append((b, _best(run, 3) / 16))
    per_sample = (loads[1][1] - loads[0][1]) / (loads[1][0] - loads[0][0])
    cal["dense_load"] = {"base_s": loads[0][1] - per_sample * loads[0][0], "per_sample_s": per_sample,
                         "per_element_s": 0.0, "points": loads}
    # Sparse step: per sample and per model element, from two batch sizes and two model sizes.
    s1 = _best(lambda s=_sparse_step_fn(torch, 1 << 20, 256): s(), 3)
    s2 = _best(lambda s=_sparse_step_fn(torch, 1 << 20, 2048): s(), 3)
    s3 = _best(lambda s=_sparse_step_fn(torch, 1 << 16, 2048): s(), 3)
    per_sample_sparse = (s2 - s1) / (2048 - 256)
    per_elem = (s2 - s3) / ((1 << 20) - (1 << 16))
    cal["sparse_step"] = {"base_s": max(s2 - per_sample_sparse * 2048 - per_elem * (1 << 20), 0),
                          "per_sample_s": per_sample_sparse, "per_model_element_s": per_elem}
    feats = torch.randint(0, 1 << 20, (4096, 39), dtype=torch.int32)
    labels = torch.rand(4096)
    sparse_ds = torch.utils.data.TensorDataset(feats, labels)
    loader = torch.utils.data.DataLoader(sparse_ds, batch_size=512)
    cal["sparse_load"] = {"per_sample_s": _best(lambda: [None for _ in loader], 3) / 4096}
    big = torch.rand(16 << 20)
    cal["memcpy_bytes_per_s"] = big.numel() * 4 / _best(lambda: big.clone(), 5)
    cal["allreduce"] = _measure_allreduce()
    return cal


def _allreduce_worker(rank, world, port, sizes, q):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    res = {}
    for nbytes in sizes:
        t = torch.zeros(nbytes // 4)
        for _ in range(5):
            dist.all_reduce(t)
        reps = 200 if nbytes < 1 << 20 else 20
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(t)
        res[nbytes] = (time.perf_counter() - t0) / reps
    if rank == 0:
        q.put(res)
    dist.destroy_process_group()


def _measure_allreduce():
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    sizes = [4, 4096, 16388, 65536, 262144, 1 << 20, 4 << 20]
    procs = [ctx.Process(target=_allreduce_worker, args=(r, 2, 29517, sizes, q)) for r in range(2)]
    for p in procs:
        p.start()
    res = q.get()
    for p in procs:
        p.join()
    # A 2-process ring: 2 steps of nbytes / 2, t = 2 (alpha + nbytes / 2 / B). gloo over loopback is not one line:
    # 4 B messages take ~80 us per step, 4-64 KB ones ~250 us (a different code path), so alpha is the geometric
    # mean of the per-step times up to 64 KB (the chunks a 128-process ring sends are 128 B to 31 KB) and the
    # bandwidth the slope between the two largest sizes. fit_over_measured shows how far this is from each point.
    small = [res[n] / 2 for n in sizes if n <= 65536]
    alpha = math.exp(sum(math.log(t) for t in small) / len(small))
    slope = (res[sizes[-1]] - res[sizes[-2]]) / (sizes[-1] - sizes[-2])  # seconds per byte for the pair
    fit = {str(n): 2 * (alpha + n / 2 * slope) / res[n] for n in sizes}
    return {"alpha_s": alpha, "bytes_per_s": 1 / slope, "measured_s": {str(k): v for k, v in res.items()},
            "fit_over_measured": fit}


def _validate_worker(rank, world, port, rows_per_process, q):
    """The CPU baseline's loops at `world` processes on small data, timed as the artifact times them."""
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    n, rows = 4096, rows_per_process * world
    data = torch.rand(rows, n + 1)
    data[:, 0] = (data[:, 0] > 0.5).float()
    results = {}
    for algo, batch in (("ma", 8), ("ga", 32), ("admm", 8)):
        model = torch.nn.Linear(n, 1)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=2 ** -6, weight_decay=0 if algo == "admm" else 2 ** -12)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        sampler = torch.utils.data.distributed.DistributedSampler(_RowDataset(data), world, rank, shuffle=False)
        loader = torch.utils.data.DataLoader(_RowDataset(data), batch_size=batch, sampler=sampler)
        u = torch.zeros(1, n)
        dist.barrier()
        t0 = time.perf_counter()
        timed = 0.0
        for x, y in loader:
            s = time.perf_counter()
            if algo == "ga":
                loss = loss_fn(ddp(x), y)
            else:
                with ddp.no_sync():
                    loss = loss_fn(ddp(x), y)
                    if algo == "admm":
                        loss = loss + 2 ** -12 * torch.norm(model.weight + u, p=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if algo == "ma":
                with torch.no_grad():
                    dist.all_reduce(model.weight.data)
                    dist.all_reduce(model.bias.data)
                    model.weight.data /= world
                    model.bias.data /= world
            timed += time.perf_counter() - s
        if algo == "admm":
            s = time.perf_counter()
            gathered = [torch.zeros_like(model.weight.data) for _ in range(world)] if rank == 0 else None
            dist.gather(model.weight.data, gather_list=gathered, dst=0)
            dist.scatter(u, scatter_list=[u.clone() for _ in range(world)] if rank == 0 else None, src=0)
            timed = time.perf_counter() - t0
        elif algo == "ga":
            timed = time.perf_counter() - t0
        results[algo] = {"batch": batch, "measured_s": timed}
    if rank == 0:
        q.put({"rows": rows, "features": n, "results": results})
    dist.destroy_process_group()


def _run_cpu_loops(processes, rows_per_process, port=29518):
    """The three CPU programs' loops at `processes` gloo processes (one thread each): {rows, features, results}."""
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_validate_worker, args=(r, processes, port, rows_per_process, q))
             for r in range(processes)]
    for p in procs:
        p.start()
    res = q.get()
    for p in procs:
        p.join()
    return res


def _loop_records(cal, processes, res, cores):
    """Each loop measured beside the model's prediction for this machine (its calibration, `cores` cores)."""
    here = dict(CPU_SYSTEM, processes=processes, cores=cores, clock_hz=cal["clock_hz"],
                clock_band=(cal["clock_hz"], cal["clock_hz"]))
    records = []
    for algo, r in res["results"].items():
        pred = cpu_epoch(cal, "yfcc", algo, res["rows"], r["batch"], res["features"], system=here)
        records.append({"processes": processes, "algo": algo, "batch": r["batch"], "rows": res["rows"],
                        "measured_s": r["measured_s"], "modeled_s": pred["epoch_s"],
                        "ratio": pred["epoch_s"] / r["measured_s"]})
        print(f"cpu baseline {algo:5s} {processes} processes x {res['rows'] // processes} rows, batch "
              f"{r['batch']:3d}: measured {r['measured_s']:.3f} s, modeled {pred['epoch_s']:.3f} s, "
              f"modeled/measured {records[-1]['ratio']:.2f}", flush=True)
    return records


def validate(args):
    with open(args.calibration) as f:
        cal = json.load(f)
    rows = []
    for processes in args.processes:
        res = _run_cpu_loops(processes, args.rows_per_process)
        rows += _loop_records(cal, processes, res, os.cpu_count())
    if args.out:
        with bu.atomic_open(args.out) as f:
            json.dump(rows, f, indent=1)


def _gpu_loops(rows, batch, features, device, epochs=3):
    """PIM-Opt's GPU program (a DataLoader with one worker and pinned memory streaming every batch from host
    memory) and the same step on batches indexed from the training set in device memory; the best of `epochs`
    epochs of each, timed with CUDA events on a GPU."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    data = torch.rand(rows, features + 1)
    data[:, 0] = (data[:, 0] > 0.5).float()
    model = torch.nn.Linear(features, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=2 ** -6, weight_decay=2 ** -12)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    cuda = device == "cuda"

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def timed(epoch):
        best = float("inf")
        for _ in range(epochs):
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                epoch()
                end.record()
                torch.cuda.synchronize()
                best = min(best, start.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                epoch()
                best = min(best, time.perf_counter() - t0)
        return best
    loader = torch.utils.data.DataLoader(_RowDataset(data), batch_size=batch, num_workers=1, pin_memory=cuda)

    def streamed():
        for x, y in loader:
            step(x.to(device, non_blocking=True), y.to(device, non_blocking=True))
    on_device = data.to(device)

    def resident():
        for i in range(rows // batch):
            rows_i = torch.arange(i * batch, (i + 1) * batch, device=device)
            b = on_device.index_select(0, rows_i)
            step(b[:, 1:], b[:, :1])
    out = {"rows": rows, "batch": batch, "device": device, "measured_s": timed(streamed), "resident_s": timed(resident)}
    if cuda:
        pinned = torch.empty(64 << 20, dtype=torch.float32).pin_memory()
        out["h2d_bytes_per_s"] = pinned.numel() * 4 / _best(lambda: (pinned.to(device, non_blocking=True),
                                                                       torch.cuda.synchronize()), 5)
    return out


def model_gpu_loop(cal, loop, gpu):
    """Adds to a measured GPU loop ({rows, batch, measured_s, resident_s, h2d_bytes_per_s}) the models of both GPU
    programs for that machine: its calibration `cal` (no clock scaling), its measured host-to-device rate and the HBM
    of profile `gpu`; and the resident step's fixed cost fitted on the measurement."""
    here = dict(GPU_SYSTEMS[gpu], pcie_bytes_per_s=loop["h2d_bytes_per_s"], pcie_band=(loop["h2d_bytes_per_s"],) * 2,
                host_clock_hz=None, host_clock_band=(None, None))
    rows, batch = loop["rows"], loop["batch"]
    modeled = gpu_epoch(cal, rows, batch, 4096, here)
    loop["modeled_here_s"], loop["modeled_here_bound"] = modeled["epoch_s"], modeled["bound"]
    loop["modeled_parts"] = {k: modeled[k] for k in ("load_s", "pin_s", "device_s")}
    loop["resident_modeled_s"] = gpu_resident_epoch(rows, batch, 4096, here)["epoch_s"]
    loop["resident_fixed_step_fit_s"] = fit_resident_step(loop["resident_s"], rows, batch, 4096, here)
    return loop


def loops(args):
    """Everything the baselines' validation needs from a machine with many cores and (optionally) a GPU, in one
    run: the calibration, the CPU loops at each process count, the all-reduce fit, and the GPU loops. Writes the
    JSON docs/baselines.md reads its measured points from."""
    import torch
    cal = _calibration()
    cpu = []
    for processes in args.processes:
        cpu += _loop_records(cal, processes, _run_cpu_loops(processes, args.rows_per_process), os.cpu_count())
    report = {"machine": f"{os.cpu_count()} CPUs" + (f", {torch.cuda.get_device_name(0)}"
                                                     if torch.cuda.is_available() else ""),
              "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__, "cpu_loops": cpu,
              "calibration_on_that_machine": cal, "allreduce_pair_on_that_machine": cal["allreduce"],
              "process_scaling_fit": fit_process_scaling(cpu, cal, os.cpu_count())}
    device = args.gpu_device or ("cuda" if torch.cuda.is_available() else None)
    if device:
        loop = _gpu_loops(args.gpu_rows, 4096, 4096, device)
        report["gpu_loop"] = loop
        print(f"gpu: streamed by the loader {loop['measured_s']:.3f} s, resident {loop['resident_s']:.4f} s per "
              f"epoch of {args.gpu_rows} rows", flush=True)
        if "h2d_bytes_per_s" in loop:  # a GPU: the models beside the measurements, for this machine
            model_gpu_loop(cal, loop, args.gpu)
            print(f"gpu model ({args.gpu}'s HBM): the artifact's program {loop['modeled_here_s']:.3f} s "
                  f"({loop['modeled_here_bound']}-bound), resident {loop['resident_modeled_s']:.4f} s", flush=True)
    else:
        print("no GPU: the GPU loops were not run", flush=True)
    with bu.atomic_open(args.out) as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.out}")


def predict(args):
    with open(args.calibration) as f:
        cal = json.load(f)
    features = 4096 if args.data == "yfcc" else 1000000
    if args.system == "cpu":
        r = cpu_epoch(cal, args.data, args.algo, args.rows, args.batch, features)
    elif args.system == "gpu":
        r = gpu_epoch(cal, args.rows, args.batch, features, GPU_SYSTEMS[args.gpu])
    else:
        r = gpu_resident_epoch(args.rows, args.batch, features, GPU_SYSTEMS[args.gpu])
    print(json.dumps(r, indent=1))


def build_parser():
    """The command line; every value is checked as it is parsed (bench_util's types: exit 2 naming the flag)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate")
    c.add_argument("--out", type=bu.output_file, help=f"default {os.path.relpath(DEFAULT_CALIBRATION, ROOT)}")
    counts = bu.IntList(1, distinct=True)  # process counts >= 1, each once
    v = sub.add_parser("validate")
    v.add_argument("--calibration", type=bu.input_file, default=DEFAULT_CALIBRATION)
    v.add_argument("--processes", type=counts, default=[2], help="comma list of process counts (default 2)")
    v.add_argument("--rows-per-process", type=bu.int_range(32), default=4096,
                   help="at least 32: one step of the largest batch (GA-SGD's 32 per process)")
    v.add_argument("--out", type=bu.output_file)
    lp = sub.add_parser("loops")
    lp.add_argument("--processes", type=counts, default=[2, 8, 16])
    lp.add_argument("--rows-per-process", type=bu.int_range(32), default=2048,
                   help="at least 32: one step of the largest batch (GA-SGD's 32 per process)")
    lp.add_argument("--gpu-rows", type=bu.int_range(4096), default=262144,
                    help="rows of the GPU loops (at least one batch of 4,096)")
    lp.add_argument("--gpu-device", type=bu.text_arg(r"cpu|cuda(:[0-9]+)?", "cpu, cuda or cuda:N"),
                    help="default: cuda when there is a GPU, else none (cpu: a smoke test)")
    lp.add_argument("--gpu", choices=sorted(GPU_SYSTEMS), default="h200",
                    help="the GPU profile whose HBM bandwidth the models use (the host rates are measured)")
    lp.add_argument("--out", type=bu.output_file, default="baseline-loops.json")
    p = sub.add_parser("predict")
    p.add_argument("--calibration", type=bu.input_file, default=DEFAULT_CALIBRATION)
    p.add_argument("--system", choices=["cpu", "gpu", "gpu-resident"], required=True)
    p.add_argument("--gpu", choices=sorted(GPU_SYSTEMS), default="a100")
    p.add_argument("--data", choices=["yfcc", "criteo"], required=True)
    p.add_argument("--algo", choices=["ma", "ga", "admm"], default="ma")
    p.add_argument("--rows", type=bu.positive_int, required=True,
                   help="training rows in all (cpu: at least one batch per process on 128 processes)")
    p.add_argument("--batch", type=bu.positive_int, required=True, help="rows per step (cpu: per process)")
    ap.subcommands = sub.choices  # parse_args reports a relation of two flags in that subcommand's usage
    return ap


def parse_args(argv=None):
    """build_parser's arguments, and what relates two of them: predict's --rows must give an epoch one step at
    least (fewer rows would model an epoch of 0 s)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.cmd == "predict":
        per_step = args.batch * (CPU_SYSTEM["processes"] if args.system == "cpu" else 1)
        if args.rows < per_step:
            where = f" on {CPU_SYSTEM['processes']} processes" if args.system == "cpu" else ""
            ap.subcommands["predict"].error(f"argument --rows: must be at least one step of --batch {args.batch}{where} "
                                            f"({per_step} rows) for an epoch to model, got {args.rows}")
    return args


def main():
    args = parse_args()
    {"calibrate": calibrate, "validate": validate, "predict": predict, "loops": loops}[args.cmd](args)


if __name__ == "__main__":
    main()
