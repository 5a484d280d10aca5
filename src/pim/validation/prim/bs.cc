// PrIM's BS (binary search of sorted int64 in MRAM), as [uPIMulator] timed it: BL undefined (256-byte blocks),
// the whole sorted vector on every DPU, each tasklet searching its share of the queries. Each step reads one block
// at the midpoint (an address that is often only 4-byte aligned: the DPU ignores the low bits) and scans it; each
// query is read with an 8-byte DMA into a variable on the tasklet's stack. The size parameter is the vector's
// length, with one query per 8 elements ([uPIMulator]'s bs.py).
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace bs_port {

constexpr uint32_t kBlock = 256;
constexpr uint32_t kPerBlock = kBlock / 8;

struct Args {  // dpu_arguments_t
  uint64_t input_size;
  uint64_t slice_per_dpu;
  uint32_t kernel;
  uint32_t pad;
};

class BsKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_bs";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)}, {"DPU_RESULTS", 8 * 24}};
    spec.heap_bytes_per_tasklet = 3 * kBlock;
    return spec;
  }

  // search (noinline)
  static i64 Search(WramPtr<int64_t> buffer_a, i64 searching_for) {
    CountCall();
    i64 found = -2;
    if (buffer_a[0] <= searching_for) {
      found = -1;
      for (u32 i = 0; i < kPerBlock; ++i) {
        if (buffer_a[i] == searching_for) {
          found = Cast<int64_t>(i);
          break;
        }
      }
    }
    return found;
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    alignas(8) i64 searching_for = 0;  // on the stack: filled by an 8-byte DMA
    i64 found;
    const u64 input_size = Load(&args->input_size);
    const u64 slice_per_dpu = Load(&args->slice_per_dpu);
    const u32 heap = HeapPointer(t);
    u32 start_a = heap, start_aux = start_a;
    u32 end_a = Cast<uint32_t>(u64(start_a) + input_size * 8);
    u32 current_query = Cast<uint32_t>(u64(end_a) + u64(tasklet_id) * (slice_per_dpu / t.nr_tasklets()) * 8);
    const WramPtr<int64_t> cache_a = MemAlloc<int64_t>(t, kBlock);
    const WramPtr<int64_t> cache_aux_a = MemAlloc<int64_t>(t, kBlock);
    const WramPtr<int64_t> cache_aux_b = MemAlloc<int64_t>(t, kBlock);
    const WramPtr<int64_t> result = t.WramVar<int64_t>("DPU_RESULTS") + tasklet_id;
    for (u32 targets = 0; targets < slice_per_dpu / t.nr_tasklets(); ++targets) {
      found = -1;
      t.MramRead(current_query, &searching_for, 8);
      current_query += 8;
      bool end = false;
      start_a = heap;
      start_aux = start_a;
      end_a = Cast<uint32_t>(u64(start_a) + input_size * 8);
      u32 current_a = start_a;
      t.MramRead(current_a, cache_aux_a, kBlock);
      t.MramRead(end_a - kBlock * 8, cache_aux_b, kBlock);
      current_a = (start_a + end_a) / 2;
      for (;;) {
        Count(Op::kBranch);  // while (!end)
        if (end) break;
        t.MramRead(current_a, cache_a, kBlock);
        found = Search(cache_a, searching_for);
        if (found > -1) {
          *result = found + Cast<int64_t>((current_a - start_aux) / 8);
          break;
        }
        if (found == -2) {
          end_a = current_a;
          current_a = (current_a + start_a) / 2;
        } else if (found == -1) {
          start_a = current_a;
          current_a = (current_a + end_a) / 2;
        }
        if (current_a < start_aux + kBlock) {
          end = true;
          t.MramRead(current_a, cache_a, kBlock);
          found = Search(cache_a, searching_for);
          if (found > -1) *result = found + Cast<int64_t>((current_a - start_aux) / 8);
        }
        if (current_a > end_a - kBlock) {
          end = true;
          t.MramRead(end_a - kBlock, cache_a, kBlock);
          found = Search(cache_a, searching_for);
          if (found > -1) *result = found + Cast<int64_t>((current_a - start_aux) / 8);
        }
      }
    }
  }
};

