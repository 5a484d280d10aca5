// PrIM's GEMV kernel (int32, 1 KB blocks) and the two host programs [uPIMulator] timed with it:
//  - GEMV: a rows x 64 matrix (rand() % 50) times a 64-vector;
//  - MLP: three n x n layers (98% zeros) applied to an n-vector, the host passing each layer's output to the next.
// Each tasklet takes pairs of rows; a row's blocks are read with 1 KB DMAs, and a row that starts at an address
// that is not 8-byte aligned is read from the aligned address below it (the DPU ignores the low bits) and shifted
// into place, as PrIM does. As timed: BL = 10.
#include <algorithm>

#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace gemv_port {

constexpr uint32_t kBlock = 1024;
constexpr uint32_t kPerBlock = kBlock / 4;

struct Args {  // dpu_arguments_t
  uint32_t n_size;
  uint32_t n_size_pad;
  uint32_t nr_rows;
  uint32_t max_rows;
};

class GemvKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_gemv";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)}};
    spec.heap_bytes_per_tasklet = kBlock + 8 + 8 + kBlock + 8;
    return spec;
  }

  // gemv (noinline)
  static void Gemv(WramPtr<int32_t> buffer_c, WramPtr<int32_t> buffer_a, WramPtr<int32_t> buffer_b, i32 pos) {
    CountCall();
    const Ref<int32_t> c = buffer_c[pos];  // the address is loop-invariant: computed once
    for (u32 i = 0; i < kPerBlock; ++i) c += buffer_a[i] * buffer_b[i];
  }

  // The row was read from 4 bytes before its start: move it down one element and fetch the last one.
  static void ShiftIn(Tasklet& t, WramPtr<int32_t> cache_a, WramPtr<int32_t> cache_a_aux, u32 next_address) {
    for (u32 off = 0; off < kPerBlock - 1; ++off) cache_a[off] = cache_a[off + 1].load();
    t.MramRead(next_address, cache_a_aux, 8);
    cache_a[kPerBlock - 1] = cache_a_aux[0].load();
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const i32 n_size = Cast<int32_t>(Load(&args->n_size));
    const i32 n_size_pad = Cast<int32_t>(Load(&args->n_size_pad));
    const u32 nr_rows = Load(&args->nr_rows);
    const u32 max_rows = Load(&args->max_rows);
    const uint32_t tasklets2 = 2 * t.nr_tasklets();
    const u32 nrows = nr_rows;
    u32 rows_per_tasklet, start_row;
    const u32 chunks = nrows / tasklets2;
    const u32 dbl_chunks = chunks + chunks;
    rows_per_tasklet = dbl_chunks;
    const u32 rest_rows = nrows % tasklets2;
    if ((tasklet_id + tasklet_id) < rest_rows) rows_per_tasklet += 2;
    if (rest_rows > 0) {
      if ((tasklet_id + tasklet_id) >= rest_rows) {
        const u32 hlf_rest_rows = rest_rows >> 1;
        if ((rest_rows & 1) == 1) {
          start_row = (hlf_rest_rows + 1) * (dbl_chunks + 2) + (tasklet_id - 1 - hlf_rest_rows) * dbl_chunks;
        } else {
          start_row = hlf_rest_rows * (dbl_chunks + 2) + (tasklet_id - hlf_rest_rows) * dbl_chunks;
        }
      } else {
        start_row = tasklet_id * (dbl_chunks + 2);
      }
    } else {
      start_row = tasklet_id * dbl_chunks;
    }
    const u32 heap = HeapPointer(t);
    const u32 mram_base_addr_b = heap + max_rows * Cast<uint32_t>(n_size_pad) * 4;
    u32 mram_base_addr_c =
        heap + max_rows * Cast<uint32_t>(n_size_pad) * 4 + Cast<uint32_t>(n_size_pad) * 4 + start_row * 4;
    const WramPtr<int32_t> cache_a = MemAlloc<int32_t>(t, kBlock + 8);
    const WramPtr<int32_t> cache_a_aux = MemAlloc<int32_t>(t, 8);
    const WramPtr<int32_t> cache_b = MemAlloc<int32_t>(t, kBlock);
    const WramPtr<int32_t> cache_c = MemAlloc<int32_t>(t, 8);
    u32 offset = 0;
    // i * n_size * 4 is strength-reduced by the compiler: a running address, one add per pair of rows.
    const u32 row_bytes = Cast<uint32_t>(n_size) * 4;
    u32 row_address = heap + start_row * row_bytes;
    for (u32 i = start_row; i < start_row + rows_per_tasklet; i += 2, row_address += row_bytes * 2) {
      u32 mram_temp_addr_a = row_address;
      u32 mram_temp_addr_b = mram_base_addr_b;
      cache_c[0] = 0;
      cache_c[1] = 0;
      for (u32 pos = 0; pos < 2 && i + pos < nr_rows; ++pos) {
        i32 n = 0;
        // (int32_t)(n_size - BLOCK_SIZE / sizeof(T)): the unsigned difference, read as signed
        const i32 limit = Cast<int32_t>(Cast<uint32_t>(n_size) - kPerBlock);
        for (n = 0; n < limit; n += kPerBlock) {
          t.MramRead(mram_temp_addr_a, cache_a, kBlock);
          t.MramRead(mram_temp_addr_b, cache_b, kBlock);
          if (offset != 0) ShiftIn(t, cache_a, cache_a_aux, mram_temp_addr_a + kBlock);
          Gemv(cache_c, cache_a, cache_b, Cast<int32_t>(pos));
          mram_temp_addr_a += kBlock;
          mram_temp_addr_b += kBlock;
        }
        t.MramRead(mram_temp_addr_a, cache_a, kBlock);
        if (offset != 0) ShiftIn(t, cache_a, cache_a_aux, mram_temp_addr_a + kBlock);
        t.MramRead(mram_temp_addr_b, cache_b, kBlock);
        const Ref<int32_t> c = cache_c[pos];
        const i32 rest = n_size - n;  // loop-invariant: the compiler computes it once
        for (i32 j = 0; j < rest; ++j) {
          if (j >= static_cast<int32_t>(kPerBlock)) break;  // PrIM prints "error" here
          c += cache_a[j] * cache_b[j];
        }
        mram_temp_addr_a += kBlock - (kPerBlock - Cast<uint32_t>(rest)) * 4;
        mram_temp_addr_b = mram_base_addr_b;
        offset = (mram_temp_addr_a % 8 != 0) ? u32(1) : u32(0);
      }
      t.MramWrite(cache_c, mram_base_addr_c, 8);
      mram_base_addr_c += 2 * 4;
    }
  }
};

