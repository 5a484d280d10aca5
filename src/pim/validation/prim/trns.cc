// PrIM's TRNS (in-place transposition of an (M_ x m) x (N_ x n) matrix of int64 in three steps), as [uPIMulator]
// timed it (m = 4, n = 8, N_ = 64 column tiles spread over the DPUs, M_ the size parameter):
//  - step 1 is the host's transfer: one push of n elements per DPU for each of the M_ x m rows (M_ x m pushes);
//  - step 2 (kernel 1): each tasklet transposes whole m x n tiles in WRAM (256-byte DMAs);
//  - step 3 (kernel 2): the tasklets follow the permutation's cycles over m-element tiles, taking tiles from a
//    counter under a mutex and marking done tiles in a bitmap in MRAM under another (8-byte DMAs at byte
//    addresses: the DPU ignores their low 3 bits, so 8 tiles share a word).
// With fewer than 64 DPUs the host runs rounds of one DPU per column tile, reloading the program every round (its
// check `active_dpus_before != active_dpus` is always true). The kernel timer covers both kernels of every round.
#include "host.h"
#include "kernel_util.h"

namespace pimopt::pim::prim {
// The port's own names: a named namespace, so that the ports share unity batches (an anonymous one is one
// namespace per batch).
namespace trns_port {

constexpr uint32_t kM = 4, kN = 8, kColumnTiles = 64;

struct Args {  // dpu_arguments_t
  uint32_t m;
  uint32_t n;
  uint32_t M_;
  uint32_t kernel;
};

class TrnsKernel final : public Kernel {
 public:
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "prim_trns";
    spec.wram_symbols = {{"DPU_INPUT_ARGUMENTS", sizeof(Args)}, {"curr_tile", 8}};
    spec.heap_bytes_per_tasklet = 2 * kM * kN * 8;  // step 2's tiles (step 3 takes less)
    return spec;
  }

  void Main(Tasklet& t) override {
    auto* args = t.Wram<Args>("DPU_INPUT_ARGUMENTS");
    KernelDispatch(args->kernel);
    if (args->kernel == 0) {
      Step2(t, args);
    } else {
      Step3(t, args);
    }
  }

 private:
  static constexpr uint32_t kTileMutex = 0, kDoneMutex = 1;

  // read_tile_step2 / write_tile_step2 (noinline): the tile in DMAs of at most 2,048 bytes. (PrIM offsets the WRAM
  // side by (m n - rest) x sizeof(T) elements, not bytes: harmless while a tile fits one DMA, as here.)
  static void TileStep2(Tasklet& t, bool read, u32 a, u32 offset, WramPtr<int64_t> variable, u32 m, u32 n) {
    CountCall();
    const u32 mn = m * n;
    i32 rest = Cast<int32_t>(mn);
    i32 transfer;
    while (rest > 0) {
      if (Cast<uint32_t>(rest) * 8 > 2048) {
        transfer = 2048 / 8;
      } else {
        transfer = rest;
      }
      const u32 done = mn - Cast<uint32_t>(rest);
      const u32 address = a + (offset + done) * 8;
      const WramPtr<int64_t> w = variable + done * 8;
      if (read) {
        t.MramRead(address, w, Cast<uint32_t>(transfer) * 8);
      } else {
        t.MramWrite(w, address, Cast<uint32_t>(transfer) * 8);
      }
      rest -= transfer;
    }
  }

  static void Step2(Tasklet& t, Args* args) {
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const u32 a = HeapPointer(t);
    const u32 big_m = Load(&args->M_), m = Load(&args->m), n = Load(&args->n);
    const u32 mn = m * n;  // hoisted out of the loops
    const WramPtr<int64_t> data = MemAlloc<int64_t>(t, (mn * 8).value());
    const WramPtr<int64_t> backup = MemAlloc<int64_t>(t, (mn * 8).value());
    const u32 mn1 = mn - 1;
    // The compiler strength-reduces the induction variables' products: tile * m * n and i * m become running
    // sums (an add per iteration); (m n - 1) * (i / n) stays a call (i / n is not affine).
    const u32 tile_stride = mn * t.nr_tasklets();
    u32 tile_offset = tasklet_id * mn;
    for (u32 tile = tasklet_id; tile < big_m; tile += t.nr_tasklets(), tile_offset += tile_stride) {
      TileStep2(t, true, a, tile_offset, data, m, n);
      u32 im = 0;
      for (u32 i = 0; i < mn; ++i, im += m) backup[im - mn1 * (i / n)] = data[i];
      TileStep2(t, false, a, tile_offset, backup, m, n);
    }
  }

  // get_tile (noinline)
  static u32 GetTile(Tasklet& t, WramPtr<uint32_t> curr_tile) {
    CountCall();
    t.MutexLock(kTileMutex);
    const u32 value = *curr_tile;
    *curr_tile = value + 1;
    t.MutexUnlock(kTileMutex);
    return value;
  }
  // read_tile_step3 / write_tile_step3 (noinline)
  static void TileStep3(Tasklet& t, bool read, u32 a, u32 offset, WramPtr<int64_t> variable, u32 m) {
    CountCall();
    if (read) {
      t.MramRead(a + offset * 8, variable, m * 8);
    } else {
      t.MramWrite(variable, a + offset * 8, m * 8);
    }
  }
  // get_done / get_and_set_done (noinline): one bit per tile, bit (address % 8) of the word at the byte address.
  static bool Done(Tasklet& t, u32 done_array, u32 address, WramPtr<int64_t> read_done, bool set) {
    CountCall();
    t.MutexLock(kDoneMutex);
    t.MramRead(done_array + address, read_done, 8);
    const i64 bit = i32(1) << (address % 8);
    const bool result = (*read_done & bit) != 0;
    if (set) {
      *read_done |= bit;
      t.MramWrite(read_done, done_array + address, 8);
    }
    t.MutexUnlock(kDoneMutex);
    return result;
  }