// PrIM's search of one tasklet's queries, replayed on the host over one DPU's MRAM image (the input, then the
// DPU's queries, then zeros), byte addresses from the heap: what the kernel computes, its quirks included. The
// end-boundary check reads the last block but offsets what it finds there by the midpoint's address, so some
// queries near the input's end come back with a wrong index on hardware as here. Returns the tasklet's result
// (the last index written; `initial` when none was) and counts the answers that differ from the true index.
int64_t ReplaySearches(const std::vector<int64_t>& mram, uint64_t input_size, const int64_t* queries, uint64_t count,
                       int64_t initial, uint64_t& wrong_index, uint64_t& not_found) {
  auto search = [&mram](uint64_t address, int64_t x) -> int64_t {  // search(): the DMA drops the low 3 bits
    const uint64_t first = (address & ~uint64_t{7}) / 8;
    if (mram[first] > x) return -2;
    for (uint64_t i = 0; i < kPerBlock; ++i) {
      if (mram[first + i] == x) return static_cast<int64_t>(i);
    }
    return -1;
  };
  int64_t result = initial;
  for (uint64_t q = 0; q < count; ++q) {
    const int64_t x = queries[q];
    const int64_t truth = x >= 1 && x <= static_cast<int64_t>(input_size) ? x - 1 : -1;
    int64_t answer = -1;
    uint64_t start = 0, end = input_size * 8, current = (start + end) / 2;
    for (bool done = false; !done;) {
      int64_t found = search(current, x);
      if (found > -1) {
        answer = found + static_cast<int64_t>(current / 8);
        break;
      }
      if (found == -2) {
        end = current;
        current = (current + start) / 2;
      } else {
        start = current;
        current = (current + end) / 2;
      }
      if (current < kBlock) {
        done = true;
        found = search(current, x);
        if (found > -1) answer = found + static_cast<int64_t>(current / 8);
      }
      if (current > end - kBlock) {
        done = true;
        found = search(end - kBlock, x);
        if (found > -1) answer = found + static_cast<int64_t>(current / 8);
      }
    }
    if (answer != -1) result = answer;
    if (answer == -1 && truth != -1) ++not_found;
    if (answer != -1 && answer != truth) ++wrong_index;
  }
  return result;
}

}  // namespace bs_port

RunResult RunBs(const RunRequest& r, const HardwareProfile& p) {
  using namespace bs_port;
  Host host(r, p, "BS");
  host.Load("prim_bs", std::make_shared<BsKernel>());
  const uint32_t dpus = host.dpus(), n = host.tasklets();
  const uint64_t input_size = r.param;
  uint64_t num_querys = input_size / 8;
  if (num_querys % (uint64_t{dpus} * n)) num_querys += uint64_t{dpus} * n - num_querys % (uint64_t{dpus} * n);
  if ((input_size + num_querys / dpus) * 8 > p.mram_bytes) {
    throw ConfigError("--param", StrCat(input_size, " elements and their queries do not fit one DPU's MRAM"));
  }
  if (input_size < 2 * kBlock) throw ConfigError("--param", StrCat("BS needs at least ", 2 * kBlock, " elements"));
  std::vector<int64_t> input(input_size), querys(num_querys);
  input[0] = 1;
  for (uint64_t i = 1; i < input_size; ++i) input[i] = input[i - 1] + 1;
  for (uint64_t i = 0; i < num_querys; ++i) querys[i] = static_cast<int64_t>(i);
  const uint64_t slice_per_dpu = num_querys / dpus;
  const Args args{input_size, slice_per_dpu, 0, 0};
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), std::vector<const void*>(dpus, &args));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, input_size * 8, std::vector<const void*>(dpus, input.data()));
  host.Push(kCpuToDpu, kMramHeapSymbol, input_size * 8, slice_per_dpu * 8, PerDpu(querys.data(), slice_per_dpu, dpus));
  host.Launch();
  std::vector<int64_t> results(uint64_t{dpus} * n);
  host.Pull(kDpuToCpu, "DPU_RESULTS", 0, n * 8, PerDpuOut(results.data(), n, dpus));
  // Each tasklet's result is the index it wrote last: replayed on the host with PrIM's algorithm.
  const uint64_t per_tasklet = slice_per_dpu / n;
  uint64_t wrong_index = 0, not_found = 0;
  std::vector<int64_t> mram(input_size + slice_per_dpu + kPerBlock, 0);
  std::copy(input.begin(), input.end(), mram.begin());
  for (uint32_t d = 0; d < dpus; ++d) {
    const int64_t* slice = querys.data() + uint64_t{d} * slice_per_dpu;
    std::copy(slice, slice + slice_per_dpu, mram.begin() + static_cast<std::ptrdiff_t>(input_size));
    for (uint32_t k = 0; k < n; ++k) {
      const int64_t expected =
          ReplaySearches(mram, input_size, slice + uint64_t{k} * per_tasklet, per_tasklet, 0, wrong_index, not_found);
      const int64_t got = results[uint64_t{d} * n + k];
      if (got != expected) {
        Mismatch("BS", StrCat("DPU ", d, " tasklet ", k, ": last index ", got, " instead of ", expected));
      }
    }
  }
  return host.Finish(StrCat(num_querys, " queries in a sorted vector of ", input_size,
                            " (PrIM's search, as on "
                            "hardware: ",
                            wrong_index, " found at a wrong index, ", not_found, " not found)"));
}

}  // namespace pimopt::pim::prim