// The host's row partitioning (MLP and GEMV): rows per DPU, padded to an even count, and each DPU's first row.
struct Partition {
  std::vector<uint32_t> rows, prev;
  uint32_t max_rows = 0;
};
Partition PartitionRows(uint32_t m_size, uint32_t dpus) {
  Partition part;
  const uint32_t chunks = m_size / dpus, rest = m_size % dpus;
  for (uint32_t i = 0; i < dpus; ++i) {
    const uint32_t rows = chunks + (i < rest ? 1 : 0);
    const uint32_t prev =
        rest > 0 ? (i >= rest ? rest * (chunks + 1) + (i - rest) * chunks : i * (chunks + 1)) : i * chunks;
    part.rows.push_back(rows);
    part.prev.push_back(prev);
    part.max_rows = std::max(part.max_rows, rows % 2 == 1 ? rows + 1 : rows);
  }
  return part;
}

}  // namespace gemv_port

RunResult RunGemv(const RunRequest& r, const HardwareProfile& p) {
  using namespace gemv_port;
  Host host(r, p, "GEMV");
  host.Load("prim_gemv", std::make_shared<GemvKernel>());
  const uint32_t dpus = host.dpus();
  const uint32_t m_size = static_cast<uint32_t>(r.param), n_size = 64, n_pad = n_size % 2 == 1 ? n_size + 1 : n_size;
  const Partition part = PartitionRows(m_size, dpus);
  std::vector<int32_t> a(uint64_t{part.max_rows} * dpus * n_pad + n_pad, 0), b(n_pad, 0);
  std::vector<int32_t> c_dpu(uint64_t{part.max_rows} * dpus);
  Rand rand;
  for (uint64_t i = 0; i < uint64_t{m_size} * n_size; ++i) a[i] = rand() % 50;
  for (uint32_t i = 0; i < n_size; ++i) b[i] = rand() % 50;
  std::vector<Args> args(dpus);
  for (uint32_t i = 0; i < dpus; ++i) args[i] = {n_size, n_pad, part.rows[i], part.max_rows};
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), PerDpu(args.data(), 1, dpus));
  std::vector<const void*> rows(dpus);
  for (uint32_t i = 0; i < dpus; ++i) rows[i] = a.data() + uint64_t{part.prev[i]} * n_size;
  const uint64_t matrix_bytes = uint64_t{part.max_rows} * n_pad * 4;
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, matrix_bytes, rows);
  host.Push(kCpuToDpu, kMramHeapSymbol, matrix_bytes, n_pad * 4, std::vector<const void*>(dpus, b.data()));
  host.Launch();
  host.Pull(kDpuToCpu, kMramHeapSymbol, matrix_bytes + n_pad * 4, part.max_rows * 4,
            PerDpuOut(c_dpu.data(), part.max_rows, dpus));
  for (uint32_t d = 0; d < dpus; ++d) {
    for (uint32_t j = 0; j < part.rows[d]; ++j) {
      const uint64_t row = part.prev[d] + j;
      int32_t expected = 0;
      for (uint32_t k = 0; k < n_size; ++k) expected += a[row * n_size + k] * b[k];
      const int32_t got = c_dpu[uint64_t{d} * part.max_rows + j];
      if (got != expected) Mismatch("GEMV", StrCat("row ", row, ": ", got, " instead of ", expected));
    }
  }
  return host.Finish(StrCat("the product of a ", m_size, " x ", n_size, " matrix and a vector"));
}

