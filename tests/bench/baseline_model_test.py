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
        # 128 processes on 128 cores: the ring's time times the full-machine factor gloo showed.
        full = pb.ALLREDUCE_SCALING["full_machine"]["factor"]
        ar = full * (pb.ring_allreduce_s(128, 4 * n, 100e-6, 1e9) + pb.ring_allreduce_s(128, 4, 100e-6, 1e9))
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
        full = pb.ALLREDUCE_SCALING["full_machine"]["factor"]
        self.assertAlmostEqual(r["allreduce_s"], 4 * full * pb.ring_allreduce_s(128, 4 * (n + 1), 100e-6, 1e9))

    def test_admm_synchronizes_once_per_epoch(self):
        n = 4096
        small = pb.cpu_epoch(CAL, "yfcc", "admm", 128 * 8 * 10, 8, n)
        large = pb.cpu_epoch(CAL, "yfcc", "admm", 128 * 8 * 100, 8, n)
        self.assertAlmostEqual(small["allreduce_s"], large["allreduce_s"])
        full = pb.ALLREDUCE_SCALING["full_machine"]["factor"]
        self.assertAlmostEqual(small["allreduce_s"], full * 2 * 127 * (100e-6 + 4 * (n + 1) / 1e9))
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


# The baselines' loops timed on a 16-core machine with an H200 (2026-12-04; docs/baselines.md "Process scaling"
# tabulates them): the CPU loops at 2, 8 and 16 gloo processes of 2,048 rows each, that machine's calibration (its
# clock was not measured: equal on both sides) and the resident-data GPU epochs.
H200_CAL = {
    "clock_hz": 2.6e9,
    "dense_step": {"base_s": 0.00041441124354850125, "per_element_s": 5.883729996217499e-10,
                   "admm_extra_s": 0.00012405014999998802, "ga_sync_extra_s": 0.0002413606999997598},
    "dense_load": {"base_s": -1.604443951632657e-05, "per_sample_s": 2.1818172127016555e-05, "per_element_s": 0.0},
    "memcpy_bytes_per_s": 1611646394.4247053,
    "allreduce": {"alpha_s": 0.00010579481499933282, "bytes_per_s": 2332165049.418203},
}
H200_LOOPS = [
    {"processes": p, "algo": a, "batch": b, "rows": 2048 * p, "measured_s": m}
    for p, a, b, m in [(2, "ma", 8, 0.29889172400000064), (2, "ga", 32, 0.10399267200000395),
                       (2, "admm", 8, 0.22214657800000026), (8, "ma", 8, 0.7521947729999994),
                       (8, "ga", 32, 0.18157638299999235), (8, "admm", 8, 0.21166222100001164),
                       (16, "ma", 8, 2.8534863580001257), (16, "ga", 32, 0.7209999380000056),
                       (16, "admm", 8, 0.25979909000000134)]]
H200_RESIDENT = {262144: 0.05184684753417969, 6815744: (1.333, 1.468)}


class ProcessScaling(unittest.TestCase):
    def test_the_scaling_in_use_is_the_fit_of_the_measured_loops(self):
        fit = pb.fit_process_scaling(H200_LOOPS, H200_CAL, cores=16)
        self.assertEqual(fit["scaling"]["half_machine"]["factor"], pb.ALLREDUCE_SCALING["half_machine"]["factor"])
        self.assertEqual(fit["scaling"]["full_machine"]["factor"], pb.ALLREDUCE_SCALING["full_machine"]["factor"])
        self.assertEqual(tuple(fit["scaling"]["full_machine"]["band"]),
                         tuple(pb.ALLREDUCE_SCALING["full_machine"]["band"]))
        self.assertEqual(len(fit["points"]), 6)  # MA-SGD and GA-SGD at 2, 8, 16 processes
        # Each full-machine point predicted from the other algorithm's factor: within the band's reach.
        for h in fit["held_out"]:
            lo, hi = pb.ALLREDUCE_SCALING["full_machine"]["band"]
            self.assertLess(abs(h["error"]), 1.0, h)

    def test_the_factor_is_one_shape_across_the_machine(self):
        half = pb.allreduce_factor(8, 16)
        full = pb.allreduce_factor(16, 16)
        self.assertEqual(half, pb.allreduce_factor(2, 16))
        self.assertAlmostEqual(full[0], pb.ALLREDUCE_SCALING["full_machine"]["factor"])
        between = pb.allreduce_factor(12, 16)
        self.assertTrue(half[0] < between[0] < full[0])
        self.assertEqual(pb.allreduce_factor(128, 128), full)
        for central, lo, hi in (half, between, full):
            self.assertLessEqual(lo, central)
            self.assertLessEqual(central, hi)

    def test_the_model_with_the_fit_predicts_the_full_machine_loops_within_its_band(self):
        for r in H200_LOOPS:
            here = dict(pb.CPU_SYSTEM, processes=r["processes"], cores=16, clock_hz=2.6e9, clock_band=(2.6e9, 2.6e9))
            m = pb.cpu_epoch(H200_CAL, "yfcc", r["algo"], r["rows"], r["batch"], 4096, system=here)
            lo, hi = m["band_s"]
            self.assertLessEqual(lo, r["measured_s"], r)
            self.assertGreaterEqual(hi, r["measured_s"], r)


