// The timing model against PrIM kernels timed on UPMEM hardware (hw_validation.h): the hardware file is read with
// errors that name file:line; leave one benchmark out, every benchmark is predicted from a fit on the others within
// loose bounds of the README's table, and the profile's fitted constants and error bars are the ones this
// validation gives. The file lives beside the checkout ($PIMOPT_HW_DATA or <source>/../shared/data); without it
// the hardware tests are skipped with a message saying where it was looked for.
#include "pimopt/pim/hw_validation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "pimopt/core/error.h"

namespace pimopt::pim::validation {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kHeader =
    "benchmark,num_dpus,data_prep_param,hw_kernel_ms,hw_cpu_to_dpu_ms,hw_dpu_to_cpu_ms,hw_dpu_to_dpu_ms,"
    "upimulator_sim_kernel_ms\n";

std::string ErrorOf(const std::string& path) {
  try {
    ReadHwData(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HwData, IsReadByItsHeaderInAnyColumnOrder) {
  const std::string path = WriteTemp("pimopt_hw_ok.csv",
                                     "num_dpus,benchmark,data_prep_param,hw_kernel_ms,hw_cpu_to_dpu_ms,"
                                     "hw_dpu_to_cpu_ms,hw_dpu_to_dpu_ms,upimulator_sim_kernel_ms\n"
                                     "4,VA,1048576,1.5,2,3,0,1.2\n");
  const std::vector<HwRow> rows = ReadHwData(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].benchmark, "VA");
  EXPECT_EQ(rows[0].dpus, 4u);
  EXPECT_EQ(rows[0].param, 1048576u);
  EXPECT_DOUBLE_EQ(rows[0].kernel_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(rows[0].simulator_kernel_s, 1.2e-3);
  EXPECT_EQ(rows[0].line, 2);
}

// What Excel or a CSV library writes: a UTF-8 byte-order mark, quoted fields (a comma and a doubled quote inside),
// CRLF line ends.
TEST(HwData, ReadsWhatSpreadsheetsAndCsvLibrariesWrite) {
  const std::string path = WriteTemp("pimopt_hw_excel.csv",
                                     "\xEF\xBB\xBF\"benchmark\",\"num_dpus\",\"data_prep_param\",\"hw_kernel_ms\","
                                     "\"hw_cpu_to_dpu_ms\",\"hw_dpu_to_cpu_ms\",\"hw_dpu_to_dpu_ms\","
                                     "\"upimulator_sim_kernel_ms\",\"note\"\r\n"
                                     "\"VA\",4,1048576,\"1.5\",2,3,0,1.2,\"run 1, \"\"warm\"\"\"\r\n");
  const std::vector<HwRow> rows = ReadHwData(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].benchmark, "VA");
  EXPECT_EQ(rows[0].dpus, 4u);
  EXPECT_DOUBLE_EQ(rows[0].kernel_s, 1.5e-3);
  EXPECT_NE(ErrorOf(WriteTemp("pimopt_hw_open_quote.csv", std::string(kHeader) + "\"VA,1,2,3,4,5,6,7\n"))
                .find("pimopt_hw_open_quote.csv:2: a quoted field is not closed"),
            std::string::npos);
}

TEST(HwData, ABenchmarkListedTwiceIsRefusedNamingTheFlag) {
  const std::string path = WriteTemp("pimopt_hw_twice.csv", std::string(kHeader) + "VA,1,1024,1,1,1,0,1\n");
  RunOptions options;
  options.benchmarks = {"VA", "RED", "VA"};
  try {
    RunRows(ReadHwData(path), HardwareProfile{}, options);
    ADD_FAILURE() << "a list with VA twice was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--benchmarks: 'VA' is listed twice"), std::string::npos) << e.what();
  }
}

