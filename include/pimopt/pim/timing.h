// The timing model of pimopt's UPMEM emulator, as a module of its own: pure functions and small classes that know
// nothing of fibers, WRAM or MRAM contents. docs/pim-emulator.md explains every term and the source of every
// constant; tests/pim/timing_test.cc has one test per term.
//
//  - DpuClock: one DPU's clock during a launch, driven by events. Tasklets issue instructions through the revolver
//    pipeline (one instruction per cycle for the whole DPU, one per `revolver_cycles` for a tasklet), wait for their
//    DMAs, which queue on the DPU's one DMA engine (latency and engine occupancy are separate constants), spin on
//    taken mutexes (a spinning tasklet takes issue slots but makes no progress), and block at barriers, handshakes
//    and semaphores until another tasklet releases them. The SDK's synchronization routines are modeled as what
//    they are: short critical sections under an atomic lock.
//  - Transfer and launch models: host <-> DPU copies and dpu_launch's fixed cost, in seconds.
//
// The emulator's scheduler (dpu.cc) runs each tasklet's code natively until its next event, then asks the clock
// which tasklet runs next: tasklets run in the order of modeled time, so a mutex is found taken when, on the
// DPU, it would be taken. The clock can also replay recorded events without running any kernel (the validation's
// fit of the free constants does that).
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "pimopt/pim/kernel.h"
#include "pimopt/pim/profile.h"

namespace pimopt::pim {

// Modeled cycles of one DPU for one launch, by what the DPU was doing (they add up to `total`).
struct DpuCycles {
  double issue = 0;         // the pipeline issued instructions of running tasklets
  double revolver = 0;      // idle issue slots: fewer runnable tasklets than the revolver needs to fill the pipeline
  double dma = 0;           // no tasklet could issue: all waited for their DMAs (engine queue and latency)
  double interference = 0;  // issue slots lost to hazards (issue_stall_cycles) and to the DMA engine moving data
  double sync = 0;          // tasklets spun on taken locks, or were blocked at barriers, handshakes, semaphores
  double total = 0;         // the launch's cycles on this DPU: the last tasklet's end
};

namespace timing {

// A misuse of a synchronization object by one tasklet (a mutex unlocked by another tasklet, locked twice).
class TaskletError : public PimError {
 public:
  TaskletError(uint32_t tasklet, const std::string& what) : PimError(what), tasklet_(tasklet) {}
  uint32_t tasklet() const { return tasklet_; }

