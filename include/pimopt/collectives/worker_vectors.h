// Every worker's vector in global worker order, as a step that reads other workers' vectors needs them (a gossip
// step's neighbours): this process's own in one process, or under MPI every process's gathered by one all-gather
// of this process's workers' vectors. Written once for every backend and number format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "pimopt/collectives/communicator.h"
#include "pimopt/core/error.h"

namespace pimopt {

template <typename T>
class AllWorkerVectors {
 public:
  // `local[k]` is this process's k-th worker's vector (at least `width` elements); `first_worker` its global index.
  AllWorkerVectors(Communicator& comm, const std::vector<std::vector<T>>& local, size_t width, int first_worker,
                   uint32_t total_workers)
      : local_(local), width_(width), first_worker_(first_worker) {
    if (comm.size() == 1) return;
    std::vector<T> mine(local.size() * width);
    for (size_t k = 0; k < local.size(); ++k) std::memcpy(mine.data() + k * width, local[k].data(), width * sizeof(T));
    const std::vector<std::byte> all = comm.AllGather(std::as_bytes(std::span<const T>(mine)));
    PIMOPT_CHECK(all.size() == sizeof(T) * width * total_workers, "the gathered workers' vectors");
    gathered_.resize(width * total_workers);
    std::memcpy(gathered_.data(), all.data(), all.size());
  }
  // Worker `global_worker`'s vector.
  const T* operator()(uint32_t global_worker) const {
    if (gathered_.empty()) return local_[global_worker - first_worker_].data();
    return gathered_.data() + size_t{global_worker} * width_;
  }

 private:
  const std::vector<std::vector<T>>& local_;
  size_t width_;
  int first_worker_;
  std::vector<T> gathered_;
};

}  // namespace pimopt