RunResult RunMlp(const RunRequest& r, const HardwareProfile& p) {
  using namespace gemv_port;
  Host host(r, p, "MLP");
  host.Load("prim_gemv", std::make_shared<GemvKernel>());
  const uint32_t dpus = host.dpus(), layers = 3;
  const uint32_t m_size = static_cast<uint32_t>(r.param), n_size = m_size;
  const uint32_t n_pad = n_size % 2 == 1 ? n_size + 1 : n_size;
  const Partition part = PartitionRows(m_size, dpus);
  std::vector<std::vector<int32_t>> a(layers, std::vector<int32_t>(uint64_t{part.max_rows} * dpus * n_pad + n_pad, 0));
  for (uint32_t l = 0; l < layers; ++l) {
    for (uint64_t i = 0; i < uint64_t{m_size} * n_size; ++i)
      a[l][i] = i % 100 < 98 ? 0 : static_cast<int32_t>((l + i) % 2);
  }
  std::vector<int32_t> b(n_pad, 0), c_dpu(uint64_t{part.max_rows} * dpus), b_tmp(c_dpu.size() + n_pad, 0);
  for (uint32_t i = 0; i < n_size; ++i) b[i] = i % 50 < 48 ? 0 : static_cast<int32_t>(i % 2);
  std::vector<Args> args(dpus);
  for (uint32_t i = 0; i < dpus; ++i) args[i] = {n_size, n_pad, part.rows[i], part.max_rows};
  const uint64_t matrix_bytes = uint64_t{part.max_rows} * n_pad * 4;
  auto rows_of = [&](uint32_t l) {
    std::vector<const void*> rows(dpus);
    for (uint32_t i = 0; i < dpus; ++i) rows[i] = a[l].data() + uint64_t{part.prev[i]} * n_size;
    return rows;
  };
  host.Push(kCpuToDpu, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), PerDpu(args.data(), 1, dpus));
  host.Push(kCpuToDpu, kMramHeapSymbol, 0, matrix_bytes, rows_of(0));
  host.Push(kCpuToDpu, kMramHeapSymbol, matrix_bytes, n_pad * 4, std::vector<const void*>(dpus, b.data()));
  host.Launch();
  // Between layers: the layer's output pulled and pushed back as the next input (DPU->DPU), the next layer's
  // weights pushed (CPU->DPU). The hardware data's kernel time covers the three launches.
  for (uint32_t lay = 1; lay < layers; ++lay) {
    host.Pull(kDpuToDpu, kMramHeapSymbol, matrix_bytes + n_pad * 4, part.max_rows * 4,
              PerDpuOut(c_dpu.data(), part.max_rows, dpus));
    uint64_t i = 0;
    for (uint32_t d = 0; d < dpus; ++d) {
      for (uint32_t j = 0; j < part.rows[d]; ++j) b_tmp[i++] = c_dpu[uint64_t{d} * part.max_rows + j];
    }
    host.Push(kDpuToDpu, kMramHeapSymbol, matrix_bytes, n_pad * 4, std::vector<const void*>(dpus, b_tmp.data()));
    host.Push(kCpuToDpu, kMramHeapSymbol, 0, matrix_bytes, rows_of(lay));
    host.Launch();
  }
  host.Pull(kDpuToCpu, kMramHeapSymbol, matrix_bytes + n_pad * 4, part.max_rows * 4,
            PerDpuOut(c_dpu.data(), part.max_rows, dpus));
  // Reference: mlp_host (ReLU after each layer; these weights and inputs never make a sum negative).
  std::vector<int64_t> v(b.begin(), b.begin() + n_size), next(m_size);
  for (uint32_t l = 0; l < layers; ++l) {
    for (uint32_t row = 0; row < m_size; ++row) {
      int64_t s = 0;
      for (uint32_t k = 0; k < n_size; ++k) s += a[l][uint64_t{row} * n_size + k] * v[k];
      next[row] = std::max<int64_t>(0, s);
    }
    v = next;
  }
  for (uint32_t d = 0; d < dpus; ++d) {
    for (uint32_t j = 0; j < part.rows[d]; ++j) {
      const uint64_t row = part.prev[d] + j;
      const int32_t got = c_dpu[uint64_t{d} * part.max_rows + j];
      if (got != v[row]) Mismatch("MLP", StrCat("output ", row, ": ", got, " instead of ", v[row]));
    }
  }
  return host.Finish(StrCat("three ", m_size, " x ", n_size, " layers"));
}

}  // namespace pimopt::pim::prim
