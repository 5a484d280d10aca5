// What a PIM machine did, as it recorded it: every host <-> DPU transfer of its DPUs, under the tag its caller gave
// (a PrIM program's timer column, the PIM backend's activity and transfer kind), counted by shape. With it goes the
// one function that times a transfer (ModelTransferSeconds of a TransferVerb): the emulator's verbs time themselves
// with it as they run, `pimopt validate` re-times a PrIM run's log under each fold's constants, and the PIM backend
// re-times its training transfers at another DPU count (--project-dpus, plan). docs/pim-emulator.md "The machine's
// log".
#pragma once

#include <compare>
#include <cstdint>
#include <map>

#include "pimopt/pim/profile.h"
#include "pimopt/pim/timing.h"

namespace pimopt::pim {

// One host <-> DPU transfer as the timing model sees it.
struct TransferVerb {
  enum class Kind : uint8_t {
    kPush,       // dpu_push_xfer to the DPUs: `dpus` prepared buffers of `bytes_per_dpu` each
    kPull,       // dpu_push_xfer from the DPUs
    kBroadcast,  // dpu_broadcast_to: one buffer to each of `dpus`
    kCopyTo,     // dpu_copy_to: one DPU of a set of `dpus` (a serial copy's cost depends on the set's size)
    kCopyFrom,   // dpu_copy_from
  };
  Kind kind = Kind::kPush;
  uint32_t dpus = 0;
  uint64_t bytes_per_dpu = 0;
  // A push: the distinct host buffers of the rank that has the most, which set the host cache's knee (0: one per
  // DPU, the usual case; a buffer pushed to several DPUs, as PrIM's BS does, is read again from the caches).
  uint32_t sources_per_rank = 0;

  bool to_dpu() const { return kind == Kind::kPush || kind == Kind::kBroadcast || kind == Kind::kCopyTo; }
  bool serial() const { return kind == Kind::kCopyTo || kind == Kind::kCopyFrom; }
  // The bytes it moves between the host and the DPUs (a serial copy: one DPU's).
  uint64_t bytes() const { return serial() ? bytes_per_dpu : uint64_t{dpus} * bytes_per_dpu; }
  auto operator<=>(const TransferVerb&) const = default;
};

// The transfer's modeled seconds under `profile` (timing.h's transfer models: ModelParallelTransferSeconds,
// ModelBroadcastSeconds, ModelSerialTransferSeconds).
double ModelTransferSeconds(const HardwareProfile& profile, const TransferVerb& verb);

// A machine's transfers by tag and shape, and how often each happened. Iterated in the keys' order (tag first).
class MachineLog {
 public:
  struct Key {
    uint32_t tag = 0;
    TransferVerb verb;
    auto operator<=>(const Key&) const = default;
  };
  void Add(uint32_t tag, const TransferVerb& verb) { ++transfers_[{tag, verb}]; }
  void Merge(const MachineLog& other) {
    for (const auto& [key, times] : other.transfers_) transfers_[key] += times;
  }
  const std::map<Key, uint64_t>& transfers() const { return transfers_; }

 private:
  std::map<Key, uint64_t> transfers_;
};

}  // namespace pimopt::pim
