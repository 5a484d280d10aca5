#!/usr/bin/env python3
"""Checks the cost models of PIM-Opt's CPU and GPU baselines (bench/pim_opt_baselines.py) without torch:
their formulas against hand-computed values, their monotonicity and the structure of each algorithm's epoch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import pim_opt_baselines as pb  # noqa: E402

# A calibration with round numbers, so that every expected value below can be computed by hand.
CAL = {
    "clock_hz": 2.6e9,  # equal to the modeled EPYC's: the scale is 1
    "dense_step": {"base_s": 100e-6, "per_element_s": 1e-9, "admm_extra_s": 50e-6},
    "dense_load": {"base_s": 0.0, "per_sample_s": 10e-6, "per_element_s": 0.0},
    "sparse_step": {"base_s": 0.0, "per_sample_s": 10e-6, "per_model_element_s": 4e-9},
    "sparse_load": {"per_sample_s": 2e-6},
    "memcpy_bytes_per_s": 4e9,
    "allreduce": {"alpha_s": 100e-6, "bytes_per_s": 1e9},
}


class RingAllreduce(unittest.TestCase):
    def test_two_processes_send_two_halves(self):
        self.assertAlmostEqual(pb.ring_allreduce_s(2, 2e6, 1e-4, 1e9), 2 * (1e-4 + 1e-3))

    def test_one_process_is_free(self):
        self.assertEqual(pb.ring_allreduce_s(1, 1e6, 1e-4, 1e9), 0.0)

    def test_latency_grows_with_processes_bandwidth_term_saturates(self):
        t8 = pb.ring_allreduce_s(8, 8e6, 0, 1e9)
        t128 = pb.ring_allreduce_s(128, 8e6, 0, 1e9)
        self.assertAlmostEqual(t8, 2 * 7 * 1e-3)
        self.assertLess(t128, 2 * 8e6 / 1e9 + 1e-12)
        self.assertGreater(pb.ring_allreduce_s(128, 4, 1e-4, 1e9), pb.ring_allreduce_s(8, 4, 1e-4, 1e9))


class CpuEpoch(unittest.TestCase):
    def test_ma_dense_by_hand(self):
        rows, batch, n = 128 * 8 * 10, 8, 4096  # 10 steps per process
        r = pb.cpu_epoch(CAL, "yfcc", "ma", rows, batch, n)
        self.assertEqual(r["steps"], 10)
        step = 100e-6 + 1e-9 * batch * n
        ar = pb.ring_allreduce_s(128, 4 * n, 100e-6, 1e9) + pb.ring_allreduce_s(128, 4, 100e-6, 1e9)
        self.assertAlmostEqual(r["compute_s"], 10 * step)
        self.assertAlmostEqual(r["allreduce_s"], 10 * ar)
        self.assertEqual(r["load_s"], 0.0)  # the artifact's MA timer starts after the batch is loaded
        self.assertAlmostEqual(r["epoch_s"], 10 * (step + ar))
        lo, hi = r["band_s"]
        self.assertLess(lo, r["epoch_s"])
        self.assertGreater(hi, r["epoch_s"])

    def test_ga_times_the_loading_and_one_allreduce_of_the_model(self):
        rows, batch, n = 128 * 32 * 4, 32, 4096
        r = pb.cpu_epoch(CAL, "yfcc", "ga", rows, batch, n)
        self.assertAlmostEqual(r["load_s"], 4 * 32 * 10e-6)
        self.assertAlmostEqual(r["allreduce_s"], 4 * pb.ring_allreduce_s(128, 4 * (n + 1), 100e-6, 1e9))

    def test_admm_synchronizes_once_per_epoch(self):
        n = 4096
        small = pb.cpu_epoch(CAL, "yfcc", "admm", 128 * 8 * 10, 8, n)
        large = pb.cpu_epoch(CAL, "yfcc", "admm", 128 * 8 * 100, 8, n)
        self.assertAlmostEqual(small["allreduce_s"], large["allreduce_s"])
        self.assertAlmostEqual(small["allreduce_s"], 2 * 127 * (100e-6 + 4 * (n + 1) / 1e9))
        self.assertAlmostEqual(large["compute_s"], 100 * (100e-6 + 1e-9 * 8 * n + 50e-6))

    def test_sparse_step_pays_for_the_whole_model(self):
        n = 1_000_000
        r = pb.cpu_epoch(CAL, "criteo", "ma", 128 * 64, 64, n)
        self.assertAlmostEqual(r["compute_s"], 64 * 10e-6 + 4e-9 * n)

    def test_a_faster_clock_shortens_compute_not_communication(self):
        slow = pb.cpu_epoch(CAL, "yfcc", "ma", 128 * 8 * 10, 8, 4096)
        fast = pb.cpu_epoch(CAL, "yfcc", "ma", 128 * 8 * 10, 8, 4096, clock_hz=5.2e9)
        self.assertAlmostEqual(fast["compute_s"], slow["compute_s"] / 2)
        self.assertAlmostEqual(fast["allreduce_s"], slow["allreduce_s"])

    def test_larger_batches_mean_fewer_synchronizations(self):
        times = [pb.cpu_epoch(CAL, "yfcc", "ma", 1 << 20, b, 4096)["allreduce_s"] for b in (8, 16, 32, 64)]
        self.assertEqual(times, sorted(times, reverse=True))


class GpuEpoch(unittest.TestCase):
    def test_pipeline_is_paced_by_its_slowest_stage(self):
        rows, batch, n = 4096 * 10, 4096, 4096
        r = pb.gpu_epoch(CAL, rows, batch, n)
        scale = CAL["clock_hz"] / pb.GPU_SYSTEM["host_clock_hz"]
        load = batch * 10e-6 * scale
        nbytes = 4 * batch * (n + 1)
        pin = nbytes / 4e9 * scale
        device = nbytes / 24e9 + nbytes / 1.935e12 + 14 * 10e-6
        self.assertEqual(r["steps"], 10)
        self.assertAlmostEqual(r["epoch_s"], 10 * max(load, pin, device))
        self.assertEqual(r["bound"], "load")
        lo, hi = r["band_s"]
        self.assertLessEqual(lo, r["epoch_s"])
        self.assertGreaterEqual(hi, r["epoch_s"])

    def test_device_bound_when_the_host_is_fast(self):
        cal = dict(CAL, dense_load={"base_s": 0.0, "per_sample_s": 1e-12, "per_element_s": 0.0},
                   memcpy_bytes_per_s=1e15)
        self.assertEqual(pb.gpu_epoch(cal, 4096 * 4, 4096, 4096)["bound"], "device")


if __name__ == "__main__":
    unittest.main()
