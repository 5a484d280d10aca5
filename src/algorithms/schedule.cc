#include "pimopt/algorithms/schedule.h"

#include <algorithm>

#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"

namespace pimopt {
namespace {
constexpr uint64_t kEpochStream = 0x65706f6368ULL;  // "epoch"
constexpr uint64_t kShardStream = 0x7368617264ULL;  // "shard"
}  // namespace

GlobalBatchPlan::GlobalBatchPlan(uint64_t num_rows, uint64_t batch, uint64_t seed, int epoch, bool shuffle)
    : batch_(batch),
      order_(Permutation(num_rows, StreamSeed(seed, kEpochStream, static_cast<uint64_t>(epoch)), shuffle)) {
  PIMOPT_CHECK(batch > 0);
}

std::span<const uint32_t> GlobalBatchPlan::Batch(uint64_t t) const {
  const uint64_t begin = t * batch_;
  const uint64_t end = std::min<uint64_t>(order_.size(), begin + batch_);
  return std::span<const uint32_t>(order_).subspan(begin, end - begin);
}

ShardPlan::ShardPlan(std::vector<Shard> shards, uint64_t local_batch, uint64_t seed, uint64_t pass, bool shuffle,
                     int first_worker)
    : shards_(std::move(shards)), batch_(local_batch), orders_(shards_.size()) {
  PIMOPT_CHECK(local_batch > 0);
  for (size_t k = 0; k < shards_.size(); ++k) {
    PIMOPT_CHECK(shards_[k].size() > 0, "empty shard");
    auto local = Permutation(shards_[k].size(), StreamSeed(seed, kShardStream, pass, first_worker + k), shuffle);
    for (auto& r : local) r += shards_[k].begin;
    orders_[k] = std::move(local);
  }
}

uint64_t ShardPlan::max_batches() const {
  uint64_t m = 0;
  for (int k = 0; k < num_workers(); ++k) m = std::max(m, batches(k));
  return m;
}

std::span<const uint32_t> ShardPlan::LocalBatch(int k, uint64_t step) const {
  const uint64_t t = step % batches(k);
  const uint64_t begin = t * batch_;
  const uint64_t end = std::min<uint64_t>(orders_[k].size(), begin + batch_);
  return std::span<const uint32_t>(orders_[k]).subspan(begin, end - begin);
}

std::span<const uint32_t> ShardPlan::RowsOfStepsInOnePass(int k, uint64_t first_step, uint64_t num_steps,
                                                          uint64_t* steps) const {
  const uint64_t per_pass = batches(k);
  const uint64_t t = first_step % per_pass;
  *steps = std::min(num_steps, per_pass - t);
  const uint64_t begin = t * batch_;
  const uint64_t end = std::min<uint64_t>(orders_[k].size(), (t + *steps) * batch_);
  return std::span<const uint32_t>(orders_[k]).subspan(begin, end - begin);
}

}  // namespace pimopt
