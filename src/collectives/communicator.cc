#include "pimopt/collectives/communicator.h"

#include <exception>

#include "pimopt/core/error.h"

namespace pimopt {

void Communicator::BroadcastString(std::string& text, int root) {
  uint64_t n = text.size();
  BroadcastValue(n, root);
  text.resize(n);
  Broadcast(std::as_writable_bytes(std::span<char>(text.data(), text.size())), root);
}

std::vector<std::byte> Communicator::AllGather(std::span<const std::byte> local) {
  std::vector<std::byte> all = Gather(local, 0);
  uint64_t n = all.size();
  BroadcastValue(n, 0);
  all.resize(n);
  Broadcast(all, 0);
  return all;
}

uint64_t Communicator::SumU64(uint64_t local) {
  int64_t v = static_cast<int64_t>(local);
  AllreduceSum(std::span<int64_t>(&v, 1));
  return static_cast<uint64_t>(v);
}

void Communicator::RunOnRoot(const std::function<void()>& work, int root) {
  int32_t ok = 1;
  std::string error;
  std::exception_ptr failure;
  if (rank() == root) {
    try {
      work();
    } catch (const Error& e) {
      ok = 0;
      error = e.what();
      failure = std::current_exception();
    }
  }
  BroadcastValue(ok, root);
  if (ok) return;
  BroadcastString(error, root);
  if (failure) std::rethrow_exception(failure);
  throw InputError(error);
}

Communicator& SingleProcess() {
  static LocalCommunicator local;
  return local;
}

}  // namespace pimopt
