// PrIM's TS (time-series analysis: the matrix profile of a query of 64 elements against a series; int32), as
// [uPIMulator] timed it. Its build passes -DBL10 instead of -DBL=10, so BL is undefined and the blocks are PrIM's
// default 256 bytes (64 elements): each block of 64 subsequences takes one 64 x 64 block of multiply-adds (the
// query is one block long). The host pads the series to a multiple of DPUs x 16 x 64 elements, which is why the
// hardware times of small series do not shrink with more DPUs.
#include <cmath>
#include <limits>

#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace ts_port {

constexpr uint32_t kBlock = 256;          // BLOCK_SIZE (BL undefined: 1 << 8)
constexpr uint32_t kDotPip = kBlock / 4;  // DOTPIP
constexpr uint32_t kQueryLength = 64;

struct Args {  // dpu_arguments_t
  uint32_t ts_length;
  uint32_t query_length;
  int32_t query_mean;
  int32_t query_std;
  uint32_t slice_per_dpu;
  int32_t exclusion_zone;
  uint32_t kernel;
};
struct Result {  // dpu_result_t
  int32_t min_value;
  uint32_t min_index;
  int32_t max_value;
  uint32_t max_index;
};

class TsKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_ts";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)}, {"DPU_RESULTS", sizeof(Result) * 24}};
    spec.heap_bytes_per_tasklet = 6 * kBlock;
    return spec;
  }

  // dot_product (noinline)
  static void DotProduct(WramPtr<int32_t> vector_a, WramPtr<int32_t> vector_a_aux, WramPtr<int32_t> vector_b,
                         WramPtr<int32_t> result) {
    CountCall();
    for (u32 i = 0; i < kBlock / 4; ++i) {
      for (u32 j = 0; j < kDotPip; ++j) {
        const u32 ji = j + i;  // computed once (the compiler does)
        if (ji > kBlock / 4 - 1) {
          result[j] += vector_a_aux[ji - kBlock / 4] * vector_b[i];
        } else {
          result[j] += vector_a[ji] * vector_b[i];
        }
      }
    }
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const u32 query_length = Load(&args->query_length);
    const i32 query_mean = Load(&args->query_mean);
    const i32 query_std = Load(&args->query_std);
    const u32 slice_per_dpu = Load(&args->slice_per_dpu);
    const u32 my_start_elem = tasklet_id * (slice_per_dpu / t.nr_tasklets());
    u32 my_end_elem = my_start_elem + (slice_per_dpu / t.nr_tasklets()) - 1;
    if (my_end_elem > slice_per_dpu - query_length) my_end_elem = slice_per_dpu - query_length;
    u32 mem_offset = HeapPointer(t);
    mem_offset += query_length * 4;
    mem_offset += my_start_elem * 4;
    const u32 starting_offset_ts = mem_offset;
    mem_offset += (slice_per_dpu + query_length) * 4;
    u32 addr_ts_mean = mem_offset;
    mem_offset += (slice_per_dpu + query_length) * 4;
    u32 addr_ts_sigma = mem_offset;
    const WramPtr<int32_t> cache_ts = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_ts_aux = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_query = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_ts_mean = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_ts_sigma = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_dotprods = MemAlloc<int32_t>(t, kBlock);
    Result* result = t.Wram<Result>("DPU_RESULTS") + t.me();
    Count(Op::kInt32Add);  // &DPU_RESULTS[tasklet_id]
    i32 min_distance = std::numeric_limits<int32_t>::max();
    u32 min_index = 0;
    for (u32 i = my_start_elem; i < my_end_elem; i += kBlock / 4) {
      for (u32 d = 0; d < kDotPip; ++d) cache_dotprods[d] = 0;
      u32 addr_ts = starting_offset_ts + (i - my_start_elem) * 4;
      u32 addr_query = HeapPointer(t);
      for (u32 j = 0; j < query_length / (kBlock / 4); ++j) {
        t.MramRead(addr_ts, cache_ts, kBlock);
        t.MramRead(addr_ts + kBlock, cache_ts_aux, kBlock);
        t.MramRead(addr_query, cache_query, kBlock);
        addr_ts += kBlock;
        addr_query += kBlock;
        DotProduct(cache_ts, cache_ts_aux, cache_query, cache_dotprods);
      }
      t.MramRead(addr_ts_mean, cache_ts_mean, kBlock);
      t.MramRead(addr_ts_sigma, cache_ts_sigma, kBlock);
      addr_ts_mean += kBlock;
      addr_ts_sigma += kBlock;
      for (u32 k = 0; k < kBlock / 4; ++k) {
        const i32 ql = Cast<int32_t>(query_length);
        const i32 distance =
            2 * (ql - (cache_dotprods[k] - ql * cache_ts_mean[k] * query_mean) / (cache_ts_sigma[k] * query_std));
        if (distance < min_distance) {
          min_distance = distance;
          min_index = i + k;
        }
      }
    }
    Store(&result->min_value, min_distance);
    Store(&result->min_index, min_index);
  }
};

}  // namespace ts_port

