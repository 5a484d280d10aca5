// What a kernel can do, as on the DPU: handshakes, semaphores, yield, DMAs at unaligned addresses (the low bits
// are ignored and counted) and into stack variables, 32-bit WRAM addresses, the cycle counter, spin-waits that are
// reported instead of hanging, and a seeded resume order that exposes a racy kernel.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "pimopt/pim/system.h"

namespace pimopt::pim {
namespace {

// A kernel whose Main is a lambda; "out" is a host-visible array of 24 uint64.
class Lambda final : public Kernel {
 public:
  Lambda(std::function<void(Tasklet&)> body, uint32_t tasklets = 16, std::vector<int32_t> semaphores = {})
      : body_(std::move(body)), tasklets_(tasklets), semaphores_(std::move(semaphores)) {}
  KernelSpec Spec() const override {
    KernelSpec spec;
    spec.name = "probe";
    spec.tasklets = tasklets_;
    spec.wram_symbols = {{"out", 8 * 24}, {"flag", 8}, {"shared", 8}};
    spec.semaphores = semaphores_;
    return spec;
  }
  void Main(Tasklet& t) override { body_(t); }

 private:
  std::function<void(Tasklet&)> body_;
  uint32_t tasklets_;
  std::vector<int32_t> semaphores_;
};

struct Fixture {
  PimSystem system{MakeProfile("pim-opt"), 1};
  DpuSet set = system.Allocate(1);
  std::vector<uint64_t> Out(uint32_t n = 16) {
    std::vector<uint64_t> v(24);
    set.CopyFrom(0, "out", 0, v.data(), 8 * 24);
    v.resize(n);
    return v;
  }
};

TEST(KernelApi, HandshakeChainPassesAValueAlongTheTasklets) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>([](Tasklet& t) {
    uint64_t* out = t.Wram<uint64_t>("out");
    if (t.me() > 0) {
      EXPECT_EQ(t.HandshakeWaitFor(t.me() - 1), 0);
      out[t.me()] = out[t.me() - 1] + t.me();
    } else {
      out[0] = 100;
    }
    if (t.me() + 1 < t.nr_tasklets()) t.HandshakeNotify();
  }));
  f.set.Launch();
  const std::vector<uint64_t> out = f.Out();
  uint64_t expected = 100;
  for (uint32_t k = 0; k < 16; ++k) {
    expected += k;
    EXPECT_EQ(out[k], expected) << k;
  }
}

TEST(KernelApi, ASecondWaiterForOneNotifierGetsEalready) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        uint64_t* out = t.Wram<uint64_t>("out");
        if (t.me() == 0) {
          for (u32 i = 0; i < 2000; ++i) {  // notify late: both waiters are there first
          }
          t.HandshakeNotify();
        } else {
          out[t.me()] = static_cast<uint64_t>(t.HandshakeWaitFor(0));
        }
      },
      3));
  f.set.Launch();
  const std::vector<uint64_t> out = f.Out(3);
  EXPECT_EQ(out[1], 0u);
  EXPECT_EQ(out[2], static_cast<uint64_t>(Tasklet::kHandshakeAlready));
}

TEST(KernelApi, SemaphoresHandProducersItemsToConsumers) {
  Fixture f;
  // Semaphore 0 counts items (0 at first), semaphore 1 guards the shared counter (1).
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        uint64_t* shared = t.Wram<uint64_t>("shared");
        uint64_t* out = t.Wram<uint64_t>("out");
        if (t.me() < 4) {  // producers
          for (int i = 0; i < 5; ++i) t.SemGive(0);
        } else {  // consumers: 4 x 5 items over 8 tasklets
          for (int i = 0; i < 2 + (t.me() < 8 ? 1 : 0); ++i) {
            t.SemTake(0);
            t.SemTake(1);
            ++*shared;
            t.SemGive(1);
          }
          out[t.me()] = 1;
        }
      },
      12, std::vector<int32_t>{0, 1}));
  f.set.Launch();
  uint64_t shared = 0;
  f.set.CopyFrom(0, "shared", 0, &shared, 8);
  EXPECT_EQ(shared, 20u);
}

TEST(KernelApi, UnalignedDmaIgnoresTheLowBitsAndIsCounted) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        auto* buf = static_cast<uint64_t*>(t.MemAlloc(16));
        t.MramRead(t.MramHeap() + 8 + 5, buf, 8);  // reads the word at heap + 8
        t.Wram<uint64_t>("out")[0] = buf[0];
      },
      1));
  const std::vector<uint64_t> data = {11, 22, 33};
  f.set.CopyTo(0, kMramHeapSymbol, 0, data.data(), 24);
  const LaunchStats s = f.set.Launch();
  EXPECT_EQ(f.Out(1)[0], 22u);
  EXPECT_EQ(s.unaligned_dmas, 1u);
}

TEST(KernelApi, DmaIntoAStackVariable) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        alignas(8) int64_t local = 0;
        t.MramRead(t.MramHeap() + 8 * t.me(), &local, 8);
        t.Wram<uint64_t>("out")[t.me()] = static_cast<uint64_t>(local * 2);
      },
      4));
  const std::vector<int64_t> data = {1, 2, 3, 4};
  f.set.CopyTo(0, kMramHeapSymbol, 0, data.data(), 32);
  f.set.Launch();
  EXPECT_EQ(f.Out(4), (std::vector<uint64_t>{2, 4, 6, 8}));
}

