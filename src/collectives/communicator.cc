#include "pimopt/collectives/communicator.h"

namespace pimopt {

void Communicator::BroadcastString(std::string& text, int root) {
  uint64_t n = text.size();
  BroadcastValue(n, root);
  text.resize(n);
  Broadcast(std::as_writable_bytes(std::span<char>(text.data(), text.size())), root);
}

uint64_t Communicator::SumU64(uint64_t local) {
  int64_t v = static_cast<int64_t>(local);
  AllreduceSum(std::span<int64_t>(&v, 1));
  return static_cast<uint64_t>(v);
}

Communicator& SingleProcess() {
  static LocalCommunicator local;
  return local;
}

}  // namespace pimopt