 private:
  uint32_t tasklet_;
};

// The constants DpuClock uses, in cycles and issue slots (from a HardwareProfile: FromProfile).
struct ClockParams {
  double revolver_cycles = 11;
  double issue_stall_cycles = 0;               // pipeline cycles lost per issued instruction (hazards)
  double dma_read_latency_cycles = 77;         // alpha of a read
  double dma_write_latency_cycles = 61;        // alpha of a write
  double dma_cycles_per_byte = 0.5;            // beta: the latency's part per byte
  double dma_occupancy_cycles = 77;            // the engine's fixed busy time per DMA
  double dma_occupancy_cycles_per_byte = 0.5;  // the engine's busy time per byte
  double dma_pipeline_stall = 0;               // share of issue slots lost while the engine is busy
  double dma_issue_slots = 0;                  // mram_read / mram_write beyond the latency (PrIM's alpha includes ldma)
  double lock_acquire_slots = 1;               // one acquire (repeated while the lock is taken)
  double lock_release_slots = 1;
  double barrier_call_slots = 4;        // barrier_wait's call and prologue
  double barrier_critical_slots = 10;   // each arrival's work under the barrier's lock
  double barrier_resume_slots = 4;      // the last arrival, per waiter it resumes
  double sync_return_slots = 3;         // epilogue and return of a synchronization routine
  double handshake_critical_slots = 5;  // notify / wait_for under the notifier's lock
  double semaphore_critical_slots = 6;  // take / give under the semaphore's lock
  double read_clock_slots = 2;          // perfcounter_get
  double spin_limit_cycles = 1e7;       // a spin-wait without progress for this long is an error
};
ClockParams FromProfile(const HardwareProfile& p);

// What a tasklet does at the end of a run of instructions.
enum class EventKind : uint8_t {
  kDmaRead,          // a = bytes
  kDmaWrite,         // a = bytes
  kMutexLock,        // a = mutex
  kMutexUnlock,      // a = mutex
  kBarrier,          // a = barrier, b = participants
  kHandshakeNotify,  //
  kHandshakeWait,    // a = notifier tasklet; result 0, or kHandshakeAlready
  kSemTake,          // a = semaphore
  kSemGive,          // a = semaphore
  kYield,            // nothing: lets other tasklets run (their code, not modeled time)
  kSpinYield,        // the tasklet reads shared WRAM in a loop (pim::Volatile): checked for progress
  kReadClock,        // result = the cycle at which the instruction issues
  kExit,             // the tasklet's main returned
};
inline constexpr uint64_t kHandshakeAlready = 114;  // EALREADY: another tasklet already waits for that notifier
const char* EventName(EventKind kind);

struct Event {
  EventKind kind = EventKind::kYield;
  uint32_t a = 0;
  uint32_t b = 0;
};

// Synchronization objects are numbered below this (the DPU has 256 atomic bits).
inline constexpr uint32_t kMaxSyncObjects = 256;

// Whether a tasklet's code may run on past this event before the clock reaches it: an event blocks when what
// follows it depends on its order among the tasklets (taking a mutex, a barrier, a handshake, a semaphore, a
// yield that lets other tasklets change shared WRAM) or on its result (the cycle counter). A DMA, a mutex unlock
// and a semaphore give only hand the clock work: the emulator's scheduler runs a tasklet past them and queues them
// (docs/pim-emulator.md "The batched scheduler").
bool EventBlocks(EventKind kind);

// One DPU's clock for one launch of `tasklets` tasklets. Use:
//   for (;;) {
//     if (clock.Advance() != DpuClock::State::kReady) break;       // finished, deadlocked or spinning forever
//     const uint32_t t = clock.NextReady();
//     ... run tasklet t until its next event: `slots` issue slots, then `event` ...
//     clock.Submit(t, slots, event);
//   }
// All tasklets are ready at cycle 0. Deterministic: simultaneous events are taken in tasklet order, unless a
// seed is given, which shuffles that order (to flush out kernels that depend on it: races).
//
// Between two events every computing tasklet issues at the same rate, so modeled time moves from one event to the
// next in closed form: the next end of a run of instructions (kept in a priority queue by its virtual end), the
// next DMA completion (a priority queue by cycle) or the DMA engine going idle, whichever is first. Each event is
// a short program of micro-operations (issue slots, take or release a lock, start a DMA, arrive at a barrier, ...)
// from a table (EventProgram in timing.cc).
class DpuClock {
 public:
  enum class State { kReady, kFinished, kDeadlock, kSpinStall };

  DpuClock(const ClockParams& params, uint32_t tasklets, uint64_t shuffle_seed = 0);
  // Starts over, as if newly constructed (keeps the memory it has: a host thread reuses one clock for its DPUs).
  void Reset(const ClockParams& params, uint32_t tasklets, uint64_t shuffle_seed = 0);
  // Initial counts of semaphores (index = semaphore); others start at 0.
  void SetSemaphores(const std::vector<int32_t>& initial_counts);
  // The counts of the first `n` semaphores now (at a launch's end: what the next launch starts from).
  std::vector<int32_t> SemaphoreCounts(size_t n) const;

  // Moves modeled time on until a tasklet is ready to run (kReady), every tasklet has ended (kFinished), no
  // tasklet can ever run again (kDeadlock), or tasklets spin on shared WRAM with nothing left that could change it
  // for spin_limit_cycles (kSpinStall). Describe() then says which tasklets wait for what.
  State Advance();
  // A ready tasklet, to run now (the first in tasklet order, or a shuffled pick).
  uint32_t NextReady();
  // The ready tasklet `t` issued `slots` issue slots since its last event, then does `event`.
  void Submit(uint32_t t, double slots, const Event& event);
  // The result of tasklet t's last event (kReadClock: the cycle; kHandshakeWait: 0 or kHandshakeAlready).
  uint64_t Result(uint32_t t) const { return tasklets_[t].result; }

  double now() const { return now_; }
  uint32_t tasklets() const { return static_cast<uint32_t>(tasklets_.size()); }
  // The breakdown so far (complete once Advance returned kFinished).
  DpuCycles Cycles() const;
  uint64_t dmas() const { return dmas_; }
  uint64_t lock_contentions() const { return contentions_; }
  uint64_t barrier_waits() const { return barrier_waits_; }
  // Which tasklets wait, and on what (for deadlock and spin errors).
  std::string Describe() const;

