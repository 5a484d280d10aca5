// What each construct of the operand types counts (dpu_types.h; the table in docs/pim-emulator.md "What a construct
// costs"). Outside a launch the counts accumulate on this thread, so each test zeroes them and reads them back.
#include "pimopt/pim/dpu_types.h"

#include <gtest/gtest.h>

#include "pimopt/pim/kernel.h"

namespace pimopt::pim {
namespace {

class Counts : public ::testing::Test {
 protected:
  void SetUp() override { tls_op_counts = OpCounts{}; }
  uint64_t Of(Op op) const { return tls_op_counts.n[static_cast<size_t>(op)]; }
  uint64_t Total() const {
    uint64_t s = 0;
    for (uint64_t v : tls_op_counts.n) s += v;
    return s;
  }
};

TEST_F(Counts, AddsAndLogicByWidth) {
  u32 a = 5, b = 7;
  u32 c = a + b;
  EXPECT_EQ(c.value(), 12u);
  EXPECT_EQ(Of(Op::kInt32Add), 1u);
  u64 x = 5, y = 9;
  u64 z = (x - y) ^ y;
  EXPECT_EQ(z.value(), (uint64_t{5} - 9) ^ 9);
  EXPECT_EQ(Of(Op::kInt64Add), 1u);
  EXPECT_EQ(Of(Op::kInt64Logic), 1u);
  EXPECT_EQ(Total(), 3u);
}

TEST_F(Counts, AConstantOperandIsAnImmediate) {
  u32 a = 5;
  u32 b = a + 100;  // one add with an immediate: no extra instruction for the constant
  EXPECT_EQ(b.value(), 105u);
  EXPECT_EQ(Total(), 1u);
  u32 none = 42;  // a plain number is a constant: nothing executes
  EXPECT_EQ(none.value(), 42u);
  EXPECT_EQ(Total(), 1u);
}

TEST_F(Counts, WideningA32BitValueCostsAnInstruction) {
  i32 a = -3;
  i64 b = a;  // the high word is set
  EXPECT_EQ(b.value(), -3);
  EXPECT_EQ(Of(Op::kInt32Add), 1u);
  i64 c = b + a;  // a widened for the 64-bit add
  EXPECT_EQ(c.value(), -6);
  EXPECT_EQ(Of(Op::kInt32Add), 2u);
  EXPECT_EQ(Of(Op::kInt64Add), 1u);
  i32 narrow = Cast<int32_t>(c);  // narrowing takes the low word: free
  EXPECT_EQ(narrow.value(), -6);
  EXPECT_EQ(Total(), 3u);
}

TEST_F(Counts, A32BitMultiplyRunsOneStepPerBitOfTheSmallerOperand) {
  u32 a = 1000, b = 1u << 20;
  EXPECT_EQ((a * b).value(), 1000u << 20);
  EXPECT_EQ(Of(Op::kMul32Setup), 1u);
  EXPECT_EQ(Of(Op::kMulStep), 10u);  // 1000 has 10 bits
  i32 neg = -1;                      // unsigned compare: a negative operand looks large
  EXPECT_EQ((neg * i32(3)).value(), -3);
  EXPECT_EQ(Of(Op::kMulStep), 12u);
  i32 zero = 0;
  EXPECT_EQ((zero * i32(77)).value(), 0);
  EXPECT_EQ(Of(Op::kMulStep), 13u);  // a zero still takes one step: the chain tests after it
  i32 one = 1;
  EXPECT_EQ((one * i32(77)).value(), 77);
  EXPECT_EQ(Of(Op::kMulStep), 14u);
  EXPECT_EQ(Of(Op::kMul32Setup), 4u);
}

TEST_F(Counts, EightBitOperandsUseTheNativeMultiply) {
  i8 a = -7, b = 9;
  EXPECT_EQ((a * b).value(), -63);
  EXPECT_EQ(Of(Op::kMul8), 1u);
  EXPECT_EQ(Of(Op::kMul32Setup), 0u);
}

TEST_F(Counts, AMultiplyByAConstantIsShiftsAndAdds) {
  u32 a = 3;
  EXPECT_EQ((a * 8).value(), 24u);  // a shift
  EXPECT_EQ(Of(Op::kInt32Shift), 1u);
  EXPECT_EQ(Of(Op::kInt32Add), 0u);
  EXPECT_EQ((a * 10).value(), 30u);  // 10 = 8 + 2: two shifts and adds
  EXPECT_EQ(Of(Op::kInt32Shift), 3u);
  EXPECT_EQ(Of(Op::kInt32Add), 2u);
  EXPECT_EQ(Of(Op::kMul32Setup), 0u);
}

TEST_F(Counts, DivisionStepsFollowTheQuotientsLength) {
  u32 a = 1u << 20, b = 3;
  EXPECT_EQ((a / b).value(), (1u << 20) / 3);
  EXPECT_EQ(Of(Op::kDiv32Setup), 1u);
  EXPECT_EQ(Of(Op::kDivStep), 20u);  // clz(3) - clz(2^20) + 1
  EXPECT_EQ(Of(Op::kDivSigned), 0u);
  i32 n = -100, d = 7;
  EXPECT_EQ((n / d).value(), -14);  // toward zero, as C
  EXPECT_EQ((n % d).value(), -2);
  EXPECT_EQ(Of(Op::kDivSigned), 2u);
  u32 small = 2;
  EXPECT_EQ((small / b).value(), 0u);        // dividend below the divisor: no step
  EXPECT_EQ(Of(Op::kDivStep), 20u + 2 * 5);  // 100 / 7: clz(7) - clz(100) + 1 = 5, for / and for %
  EXPECT_EQ((a / 16).value(), 1u << 16);     // by a constant power of two: a shift
  EXPECT_EQ((a % 16).value(), 0u);           // and a mask
  EXPECT_EQ(Of(Op::kDiv32Setup), 4u);
  EXPECT_EQ(Of(Op::kInt32Shift), 1u);
  EXPECT_EQ(Of(Op::kInt32Logic), 1u);
}

TEST_F(Counts, DivisionByZeroIsAFault) {
  u32 a = 5, zero = 0;
  EXPECT_THROW((void)(a / zero), PimError);
  EXPECT_THROW((void)(a % zero), PimError);
}

TEST_F(Counts, ACompareIsAnInstructionOnlyWhenItBranches) {
  u32 a = 3, b = 4;
  const Cond c = a < b;
  EXPECT_EQ(Total(), 0u);
  if (c) {
  }
  EXPECT_EQ(Of(Op::kBranch), 1u);
  u64 x = 1, y = 2;
  if (x == y) {
  }
  EXPECT_EQ(Of(Op::kBranch), 2u);
  EXPECT_EQ(Of(Op::kInt64Compare), 1u);  // 64 bits: one more instruction
  if (a < b && x == y) {                 // && branches per evaluated operand, as in C
  }
  EXPECT_EQ(Of(Op::kBranch), 4u);
  if (a > b && x == y) {
  }
  EXPECT_EQ(Of(Op::kBranch), 5u);  // the second operand was never evaluated
}

TEST_F(Counts, ATypedLoopCostsAnIncrementAndABranchPerIteration) {
  uint32_t sum = 0;
  for (u32 i = 0; i < 10; ++i) sum += i.value();
  EXPECT_EQ(sum, 45u);
  EXPECT_EQ(Of(Op::kInt32Add), 10u);
  EXPECT_EQ(Of(Op::kBranch), 11u);
  for (uint32_t j = 0; j < 10; ++j) sum += j;  // a plain loop is unrolled at compile time: free
  EXPECT_EQ(Of(Op::kInt32Add), 10u);
}

TEST_F(Counts, WramAccessesAreLoadsStoresAndAddresses) {
  int32_t buffer[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  WramPtr<int32_t> p(buffer);
  i32 v = p[2];  // constant offset: a load
  EXPECT_EQ(v.value(), 3);
  EXPECT_EQ(Of(Op::kWramLoad), 1u);
  EXPECT_EQ(Of(Op::kInt32Add), 0u);
  u32 i = 5;
  p[i] = v;  // run-time index: the address, then a store
  EXPECT_EQ(buffer[5], 3);
  EXPECT_EQ(Of(Op::kInt32Add), 1u);
  EXPECT_EQ(Of(Op::kWramStore), 1u);
  p[0] += 10;  // load, add, store
  EXPECT_EQ(buffer[0], 11);
  EXPECT_EQ(Of(Op::kWramLoad), 2u);
  EXPECT_EQ(Of(Op::kInt32Add), 2u);
  EXPECT_EQ(Of(Op::kWramStore), 2u);
  i32 s = p[0] + p[1];  // elements in expressions are loaded
  EXPECT_EQ(s.value(), 13);
  EXPECT_EQ(Of(Op::kWramLoad), 4u);
  EXPECT_EQ(Load(&buffer[7]).value(), 8);
  Store(&buffer[6], 60);
  EXPECT_EQ(buffer[6], 60);
  EXPECT_EQ(Of(Op::kWramLoad), 5u);
  EXPECT_EQ(Of(Op::kWramStore), 3u);
}

TEST_F(Counts, FloatingPointIsTheSoftwareRoutines) {
  f32 a = 1.5f, b = 2.0f;
  f32 c = a * b + a;
  EXPECT_FLOAT_EQ(c.value(), 4.5f);
  EXPECT_EQ(Of(Op::kFloatMul), 1u);
  EXPECT_EQ(Of(Op::kFloatAdd), 1u);
  f64 d = 3.0;
  EXPECT_DOUBLE_EQ((d / 2.0).value(), 1.5);
  EXPECT_EQ(Of(Op::kDoubleDiv), 1u);
  i32 n = 7;
  EXPECT_EQ(f32(n).To<int32_t>().value(), 7);
  EXPECT_EQ(Of(Op::kFloatConvert), 2u);
  if (a < b) {
  }
  EXPECT_EQ(Of(Op::kFloatConvert), 3u);
}

TEST_F(Counts, CallsAreCountedWhereAKernelSaysSo) {
  CountCall();
  EXPECT_EQ(Of(Op::kCall), 1u);
}

TEST_F(Counts, ShiftsKeepTheLeftOperandsWidth) {
  u64 x = 1;
  EXPECT_EQ((x << 40).value(), uint64_t{1} << 40);
  EXPECT_EQ(Of(Op::kInt64Shift), 1u);
  u32 y = 0x80000000u;
  u32 k = 4;
  EXPECT_EQ((y >> k).value(), 0x08000000u);
  EXPECT_EQ(Of(Op::kInt32Shift), 1u);
}

}  // namespace
}  // namespace pimopt::pim