  static void Step3(Tasklet& t, Args* args) {
    const u32 tasklet_id = t.me();
    if (tasklet_id == 0) MemReset(t);
    t.BarrierWait();
    const u32 a = HeapPointer(t);
    const u32 m = Load(&args->m), n = Load(&args->n), big_m = Load(&args->M_);
    const u32 done_array = a + big_m * m * n * 8;
    const u32 tile_max = big_m * n - 1;
    const WramPtr<int64_t> data = MemAlloc<int64_t>(t, (m * 8).value());
    const WramPtr<int64_t> backup = MemAlloc<int64_t>(t, (m * 8).value());
    const WramPtr<int64_t> read_done = MemAlloc<int64_t>(t, 8);
    const WramPtr<uint32_t> curr_tile = t.WramVar<uint32_t>("curr_tile");
    u32 tile = GetTile(t, curr_tile);
    while (tile < tile_max) {
      u32 next_in_cycle = (tile * big_m) - tile_max * (tile / n);
      if (next_in_cycle == tile) {
        tile = GetTile(t, curr_tile);
        continue;
      }
      TileStep3(t, true, a, tile * m, data, m);
      bool done = Done(t, done_array, tile, read_done, false);
      for (; !done; next_in_cycle = (next_in_cycle * big_m) - tile_max * (next_in_cycle / n)) {
        TileStep3(t, true, a, next_in_cycle * m, backup, m);
        done = Done(t, done_array, next_in_cycle, read_done, true);
        Count(Op::kBranch);  // if (!done)
        if (!done) TileStep3(t, false, a, next_in_cycle * m, data, m);
        for (u32 i = 0; i < m; ++i) data[i] = backup[i].load();
        Count(Op::kBranch);  // the loop's done == 0
      }
      tile = GetTile(t, curr_tile);
    }
  }
};

}  // namespace trns_port

RunResult RunTrns(const RunRequest& r, const HardwareProfile& p) {
  using namespace trns_port;
  Host host(r, p, "TRNS");
  host.Load("prim_trns", std::make_shared<TrnsKernel>());
  const uint32_t dpus = host.dpus();
  const uint64_t big_m = r.param, m = kM, n = kN, big_n = kColumnTiles;
  if (dpus > big_n)
    throw ConfigError("--dpus", StrCat("TRNS spreads ", big_n, " column tiles: at most ", big_n, " DPUs"));
  if (big_m * m * n * 8 + big_m * n + 8 > p.mram_bytes / 2) throw ConfigError("--param", "M_ too large for MRAM");
  const uint64_t rows = big_m * m, cols = big_n * n;
  std::vector<int64_t> a_backup(rows * cols), a_result(rows * cols, 0);
  Rand rand;
  for (int64_t& v : a_backup) v = rand();
  const std::vector<uint8_t> done_host(big_m * n + 8, 0);
  uint64_t curr_dpu = 0;
  bool first_round = true;
  while (curr_dpu < big_n) {
    const uint32_t active = static_cast<uint32_t>(std::min<uint64_t>(dpus, big_n - curr_dpu));
    if (!first_round) host.Reallocate(active);  // dpu_free, dpu_alloc, dpu_load (every round after the first)
    first_round = false;
    for (uint64_t j = 0; j < rows; ++j) {  // step 1
      std::vector<const void*> buffers(active);
      for (uint32_t i = 0; i < active; ++i) buffers[i] = &a_backup[j * cols + n * (i + curr_dpu)];
      host.Push(kCpuToDpu, kMramHeapSymbol, 8 * j * n, 8 * n, buffers);
    }
    const uint64_t done_bytes = (big_m * n) / 8 == 0 ? 8 : big_m * n;
    host.Push(kUntimed, kMramHeapSymbol, rows * n * 8, (done_bytes + 7) / 8 * 8,
              std::vector<const void*>(active, done_host.data()));
    const Args step2{static_cast<uint32_t>(m), static_cast<uint32_t>(n), static_cast<uint32_t>(big_m), 0};
    host.Push(kUntimed, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), std::vector<const void*>(active, &step2));
    host.Launch();
    const Args step3{static_cast<uint32_t>(m), static_cast<uint32_t>(n), static_cast<uint32_t>(big_m), 1};
    host.Push(kUntimed, "DPU_INPUT_ARGUMENTS", 0, sizeof(Args), std::vector<const void*>(active, &step3));
    host.Launch();
    host.Pull(kDpuToCpu, kMramHeapSymbol, 0, 8 * m * n * big_m,
              PerDpuOut(a_result.data() + curr_dpu * m * n * big_m, m * n * big_m, active));
    curr_dpu += active;
  }
  // Reference: trns_host(A, M_ m, N_ n, 1), the in-place transposition of the rows x cols matrix.
  std::vector<int64_t> expected(rows * cols);
  for (uint64_t i = 0; i < rows * cols; ++i) {
    const uint64_t next = (i * rows) - (rows * cols - 1) * (i / cols);
    expected[next] = a_backup[i];
  }
  for (uint64_t k = 0; k < rows * cols; ++k) {
    if (a_result[k] != expected[k])
      Mismatch("TRNS", StrCat("element ", k, ": ", a_result[k], " instead of ", expected[k]));
  }
  return host.Finish(StrCat("the transposition of a ", rows, " x ", cols, " matrix"));
}

}  // namespace pimopt::pim::prim