RunResult RunTs(const RunRequest& r, const HardwareProfile& p) {
  using namespace ts_port;
  Host host(r, p, "TS");
  host.Load("prim_ts", std::make_shared<TsKernel>());
  const uint32_t dpus = host.dpus(), n = host.tasklets();
  uint64_t ts_size = r.param;
  const uint64_t unit = uint64_t{dpus} * n * kQueryLength;
  if (ts_size % unit) ts_size += unit - ts_size % unit;  // PrIM's size adjustment
  const uint64_t ql = kQueryLength;
  // The host's arrays are static and zeroed: the DPUs' pushes may read past the series.
  std::vector<int32_t> series(ts_size + ql, 0), query(ql), mean(ts_size + ql, 0), sigma(ts_size + ql, 0);
  for (uint64_t i = 0; i < ts_size; ++i) series[i] = static_cast<int32_t>(i % 127);
  for (uint64_t i = 0; i < ql; ++i) query[i] = static_cast<int32_t>(i % 127);
  {  // compute_ts_statistics(ts_size, ts_size - ql, ql), as PrIM computes it (its variance reads AMean before it
     // is filled, so sigma is the subsequences' root mean square)
    const uint64_t profile_length = ts_size - ql;
    std::vector<double> cum(ts_size), cum_sq(ts_size), sum(profile_length + 1), sum_sq(profile_length + 1);
    cum[0] = series[0];
    for (uint64_t i = 1; i < ts_size; ++i) cum[i] = series[i] + cum[i - 1];
    cum_sq[0] = static_cast<double>(series[0]) * series[0];
    for (uint64_t i = 1; i < ts_size; ++i) cum_sq[i] = static_cast<double>(series[i]) * series[i] + cum_sq[i - 1];
    sum[0] = cum[ql - 1];
    for (uint64_t i = 0; i < ts_size - ql; ++i) sum[i + 1] = cum[ql + i] - cum[i];
    sum_sq[0] = cum_sq[ql - 1];
    for (uint64_t i = 0; i < ts_size - ql; ++i) sum_sq[i + 1] = cum_sq[ql + i] - cum_sq[i];
    for (uint64_t i = 0; i < profile_length; ++i) {
      const double mean_tmp = sum[i] / static_cast<double>(ql);
      const double sigma_sq = sum_sq[i] / static_cast<double>(ql) - static_cast<double>(mean[i]) * mean[i];
      sigma[i] = static_cast<int32_t>(std::sqrt(sigma_sq));
      mean[i] = static_cast<int32_t>(mean_tmp);
    }
  }
  double query_mean_d = 0;
  for (uint64_t i = 0; i < ql; ++i) query_mean_d += query[i];
  query_mean_d /= static_cast<double>(ql);
  double variance = 0;
  for (uint64_t i = 0; i < ql; ++i) variance += (query[i] - query_mean_d) * (query[i] - query_mean_d);
  variance /= static_cast<double>(ql);
  const auto query_mean = static_cast<int32_t>(query_mean_d);
  const auto query_std = static_cast<int32_t>(std::sqrt(variance));
  const uint64_t slice = ts_size / dpus;
  const Args args{static_cast<uint32_t>(ts_size),
                  static_cast<uint32_t>(ql),
                  query_mean,
                  query_std,
                  static_cast<uint32_t>(slice),
                  0,
                  0};
  for (uint32_t d = 0; d < dpus; ++d) host.CopyTo(kCpuToDpu, d, "DPU_INPUT_ARGUMENTS", 0, &args, sizeof(Args));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, ql * 4, std::vector<const void*>(dpus, query.data()));
  uint64_t offset = ql * 4;
  host.Push(kCpuToDpu, kMramHeapSymbol, offset, (slice + ql) * 4, PerDpu(series.data(), slice, dpus));
  offset += (slice + ql) * 4;
  host.Push(kCpuToDpu, kMramHeapSymbol, offset, (slice + ql) * 4, PerDpu(mean.data(), slice, dpus));
  offset += (slice + ql) * 4;
  host.Push(kCpuToDpu, kMramHeapSymbol, offset, (slice + ql) * 4, PerDpu(sigma.data(), slice, dpus));
  host.Launch();
  std::vector<Result> results(uint64_t{dpus} * n);
  host.Pull(kDpuToCpu, "DPU_RESULTS", 0, n * sizeof(Result), PerDpuOut(results.data(), n, dpus));
  // Reference: every tasklet's minimum over its subsequences, as the kernel computes it.
  for (uint32_t d = 0; d < dpus; ++d) {
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t start = k * (slice / n);
      uint64_t end = start + slice / n - 1;
      if (end > slice - ql) end = slice - ql;
      int32_t best = std::numeric_limits<int32_t>::max();
      uint32_t best_index = 0;
      for (uint64_t i = start; i < end; i += kBlock / 4) {
        for (uint64_t j = 0; j < kBlock / 4; ++j) {
          const uint64_t g = d * slice + i + j;  // the subsequence's start in the series
          int32_t dot = 0;
          for (uint64_t q = 0; q < ql; ++q) dot += series[g + q] * query[q];
          const int32_t distance =
              2 * (static_cast<int32_t>(ql) -
                   (dot - static_cast<int32_t>(ql) * mean[g] * query_mean) / (sigma[g] * query_std));
          if (distance < best) {
            best = distance;
            best_index = static_cast<uint32_t>(i + j);
          }
        }
      }
      const Result& got = results[uint64_t{d} * n + k];
      if (got.min_value != best || got.min_index != best_index) {
        Mismatch("TS", StrCat("DPU ", d, " tasklet ", k, ": minimum ", got.min_value, " at ", got.min_index,
                              " instead of ", best, " at ", best_index));
      }
    }
  }
  return host.Finish(StrCat("every tasklet's nearest subsequence of a ", ts_size, "-element series"));
}

}  // namespace pimopt::pim::prim