// Rows skipped on the way (here a size beyond the DPU's MRAM) are named in the error that their absence causes.
TEST(HwData, TooFewBenchmarksSaysWhichRowsWereSkippedAndWhy) {
  const std::string path = WriteTemp("pimopt_hw_skipped.csv", std::string(kHeader) +
                                                                   "VA,1,1024,0.1,0.1,0.1,0,0.1\n"
                                                                   "RED,1,999999999999,0.1,0.1,0.1,0,0.1\n");
  const HardwareProfile profile;
  int progress_calls = 0;
  RunOptions options;
  options.progress = [&](size_t done, size_t total, const RowRun&) {
    ++progress_calls;
    EXPECT_GE(done, 1u);
    EXPECT_LE(done, total);  // never "row 3 of 2"
  };
  const Runs runs = RunRows(ReadHwData(path), profile, options);
  EXPECT_EQ(progress_calls, 1);
  ASSERT_EQ(runs.skipped.size(), 1u);
  try {
    LeaveOneOut(runs, profile);
    ADD_FAILURE() << "one benchmark was enough for leave-one-out";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rows of 1 benchmark ran"), std::string::npos) << what;
    EXPECT_NE(what.find("skipped: line 3: RED (--param"), std::string::npos) << what;
  }
}

TEST(HwData, BadFilesNameTheFileAndLine) {
  EXPECT_NE(ErrorOf("/nonexistent/hw.csv").find("--hw-data"), std::string::npos);
  EXPECT_NE(ErrorOf(WriteTemp("pimopt_hw_noheader.csv", "VA,1,2,3\n")).find("pimopt_hw_noheader.csv:1"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(WriteTemp("pimopt_hw_fields.csv", std::string(kHeader) + "VA,1,2\n")).find("pimopt_hw_fields.csv:2"),
      std::string::npos);
  const std::string bad = ErrorOf(WriteTemp("pimopt_hw_value.csv", std::string(kHeader) + "VA,1,1024,1,1,1,0,1\n"
                                                                                          "VA,4,1024,x,1,1,0,1\n"));
  EXPECT_NE(bad.find("pimopt_hw_value.csv:3"), std::string::npos) << bad;
  EXPECT_NE(ErrorOf(WriteTemp("pimopt_hw_empty.csv", kHeader)).find("no measurements"), std::string::npos);
}

TEST(HwData, ErrorBarsAreQuantilesOfTheAbsoluteErrors) {
  EXPECT_DOUBLE_EQ(AbsQuantile({}, 0.68), 0);
  EXPECT_DOUBLE_EQ(AbsQuantile({-0.5}, 0.68), 0.5);
  EXPECT_DOUBLE_EQ(AbsQuantile({0.1, -0.2, 0.3, -0.4, 0.5}, 0.5), 0.3);
  EXPECT_NEAR(AbsQuantile({0.0, 1.0}, 0.68), 0.68, 1e-12);
  const ErrorSummary s = Summarize({0.1, -0.3, 0.2});
  EXPECT_EQ(s.rows, 3u);
  EXPECT_DOUBLE_EQ(s.median_abs, 0.2);
  EXPECT_DOUBLE_EQ(s.worst_signed, -0.3);
}

// The whole validation, once for the tests below (about 35 s on two cores).
class LeaveOneBenchmarkOut : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = DefaultHwDataPath();
    if (!std::filesystem::exists(path_)) return;
    const HardwareProfile profile = MakeProfile("pim-opt");
    report_ = new Report(LeaveOneOut(RunRows(ReadHwData(path_), profile, RunOptions{}), profile));
  }
  static void TearDownTestSuite() {
    delete report_;
    report_ = nullptr;
  }
  void SetUp() override {
    if (report_ == nullptr) {
      GTEST_SKIP() << "no hardware measurements at " << path_
                   << " (set PIMOPT_HW_DATA to the file, upmem-hw-kernels.csv)";
    }
  }
  static std::string path_;
  static Report* report_;
};
std::string LeaveOneBenchmarkOut::path_;
Report* LeaveOneBenchmarkOut::report_ = nullptr;