class GpuResident(unittest.TestCase):
    def test_the_fixed_step_is_fitted_on_the_small_run_and_predicts_the_paper_scale_run(self):
        h200 = pb.GPU_SYSTEMS["h200"]
        fixed = pb.fit_resident_step(H200_RESIDENT[262144], 262144, 4096, 4096, h200)
        self.assertAlmostEqual(fixed, pb.RESIDENT_STEP["fixed_s"], delta=1e-6)
        r = pb.gpu_resident_epoch(6815744, 4096, 4096, h200)
        self.assertEqual(r["mode"], "resident")  # 111.7 GB in the H200's 141 GB
        lo, hi = H200_RESIDENT[6815744]
        self.assertLess(abs(r["epoch_s"] / lo - 1), 0.05)  # out of sample: 1,664 steps from a fit on 64
        self.assertLessEqual(r["band_s"][0], lo)
        self.assertGreaterEqual(r["band_s"][1], hi)

    def test_a_set_beyond_the_devices_memory_streams_over_pcie(self):
        a100 = pb.GPU_SYSTEMS["a100"]
        r = pb.gpu_resident_epoch(6815744, 4096, 4096, a100)
        self.assertFalse(r["fits"])
        self.assertEqual(r["mode"], "streamed")
        self.assertAlmostEqual(r["epoch_s"], 4 * 6815744 * 4097 / 24e9)
        small = pb.gpu_resident_epoch(262144, 4096, 4096, a100)
        self.assertTrue(small["fits"])
        per_step = pb.RESIDENT_STEP["fixed_s"] + 4 * 4 * 4096 * 4097 / 1.935e12
        self.assertAlmostEqual(small["epoch_s"], 64 * per_step)

    def test_the_artifacts_program_on_the_h200_machine_is_loader_bound_and_inside_the_band(self):
        cal = dict(H200_CAL, clock_hz=2.6e9)
        r = pb.gpu_epoch(cal, 262144, 4096, 4096, pb.GPU_SYSTEMS["h200"])
        self.assertEqual(r["bound"], "load")
        self.assertAlmostEqual(r["epoch_s"], 5.7184760699355826, places=6)  # the model recorded with the run
        self.assertLess(r["device_s"], 0.1)
        self.assertLessEqual(r["band_s"][0], 7.69879541015625 + 1e-9)
        self.assertGreaterEqual(r["band_s"][1], 7.69879541015625 - 1e-9)  # the measured epoch

    def test_a_measured_gpu_loop_gets_the_models_of_that_machine(self):
        # The loop as the H200 run recorded it: the models beside it are the ones docs/baselines.md shows.
        loop = {"rows": 262144, "batch": 4096, "measured_s": 7.69879541015625, "resident_s": H200_RESIDENT[262144],
                "h2d_bytes_per_s": 55167110014.093346}
        pb.model_gpu_loop(dict(H200_CAL, clock_hz=2.6e9), loop, "h200")
        self.assertAlmostEqual(loop["modeled_here_s"], 5.7184760699355826, places=6)
        self.assertEqual(loop["modeled_here_bound"], "load")
        self.assertAlmostEqual(loop["resident_fixed_step_fit_s"], pb.RESIDENT_STEP["fixed_s"], delta=1e-6)
        self.assertAlmostEqual(loop["resident_modeled_s"], H200_RESIDENT[262144], delta=1e-4)

    def test_resident_beats_the_loader_bound_artifact_program(self):
        art = pb.gpu_epoch(CAL, 262144, 4096, 4096)
        self.assertLess(pb.gpu_resident_epoch(262144, 4096, 4096)["epoch_s"] * 10, art["epoch_s"])


if __name__ == "__main__":
    unittest.main()
