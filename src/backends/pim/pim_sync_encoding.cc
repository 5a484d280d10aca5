// The PIM backend's synchronization encodings (--sync-format): MA-SGD's model deltas quantized with error feedback
// (int16, int8) and the size of compacted (index, value) pulls. Their DPU cycles are the emulator's
// (pim/encoding_cost.h).
#include "pimopt/backends/pim/pim_backend.h"

#include <algorithm>
#include <cmath>

#include "pimopt/core/error.h"
#include "pimopt/core/thread_pool.h"
#include "pimopt/pim/encoding_cost.h"

namespace pimopt {

int PimBackend::QuantizedBits() const {
  switch (options_.sync_format) {
    case PimBackendOptions::SyncFormat::kInt16:
      return 16;
    case PimBackendOptions::SyncFormat::kInt8:
      return 8;
    default:
      return 0;
  }
}

void PimBackend::QuantizeModelDeltas(int bits) {
  // Per DPU: d = x_k - global + e_k (exact integers); a power-of-two step 2^s, the smallest with every |d_j| / 2^s
  // rounded within q_max = 2^(bits - 1) - 1; q_j = round(d_j / 2^s) (half away from zero); the host receives
  // global + q_j 2^s and the DPU keeps e_k = d - q 2^s (error feedback: Seide et al. 2014, Karimireddy et al. 2019,
  // [ErrorFeedback] in docs/sources.md). Integer throughout: the same bits on any thread count and rank split.
  const size_t total = layout_.n_pad + 1;
  const int64_t q_max = (int64_t{1} << (bits - 1)) - 1;
  std::vector<fixed::Saturation> sat(shards_.dpus);
  pool_.ParallelFor(shards_.dpus, [&](size_t k) {
    std::vector<int64_t> d(total);
    int64_t most = 0;
    for (size_t j = 0; j < total; ++j) {
      d[j] = int64_t{models_.local[k][j]} - models_.global[j] + models_.delta_error[k][j];
      most = std::max(most, d[j] < 0 ? -d[j] : d[j]);
    }
    auto round_shift = [](int64_t v, int shift) {
      if (shift == 0) return v;
      const int64_t half = int64_t{1} << (shift - 1);
      return v >= 0 ? (v + half) >> shift : -((-v + half) >> shift);
    };
    int shift = 0;
    while (round_shift(most, shift) > q_max) ++shift;
    for (size_t j = 0; j < total; ++j) {
      const int64_t q = std::clamp(round_shift(d[j], shift), -q_max, q_max);
      const int64_t sent = q * (int64_t{1} << shift);
      models_.delta_error[k][j] = fixed::SaturateModel(d[j] - sent, sat[k]);
      models_.local[k][j] = fixed::SaturateModel(int64_t{models_.global[j]} + sent, sat[k]);
    }
  });
  for (const fixed::Saturation& x : sat) models_.saturation.events += x.events;
}

double PimBackend::QuantizationCycles(int bits) const {
  return pim::QuantizationCycles(profile_, layout_.n_pad + 1, bits);  // pim/encoding_cost.h
}

uint64_t PimBackend::QuantizedBytes(int bits) const {
  const uint64_t total = layout_.n_pad + 1;
  return (total * static_cast<uint64_t>(bits) / 8 + 7) / 8 * 8 + 8;
}

uint64_t PimBackend::MostTouchedPairs(std::span<const std::span<const uint32_t>> worker_rows) const {
  // Distinct columns of each DPU's rows, plus the bias; the most over all DPUs of the run (a parallel transfer
  // moves the same size from every DPU). Dense data: every coordinate.
  if (!run_.data->is_sparse()) return layout_.n_pad + 1;
  std::vector<uint64_t> counts(shards_.dpus, 0);
  const CsrMatrix& m = run_.data->csr();
  pool_.ParallelFor(shards_.dpus, [&](size_t k) {
    std::vector<uint32_t> cols;
    for (uint32_t row : worker_rows[k]) {  // this process's row numbers (as the row lists take them)
      cols.insert(cols.end(), m.col.begin() + m.row_ptr[row], m.col.begin() + m.row_ptr[row + 1]);
    }
    std::sort(cols.begin(), cols.end());
    counts[k] = static_cast<uint64_t>(std::unique(cols.begin(), cols.end()) - cols.begin()) + 1;
  });
  float most[1] = {static_cast<float>(counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end()))};
  run_.comm->AllreduceMax(most);
  // Beyond float's exact integers the compaction is not considered.
  return most[0] < 16777216.0f ? static_cast<uint64_t>(most[0]) : 0;
}

}  // namespace pimopt