TEST(KernelApi, DmaToHostMemoryOutsideWramAndTheStackIsRefused) {
  Fixture f;
  static uint64_t host_buffer[2];
  f.set.Load(std::make_shared<Lambda>([](Tasklet& t) { t.MramRead(t.MramHeap(), host_buffer, 8); }, 1));
  try {
    f.set.Launch();
    FAIL();
  } catch (const PimError& e) {
    EXPECT_NE(std::string(e.what()).find("neither inside this DPU's WRAM nor on the tasklet's stack"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelApi, WramAddressesAre32BitOffsets) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        auto* out = t.Wram<uint64_t>("out");
        const uint32_t address = t.WramAddress(out + 3);
        EXPECT_EQ(address % 8, 0u);
        EXPECT_LT(address, 64u * 1024);
        *t.WramAt<uint64_t>(address).get() = 77;  // a pointer kept as a 32-bit WRAM address
      },
      1));
  f.set.Launch();
  EXPECT_EQ(f.Out(4)[3], 77u);
}

TEST(KernelApi, TheCycleCounterReadsTheModeledClock) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        auto* out = t.Wram<uint64_t>("out");
        out[0] = t.Cycles();
        for (u32 i = 0; i < 100; ++i) {
        }
        out[1] = t.Cycles();
      },
      1));
  const LaunchStats s = f.set.Launch();
  const std::vector<uint64_t> out = f.Out(2);
  EXPECT_GT(out[1], out[0]);
  EXPECT_GE(out[1] - out[0], 200u * 11);  // 100 iterations of an add and a branch, one tasklet
  EXPECT_LE(out[1], static_cast<uint64_t>(s.slowest.total));
}

TEST(KernelApi, ASpinWaitNothingCanEndIsAnErrorNamingTheTasklet) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        if (t.me() != 1) return;
        Volatile<uint64_t> flag(t.Wram<uint64_t>("flag"));
        while (flag.load() == 0) {
        }
      },
      4));
  try {
    f.set.Launch();
    FAIL();
  } catch (const PimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("spin-wait without progress"), std::string::npos) << m;
    EXPECT_NE(m.find("tasklet 1 spins on shared WRAM"), std::string::npos) << m;
  }
}

TEST(KernelApi, ASpinWaitEndsWhenAnotherTaskletWrites) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        Volatile<uint64_t> flag(t.Wram<uint64_t>("flag"));
        if (t.me() == 0) {
          for (u32 i = 0; i < 3000; ++i) {  // work first, then release the others
          }
          flag = 1;
        } else {
          while (flag.load() == 0) {
          }
          t.Wram<uint64_t>("out")[t.me()] = 1;
        }
      },
      4));
  const LaunchStats s = f.set.Launch();
  EXPECT_EQ(f.Out(4), (std::vector<uint64_t>{0, 1, 1, 1}));
  EXPECT_GT(s.slowest.total, 3000 * 2 * 11 / 2);
}

// Tasklet 0 initializes a shared value that the others read with no barrier: correct only if tasklet 0 runs
// first, which the DPU does not promise. The default order hides the race; shuffled orders expose it.
TEST(KernelApi, AShuffledResumeOrderExposesARacyKernel) {
  auto racy = std::make_shared<Lambda>([](Tasklet& t) {
    auto* shared = t.Wram<uint64_t>("shared");
    if (t.me() == 0) {
      *shared = 42;
    } else {
      t.Yield();
      t.Wram<uint64_t>("out")[t.me()] = *shared;
    }
  });
  auto run = [&](uint64_t seed) {
    Fixture f;
    f.set.SetShuffleSeed(seed);
    f.set.Load(racy);
    f.set.Launch();
    return f.Out();
  };
  const std::vector<uint64_t> plain = run(0);
  for (uint32_t k = 1; k < 16; ++k) EXPECT_EQ(plain[k], 42u);
  bool exposed = false;
  for (uint64_t seed = 1; seed <= 20 && !exposed; ++seed) {
    const std::vector<uint64_t> shuffled = run(seed);
    for (uint32_t k = 1; k < 16; ++k) exposed = exposed || shuffled[k] != 42;
  }
  EXPECT_TRUE(exposed) << "no seed of 20 ran a reader before the writer";
  EXPECT_EQ(run(5), run(5));  // a seed is reproducible
}

TEST(KernelApi, TheOperandTypesChargeTheRunningTasklet) {
  Fixture f;
  f.set.Load(std::make_shared<Lambda>(
      [](Tasklet& t) {
        u32 sum = 0;
        for (u32 i = 0; i < 1000; ++i) sum += i;
        t.Wram<uint64_t>("out")[0] = sum.value();
      },
      1));
  const LaunchStats s = f.set.Launch();
  EXPECT_EQ(f.Out(1)[0], 499500u);
  EXPECT_EQ(s.op_counts[static_cast<size_t>(Op::kInt32Add)], 2000u);
  EXPECT_EQ(s.op_counts[static_cast<size_t>(Op::kBranch)], 1001u);
  // One tasklet issues every 11 cycles: 3,001 slots.
  EXPECT_NEAR(s.slowest.total, 3001 * 11, 1);
}

}  // namespace
}  // namespace pimopt::pim