 private:
  struct Programs;  // what each event does: its micro-operations (timing.cc)
  friend const char* EventName(EventKind kind);
  friend bool EventBlocks(EventKind kind);
  enum class Phase : uint8_t { kReady, kCompute, kSpinLock, kDma, kBlocked, kDone };
  enum class Block : uint8_t { kNone, kBarrier, kNotify, kWaitFor, kSemaphore };
  struct Op {
    enum Kind : uint8_t {
      kCompute,
      kDma,
      kAcquire,
      kRelease,
      kBarrierArrive,
      kBarrierWake,
      kNotify,
      kWaitFor,
      kSemTake,
      kSemGive,
      kReadClock,
      kSpinCheck,
      kBlock,  // a = object, b = the Block kind
      kExit
    } kind;
    bool write = false;
    uint32_t a = 0, b = 0;
    double slots = 0;
  };
  // What remains of a tasklet's current event: a few micro-operations (an event's program and what its
  // synchronization adds: at most 9), consumed in order.
  static constexpr uint32_t kMaxOps = 10;
  struct Tasklet {
    Phase phase = Phase::kReady;
    Block block = Block::kNone;
    bool spin_segment = false;
    uint8_t head = 0, size = 0;
    uint32_t block_on = 0;
    uint64_t result = 0;
    std::array<Op, kMaxOps> ops;
  };
  struct Lock {
    int owner = -1;
    std::vector<uint32_t> waiters;  // FIFO
  };
  struct Barrier {
    uint32_t arrived = 0;
    std::vector<uint32_t> waiting;
  };
  struct Semaphore {
    int64_t count = 0;
    std::vector<uint32_t> waiting;
  };
  // A min-priority queue of (time, tasklet), ties in tasklet order, for the runs of instructions (by virtual end)
  // and the DMAs (by completion cycle) in flight: at most one entry per tasklet. Kept sorted: new entries mostly come
  // last (the DMA engine serves in order; runs of instructions end in about the order they start), so an insertion
  // scans from the back and rarely moves anything.
  class EventQueue {
   public:
    struct Entry {
      double at;
      uint32_t tasklet;
      bool operator<(const Entry& o) const { return at < o.at || (at == o.at && tasklet < o.tasklet); }
    };
    void Clear() {
      entries_.clear();
      head_ = 0;
    }
    bool empty() const { return head_ == entries_.size(); }
    const Entry& top() const { return entries_[head_]; }
    void Push(double at, uint32_t tasklet) {
      const Entry e{at, tasklet};
      if (head_ > 0 && head_ * 2 >= entries_.size()) {  // reuse the popped front
        entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
      size_t i = entries_.size();
      entries_.push_back(e);
      while (i > head_ && e < entries_[i - 1]) {
        entries_[i] = entries_[i - 1];
        --i;
      }
      entries_[i] = e;
    }
    Entry Pop() { return entries_[head_++]; }

   private:
    std::vector<Entry> entries_;
    size_t head_ = 0;
  };
  // Lock numbers, interleaved so that the few a kernel uses are small: user mutexes, one per barrier, one per
  // notifier (the SDK's handshakes lock the notifier's slot), one per semaphore.
  static uint32_t MutexLock(uint32_t m) { return 4 * m; }
  static uint32_t BarrierLock(uint32_t b) { return 4 * b + 1; }
  static uint32_t HandshakeLock(uint32_t notifier) { return 4 * notifier + 2; }
  static uint32_t SemaphoreLock(uint32_t s) { return 4 * s + 3; }
  // The objects, created on first use (a launch allocates nothing for objects it does not use).
  template <class T>
  static T& At(std::vector<T>& v, uint32_t i) {
    if (i >= v.size()) v.resize(i + 1);
    return v[i];
  }

  void Push(uint32_t t, Op op);
  void Compute(uint32_t t, double slots) { Push(t, Op{Op::kCompute, false, 0, 0, slots}); }
  // Runs tasklet t's remaining ops that take no modeled time, until one does or none is left (then t is ready).
  void Continue(uint32_t t);
  void Wake(uint32_t t);  // a blocked tasklet resumes: the routine's return, then ready
  void StartCompute(uint32_t t, double slots);
  void StartDma(uint32_t t, bool write, uint32_t bytes);
  void CompleteCompute(uint32_t t);
  void CompleteDma(uint32_t t);
  // Completes every run of instructions and DMA due at this step, in tasklet order (shuffled with a seed).
  void CompleteDue(double v_due, double t_due);
  bool RealWorkPending(uint32_t except) const;
  const std::vector<uint32_t>& Order();  // tasklet order for simultaneous events

