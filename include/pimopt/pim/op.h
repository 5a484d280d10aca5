// The operation classes of a DPU program's work: what the operand types (dpu_types.h) and the DPU pass
// (tools/dpu/dpu_pass.cc) count, and what a profile prices in issue slots (profile.h, the `slots.*` fields). A plain
// header: the DPU pass, built against LLVM, includes it too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pimopt::pim {

enum class Op : uint8_t {
  kInt32Add,    // add/sub/negate/move of <= 32-bit values (also address arithmetic and array indexing)
  kInt32Logic,  // and/or/xor/not
  kInt32Shift,
  kInt64Add,
  kInt64Logic,
  kInt64Shift,
  kMul8,      // native 8x8 -> 16 bit multiply
  kInt32Mul,  // __mulsi3 at PrIM's operands (Charge only; the operand types count kMul32Setup + kMulStep)
  kInt32Div,  // __divsi3 at PrIM's operands (Charge only; the operand types count kDiv32Setup + kDivStep)
  kInt64Mul,
  kInt64Div,
  kFloatAdd,
  kFloatSub,
  kFloatMul,
  kFloatDiv,
  kDoubleAdd,
  kDoubleSub,
  kDoubleMul,
  kDoubleDiv,
  kFloatConvert,  // int <-> float conversions and float compares
  kWramLoad,
  kWramStore,
  kBranch,        // a compare-and-branch (the DPU fuses them)
  kMul32Setup,    // __mulsi3's fixed part: call, operand swap, return
  kMulStep,       // one mul_step: __mulsi3 runs one per bit of its smaller operand
  kDiv32Setup,    // __udivsi3's fixed part
  kDivStep,       // one div_step: one per quotient bit
  kDivSigned,     // __divsi3's sign handling around __udivsi3
  kInt64Compare,  // the extra instruction of a 64-bit compare before its branch
  kCall,          // a call to a function that is not inlined: call, frame, return
  kCount
};
inline constexpr size_t kNumOps = static_cast<size_t>(Op::kCount);
// Each class's name (profiles, reports, and the table a compiled DPU program carries), in the order of Op.
inline constexpr const char* kOpNames[kNumOps] = {
    "int32_add",  "int32_logic",   "int32_shift", "int64_add",  "int64_logic",   "int64_shift",
    "mul8",       "int32_mul",     "int32_div",   "int64_mul",  "int64_div",     "float_add",
    "float_sub",  "float_mul",     "float_div",   "double_add", "double_sub",    "double_mul",
    "double_div", "float_convert", "wram_load",   "wram_store", "branch",        "mul32_setup",
    "mul_step",   "div32_setup",   "div_step",    "div_signed", "int64_compare", "call"};
inline const char* OpName(Op op) { return kOpNames[static_cast<size_t>(op)]; }

}  // namespace pimopt::pim