TEST_F(LeaveOneBenchmarkOut, PredictsEveryKernelItWasNotFittedOn) {
  const Report& r = *report_;
  EXPECT_GE(r.benchmarks.size(), 10u);
  for (const BenchmarkValidation& b : r.benchmarks) {
    EXPECT_GT(b.rows, 0u);
    // The targets are 15% and a mean under 8%; the bounds leave room for a machine's floating-point differences.
    // UNI's DPU program is charged a reload of each kept element that its C++ port did not count (docs/pim-
    // emulator.md "Validation"): 18.5% today, held under 21% until its residual is explained.
    EXPECT_LT(b.out_of_sample.median_abs, b.benchmark == "UNI" ? 0.21 : 0.18) << b.benchmark;
    EXPECT_LT(b.out_of_sample.worst_abs, 0.60) << b.benchmark;
    EXPECT_LE(b.in_sample.median_abs, b.out_of_sample.median_abs + 0.05) << b.benchmark;
  }
  EXPECT_LT(r.mean_median_out_of_sample, 0.09);
  EXPECT_LT(r.mean_median_out_of_sample, r.mean_median_simulator);  // better than the cycle-level peer
}

TEST_F(LeaveOneBenchmarkOut, PredictsTheTransfersOfAMegabyteOrMore) {
  const Report& r = *report_;
  for (const BenchmarkValidation& b : r.benchmarks) {
    if (b.transfers_out_of_sample.rows == 0) continue;
    EXPECT_LT(b.transfers_out_of_sample.median_abs, 0.35) << b.benchmark;
  }
  EXPECT_LT(r.mean_median_transfers_out_of_sample, 0.22);
}

TEST_F(LeaveOneBenchmarkOut, TheProfileHoldsTheConstantsAndErrorBarsItFinds) {
  const Report& r = *report_;
  const HardwareProfile p = MakeProfile("pim-opt");
  auto near = [](double profile, double fitted, double tolerance, const char* name) {
    EXPECT_NEAR(profile, fitted, tolerance * std::max(std::fabs(fitted), 1e-12)) << name;
  };
  near(p.launch_overhead_s, r.fitted.launch_overhead_s, 0.05, "launch_overhead_s");
  near(p.dma_occupancy_cycles_per_byte, r.fitted.dma_occupancy_cycles_per_byte, 0.05, "dma_occupancy_cycles_per_byte");
  near(p.dma_pipeline_stall, r.fitted.dma_pipeline_stall, 0.05, "dma_pipeline_stall");
  near(p.push_to_dpu_overhead_s, r.transfers.push_to_dpu_overhead_s, 0.15, "push_to_dpu_overhead_s");
  near(p.push_from_dpu_overhead_s, r.transfers.push_from_dpu_overhead_s, 0.15, "push_from_dpu_overhead_s");
  near(p.rank_to_dpu_bytes_per_s, r.transfers.rank_to_dpu_bytes_per_s, 0.15, "rank_to_dpu_bytes_per_s");
  near(p.rank_from_dpu_bytes_per_s, r.transfers.rank_from_dpu_bytes_per_s, 0.15, "rank_from_dpu_bytes_per_s");
  near(p.serial_from_dpu_bytes_per_s, r.transfers.serial_from_dpu_bytes_per_s, 0.15, "serial_from_dpu_bytes_per_s");
  EXPECT_NEAR(p.kernel_time_uncertainty, r.kernel_uncertainty, 0.02);
  EXPECT_NEAR(p.cpu_to_dpu_time_uncertainty, r.cpu_to_dpu_uncertainty, 0.03);
  EXPECT_NEAR(p.dpu_to_cpu_time_uncertainty, r.dpu_to_cpu_uncertainty, 0.03);
}

}  // namespace
}  // namespace pimopt::pim::validation