  ClockParams p_;
  double pipeline_ = 1;  // issue slots per cycle of a full pipeline: 1 / (1 + issue_stall_cycles)
  double stalled_pipeline_ = 1;  // the same while the DMA engine moves data: x (1 - dma_pipeline_stall)
  std::vector<double> rates_;    // a tasklet's issue rate by tasklets issuing (engine idle, then engine busy)
  std::vector<Tasklet> tasklets_;
  std::vector<Lock> locks_;
  std::vector<Barrier> barriers_;
  std::vector<Semaphore> semaphores_;
  std::vector<int> waits_for_;  // handshake: the notifier tasklet t waits for (-1: none)
  double now_ = 0;
  double virtual_ = 0;  // issue slots each computing tasklet has received since cycle 0
  double engine_free_ = 0;
  uint32_t computing_ = 0, spinning_ = 0, ready_ = 0, done_ = 0, dma_waiting_ = 0;
  uint64_t ready_mask_ = 0;  // the ready tasklets (with the priority queues: up to 64 tasklets)
  double progress_ = 0;  // the last cycle a tasklet did something other than spin on shared WRAM
  bool stalled_ = false;
  DpuCycles cycles_;
  uint64_t dmas_ = 0, contentions_ = 0, barrier_waits_ = 0;
  bool shuffle_ = false;
  // The priority queues order up to 64 tasklets by their ids (a bit mask); more, or a shuffled order, scan them.
  bool queued_ = true;
  std::mt19937_64 rng_;
  std::vector<uint32_t> order_;
  // Per tasklet: kCompute's virtual end (the virtual time at which its current run of instructions ends) and
  // kDma's completion cycle; infinity in every other phase.
  std::vector<double> v_end_, t_done_;
  EventQueue compute_ends_, dma_ends_;
  std::vector<EventQueue::Entry> deferred_, deferred_dmas_;  // due, but after the pass's tasklet order
};

// One DPU's events of one launch, as the emulator recorded them: per tasklet, the issue slots before each event and
// the event. The order of a tasklet's own events does not depend on the timing constants (for kernels without
// races), so a recorded launch can be re-timed under other constants without running the kernel again.
struct TraceEvent {
  double slots = 0;
  Event event;
};
struct DpuTrace {
  std::vector<std::vector<TraceEvent>> tasklets;
  std::vector<int32_t> semaphores;
};
// The recorded launch's cycles under `params` (PimError if the trace deadlocks or ends early).
DpuCycles Replay(const ClockParams& params, const DpuTrace& trace);

}  // namespace timing

// Host transfers and launches (seconds): docs/pim-emulator.md "Host transfers".
enum class XferDirection { kToDpu, kFromDpu };
enum class TransferShape : uint8_t { kParallelPush, kBroadcast, kParallelPull };
// A parallel transfer of `bytes_per_dpu` to or from each of `dpus` DPUs (a broadcast: the same bytes to every DPU).
// A push reads its DPUs' host buffers: `sources_per_rank` is how many distinct ones one rank's DPUs have (0: one each,
// the usual case); a buffer pushed to several DPUs (PrIM's BS pushes its one input vector to every DPU) is read from
// the host's caches again, so the bytes the host streams per rank, which set the cache knee, are the distinct ones.
double ModelTransferSeconds(const HardwareProfile& p, TransferShape shape, uint32_t dpus, uint64_t bytes_per_dpu,
                            uint32_t sources_per_rank = 0);
double ModelParallelTransferSeconds(const HardwareProfile& p, XferDirection direction, uint32_t dpus,
                                    uint64_t bytes_per_dpu, uint32_t sources_per_rank = 0);
// The most distinct buffers among the DPUs of one rank (DPUs 64 r .. 64 r + 63; null buffers are not pushed to).
uint32_t SourcesPerRank(const std::vector<const void*>& buffers, uint32_t dpus_per_rank);
double ModelBroadcastSeconds(const HardwareProfile& p, uint32_t dpus, uint64_t bytes);
double ModelSerialTransferSeconds(const HardwareProfile& p, XferDirection direction, uint32_t set_dpus, uint64_t bytes);
double ModelLaunchOverheadSeconds(const HardwareProfile& p, uint32_t dpus);

}  // namespace pimopt::pim
