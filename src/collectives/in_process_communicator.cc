#include "pimopt/collectives/in_process_communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "pimopt/core/error.h"

namespace pimopt {

struct InProcessGroup::Hub {
  explicit Hub(int ranks) : size(ranks), posted(ranks) {}
  const int size;
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t generation = 0;  // completed rendezvous
  int arrived = 0;
  bool aborted = false;
  int turn = -1;                                   // OrderedSum: the rank whose fold is next
  std::vector<std::span<const std::byte>> posted;  // each rank's contribution to the current collective
  std::vector<float> accumulator;                  // OrderedSum's shared fold

  void ThrowIfAborted() const {
    if (aborted) throw GroupAborted("another rank of the in-process group failed");
  }
  // All ranks meet; throws GroupAborted when the group was aborted while waiting.
  void Rendezvous() {
    std::unique_lock<std::mutex> lock(mutex);
    ThrowIfAborted();
    const uint64_t mine = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      changed.notify_all();
      return;
    }
    changed.wait(lock, [&] { return generation != mine || aborted; });
    ThrowIfAborted();
  }
  void WaitForTurn(int rank) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return turn == rank || aborted; });
    ThrowIfAborted();
  }
  void PassTurn(int next) {
    std::lock_guard<std::mutex> lock(mutex);
    turn = next;
    changed.notify_all();
  }
  void Abort() {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    changed.notify_all();
  }
};

class InProcessGroup::RankCommunicator final : public Communicator {
 public:
  RankCommunicator(Hub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.size; }

  void OrderedSum(std::span<float> acc, const FoldFn& fold_local) override {
    const CollectiveTimer timer(stats_);
    if (rank_ == 0) {
      hub_.accumulator.assign(acc.begin(), acc.end());
      hub_.PassTurn(0);
    }
    hub_.WaitForTurn(rank_);
    PIMOPT_CHECK(hub_.accumulator.size() == acc.size(), "OrderedSum with different sizes on different ranks");
    const std::span<float> shared(hub_.accumulator);
    for (size_t at = 0; at < shared.size(); at += kChunkFloats) {
      fold_local(shared.subspan(at, std::min(kChunkFloats, shared.size() - at)), at);
    }
    stats_.sent_bytes += 4 * acc.size() * (rank_ + 1 < hub_.size ? 1 : 2);  // on, and the result back
    hub_.PassTurn(rank_ + 1);
    hub_.Rendezvous();  // every rank has folded
    std::copy(shared.begin(), shared.end(), acc.begin());
    hub_.Rendezvous();  // every rank has its copy: the accumulator may be reused
  }

  void AllreduceSum(std::span<int64_t> values) override { Reduce(values, [](int64_t a, int64_t b) { return a + b; }); }
  void AllreduceMin(std::span<float> values) override {
    Reduce(values, [](float a, float b) { return std::min(a, b); });
  }
  void AllreduceMax(std::span<float> values) override {
    Reduce(values, [](float a, float b) { return std::max(a, b); });
  }

  double SumInRankOrder(double local) override {
    const CollectiveTimer timer(stats_);
    Post(std::as_bytes(std::span<const double>(&local, 1)));
    hub_.Rendezvous();
    double sum = 0;
    for (int r = 0; r < hub_.size; ++r) sum += Posted<double>(r)[0];
    hub_.Rendezvous();
    return sum;
  }

  void Broadcast(std::span<std::byte> bytes, int root) override {
    const CollectiveTimer timer(stats_);
    PIMOPT_CHECK(root >= 0 && root < hub_.size);
    Post(bytes);
    hub_.Rendezvous();
    const auto source = hub_.posted[root];
    PIMOPT_CHECK(source.size() == bytes.size(), "Broadcast with different sizes on different ranks");
    if (rank_ != root) std::memcpy(bytes.data(), source.data(), bytes.size());
    if (rank_ == root) stats_.sent_bytes += bytes.size();
    hub_.Rendezvous();
  }

  std::vector<std::byte> Gather(std::span<const std::byte> local, int root) override {
    const CollectiveTimer timer(stats_);
    PIMOPT_CHECK(root >= 0 && root < hub_.size);
    Post(local);
    hub_.Rendezvous();
    std::vector<std::byte> all;
    if (rank_ == root) {
      for (int r = 0; r < hub_.size; ++r) all.insert(all.end(), hub_.posted[r].begin(), hub_.posted[r].end());
    } else {
      stats_.sent_bytes += local.size();
    }
    hub_.Rendezvous();
    return all;
  }

  void Barrier() override {
    const CollectiveTimer timer(stats_);
    hub_.Rendezvous();
  }

  CommStats stats() const override { return stats_; }

 private:
  void Post(std::span<const std::byte> bytes) {
    std::lock_guard<std::mutex> lock(hub_.mutex);
    hub_.posted[rank_] = bytes;
  }
  template <typename T>
  std::span<const T> Posted(int r) const {
    const auto bytes = hub_.posted[r];
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  // Elementwise reduction over the ranks' values in rank order (exact for integers, minima and maxima).
  template <typename T, typename Op>
  void Reduce(std::span<T> values, Op op) {
    const CollectiveTimer timer(stats_);
    Post(std::as_bytes(std::span<const T>(values)));
    hub_.Rendezvous();
    std::vector<T> result(Posted<T>(0).begin(), Posted<T>(0).end());
    for (int r = 1; r < hub_.size; ++r) {
      const auto other = Posted<T>(r);
      PIMOPT_CHECK(other.size() == result.size(), "a reduction with different sizes on different ranks");
      for (size_t i = 0; i < result.size(); ++i) result[i] = op(result[i], other[i]);
    }
    stats_.sent_bytes += sizeof(T) * values.size();
    hub_.Rendezvous();
    std::copy(result.begin(), result.end(), values.begin());
  }

  Hub& hub_;
  const int rank_;
  CommStats stats_;
};

InProcessGroup::InProcessGroup(int ranks) {
  PIMOPT_CHECK(ranks >= 1);
  hub_ = std::make_unique<Hub>(ranks);
}

InProcessGroup::~InProcessGroup() = default;

int InProcessGroup::size() const { return hub_->size; }

void InProcessGroup::Run(const std::function<void(Communicator& comm)>& body) {
  {
    std::lock_guard<std::mutex> lock(hub_->mutex);
    hub_->aborted = false;
    hub_->arrived = 0;
    hub_->turn = -1;
  }
  std::vector<std::exception_ptr> errors(hub_->size);
  std::vector<bool> caused(hub_->size, false);  // the rank raised the error itself (not GroupAborted)
  std::vector<std::thread> threads;
  for (int r = 0; r < hub_->size; ++r) {
    threads.emplace_back([&, r] {
      RankCommunicator comm(*hub_, r);
      try {
        body(comm);
      } catch (const GroupAborted&) {
        errors[r] = std::current_exception();
      } catch (...) {
        errors[r] = std::current_exception();
        caused[r] = true;
        hub_->Abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < hub_->size; ++r) {
    if (caused[r]) std::rethrow_exception(errors[r]);
  }
  for (int r = 0; r < hub_->size; ++r) {
    if (errors[r]) std::rethrow_exception(errors[r]);
  }
}

}  // namespace pimopt
