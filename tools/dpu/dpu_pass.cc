// pimopt's DPU pass: an LLVM pass plugin (new pass manager, LLVM 14 or newer) that makes a DPU C program, compiled
// natively by clang, run on pimopt's UPMEM emulator with the DPU's costs (docs/pim-emulator.md "DPU C programs").
//
// What it does to the module:
//  1. WRAM globals (every global the program defines that is not in MRAM) move into the running DPU's WRAM image:
//     each use becomes the image's base (__pimopt_dpu_wram_base(), the DPU whose tasklet runs) plus the global's
//     offset, so one compiled program serves any number of DPUs, each with its own globals. The layout is the
//     emulator's (8-aligned, in definition order, from WRAM address 0).
//  2. MRAM globals (section ".mram", the headers' __mram and __mram_noinit) get MRAM addresses from 0, 8-aligned;
//     their uses become those addresses (MRAM is reached only through DMA, as on the DPU).
//  3. Every basic block is charged its issue slots by operation class (the emulator's Op table, op.h), into counts
//     each function keeps in locals and adds to the emulator's per-thread counters (tls_op_counts, the ones the
//     operand types add to) before each call that may reach an event and at each return. A multiply by a run-time
//     operand stays the host's multiply and adds the DPU routine's data-dependent steps, computed from its
//     operands; a divide becomes a call that counts its steps (__pimopt_dpu_udiv32, ...).
//  4. Loads and stores through __mram_ptr become DMAs; printf writes the DPU's log; SDK calls get their source line.
// A table of the symbols (name, WRAM or MRAM, offset, size, initial bytes) is emitted as __pimopt_dpu_symbols for
// the loader (src/pim/native_program.cc).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Constants.h"
#include "llvm/Support/KnownBits.h"
#include "pimopt/pim/op.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

// The emulator's operation classes (pimopt/pim/op.h). The loader also checks the names a program carries
// (__pimopt_dpu_op_names) against its own, so a program built by another pimopt is refused, not mis-timed.
using pimopt::pim::Op;
constexpr uint32_t kNumOpCodes = static_cast<uint32_t>(pimopt::pim::kNumOps);
constexpr uint32_t Code(Op op) { return static_cast<uint32_t>(op); }
constexpr uint32_t kInt32Add = Code(Op::kInt32Add), kInt32Logic = Code(Op::kInt32Logic),
                   kInt32Shift = Code(Op::kInt32Shift), kInt64Add = Code(Op::kInt64Add),
                   kInt64Logic = Code(Op::kInt64Logic), kInt64Shift = Code(Op::kInt64Shift),
                   kFloatAdd = Code(Op::kFloatAdd), kFloatSub = Code(Op::kFloatSub), kFloatMul = Code(Op::kFloatMul),
                   kFloatDiv = Code(Op::kFloatDiv), kDoubleAdd = Code(Op::kDoubleAdd),
                   kDoubleSub = Code(Op::kDoubleSub), kDoubleMul = Code(Op::kDoubleMul),
                   kDoubleDiv = Code(Op::kDoubleDiv), kFloatConvert = Code(Op::kFloatConvert),
                   kWramLoad = Code(Op::kWramLoad), kWramStore = Code(Op::kWramStore), kBranch = Code(Op::kBranch),
                   kInt64Compare = Code(Op::kInt64Compare), kCall = Code(Op::kCall),
                   kInt64Mul = Code(Op::kInt64Mul), kMul32Setup = Code(Op::kMul32Setup),
                   kMulStep = Code(Op::kMulStep), kMul8 = Code(Op::kMul8), kInt64Div = Code(Op::kInt64Div);

// The emulator's per-thread operation counters (pimopt::pim::tls_op_counts in dpu_types.h), by mangled name.
constexpr const char* kCountersSymbol = "_ZN6pimopt3pim13tls_op_countsE";

bool Wide(const Type* t) {
  t = t->getScalarType();
  return t->isIntegerTy() && t->getIntegerBitWidth() > 32;
}

// A 64-bit value whose high word nothing observes: it only indexes memory (a GEP index: the DPU's addresses are
// 32-bit), is truncated to 32 bits or less, or flows (through additions, extensions and loop phis) into such uses
// only. The host's 64-bit addresses make LLVM widen a 32-bit index and its arithmetic; on the DPU they stay one
// 32-bit register. A cycle of phis is decided by its other uses.
bool HighWordUnobserved(const Instruction& i, SmallPtrSetImpl<const Instruction*>& seen) {
  if (!seen.insert(&i).second) return true;
  if (i.use_empty() || seen.size() > 32) return false;
  for (const Use& use : i.uses()) {
    const auto* user = dyn_cast<Instruction>(use.getUser());
    if (user == nullptr) return false;
    switch (user->getOpcode()) {
      case Instruction::GetElementPtr:
        if (use.getOperandNo() == 0) return false;  // the base address, not an index
        break;
      case Instruction::Trunc:
        if (user->getType()->getScalarSizeInBits() > 32) return false;
        break;
      case Instruction::Add:
      case Instruction::Sub:
      case Instruction::ZExt:
      case Instruction::SExt:
      case Instruction::PHI:
        if (!HighWordUnobserved(*user, seen)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
bool HighWordUnobserved(const Instruction& i) {
  SmallPtrSet<const Instruction*, 8> seen;
  return HighWordUnobserved(i, seen);
}

// The address space of the SDK's __mram_ptr (dpu/include/attributes.h).
constexpr unsigned kMramAddressSpace = 255;

// printf and what clang makes of it (puts, putchar) write to the DPU's log buffer, which the host reads with
// dpu_log_read: renamed to the runtime's __pimopt_dpu_printf, ... .
bool IsLog(const Function* f) {
  const StringRef n = f->getName();
  return n == "__pimopt_dpu_printf" || n == "__pimopt_dpu_puts" || n == "__pimopt_dpu_putchar";
}

// The SDK's DPU API that the runtime implements: its DMAs and synchronizations are the emulator's events (timed by its
// clock; on the DPU they are inline code or a few instructions), and most have rules the emulator checks.
struct SdkCall {
  const char* name;
  bool checked;  // its rule violations are reported: the pass tells the runtime its source line first
};
constexpr SdkCall kSdkCalls[] = {
    {"mram_read", true},         {"mram_write", true},       {"mem_alloc", true},      {"mem_reset", false},
    {"barrier_wait", true},      {"mutex_lock", true},       {"mutex_unlock", true},   {"sem_take", true},
    {"sem_give", true},          {"handshake_notify", true}, {"handshake_wait_for", true},
    {"perfcounter_config", false}, {"perfcounter_get", false}};
const SdkCall* FindSdkCall(const Function* f) {
  if (f == nullptr) return nullptr;
  for (const SdkCall& call : kSdkCalls) {
    if (f->getName() == call.name) return &call;
  }
  return nullptr;
}

bool IsChecked(const Function* f) {
  const SdkCall* call = FindSdkCall(f);
  return call != nullptr ? call->checked : f != nullptr && f->getName().startswith("__pimopt_dpu_mram_");
}

// The runtime's hooks whose value is fixed for the whole run of a tasklet (its DPU's WRAM image and MRAM heap, its
// index): declared free of memory effects, so that the optimizer hoists them out of loops and merges repeated calls.
constexpr const char* kTaskletConstants[] = {"__pimopt_dpu_wram_base", "__pimopt_dpu_me", "__pimopt_dpu_mram_heap"};
bool IsTaskletConstant(const Function* f) {
  return f != nullptr && std::any_of(std::begin(kTaskletConstants), std::end(kTaskletConstants),
                                     [&](const char* name) { return f->getName() == name; });
}

// The runtime's 32-bit divide routines, by the opcode they replace (udiv, sdiv, urem, srem): they count their own
// steps (__udivsi3's, ...) and reach no event.
constexpr const char* kDivideRoutines[] = {"__pimopt_dpu_udiv32", "__pimopt_dpu_sdiv32", "__pimopt_dpu_urem32",
                                           "__pimopt_dpu_srem32"};
// built_ins.h's 8 x 8 multiply: it counts its slot itself and reaches no event. A call whose byte selection is a
// constant (every use of the builtins' macros) is charged here and replaced by the multiply itself (InlineMultiplies).
constexpr const char* kMultiplyBuiltin = "__pimopt_dpu_mul8";

bool IsConstantMultiplyBuiltin(const CallInst& call) {
  const Function* f = call.getCalledFunction();
  return f != nullptr && f->getName() == kMultiplyBuiltin && call.arg_size() == 3 &&
         isa<ConstantInt>(call.getArgOperand(2));
}

// Each counted call of the multiply builtin with constant byte selects becomes the product of the two bytes it
// selects (built_ins.h: 1 the first operand's byte signed, 2 its high byte, 4 and 8 the same of the second): native
// code, with the count already charged to its block.
void InlineMultiplies(Module& m) {
  std::vector<CallInst*> calls;
  for (Function& f : m) {
    for (BasicBlock& b : f) {
      for (Instruction& i : b) {
        if (auto* call = dyn_cast<CallInst>(&i); call != nullptr && IsConstantMultiplyBuiltin(*call)) {
          calls.push_back(call);
        }
      }
    }
  }
  for (CallInst* call : calls) {
    IRBuilder<> builder(call);
    const uint64_t selects = cast<ConstantInt>(call->getArgOperand(2))->getZExtValue();
    auto byte = [&](Value* v, bool is_signed, bool high) {
      Value* narrow = builder.CreateTrunc(high ? builder.CreateLShr(v, 8) : v, builder.getInt8Ty());
      return is_signed ? builder.CreateSExt(narrow, builder.getInt32Ty()) : builder.CreateZExt(narrow, builder.getInt32Ty());
    };
    Value* product = builder.CreateMul(byte(call->getArgOperand(0), (selects & 1) != 0, (selects & 2) != 0),
                                       byte(call->getArgOperand(1), (selects & 4) != 0, (selects & 8) != 0));
    call->replaceAllUsesWith(product);
    call->eraseFromParent();
  }
}

// Calls before which the counts need not be in the per-thread counters: intrinsics, the tasklet constants, the
// source-line hook, the divide routines and the multiply builtin (they add to the counters themselves and reach no
// event).
bool CannotReachEvent(const Function* f) {
  if (f == nullptr) return false;
  if (f->isIntrinsic()) return true;
  if (IsTaskletConstant(f)) return true;
  const StringRef n = f->getName();
  for (const char* name : kDivideRoutines) {
    if (n == name) return true;
  }
  return n == "__pimopt_dpu_at" || n == kMultiplyBuiltin;
}

// "file.c:LINE" of an instruction (pimopt-dpu-cc compiles with line tables), or "" without one.
std::string Where(const Instruction& i) {
  const DebugLoc& loc = i.getDebugLoc();
  if (!loc) return "";
  std::string file = loc->getFilename().str();
  const size_t slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(loc->getLine());
}

// Where(i), or the name of its function when it has no line (for a diagnostic).
std::string WhereOrFunction(const Instruction& i) {
  const std::string where = Where(i);
  return where.empty() ? i.getFunction()->getName().str() : where;
}

// Calls that cost no call instruction: the pass's hooks, LLVM's intrinsics, and the SDK's API.
bool IsRuntime(const Function* f) {
  if (f == nullptr) return false;
  if (FindSdkCall(f) != nullptr) return true;
  if (IsLog(f)) return false;  // printf is code on the DPU: a call
  return f->getName().startswith("__pimopt_dpu_") || f->isIntrinsic();
}

// A 64-bit value whose high 32 bits are known to be zero (a 32-bit value zero-extended, a mask): the DPU's code
// generation splits a 64-bit operation into its halves and folds the half that is constant, as the operand types
// count a 64-bit operation only where both halves are live.
bool HighHalfKnownZero(const Value& v, const DataLayout& layout) {
  return v.getType()->isIntegerTy(64) && computeKnownBits(&v, layout).countMinLeadingZeros() >= 32;
}

// The issue slots of an LLVM intrinsic the optimizer made of the program's code (a min, a rotate, a count of bits:
// the DPU's instructions for it); the ones that are no code (debug values, lifetimes, assumptions) cost nothing.
// Copies and fills are charged by the caller, per word.
void CountIntrinsic(const IntrinsicInst& call, std::vector<uint64_t>& counts) {
  const Type* t = call.getType();
  const bool wide = Wide(t);
  switch (call.getIntrinsicID()) {
    case Intrinsic::umin:
    case Intrinsic::umax:
    case Intrinsic::smin:
    case Intrinsic::smax:
    case Intrinsic::abs:  // a compare and a select (as a select is charged)
      counts[wide ? kInt64Add : kInt32Add] += 2;
      break;
    case Intrinsic::ctlz:   // clz
    case Intrinsic::ctpop:  // cao (count all ones)
      counts[wide ? kInt64Logic : kInt32Logic] += 1;
      break;
    case Intrinsic::cttz:  // the lowest set bit isolated (negate, and), then clz
      counts[wide ? kInt64Logic : kInt32Logic] += 3;
      break;
    case Intrinsic::fshl:  // rotates and funnel shifts: rol / ror, or two shifts and an or
    case Intrinsic::fshr:
      counts[wide ? kInt64Shift : kInt32Shift] += call.getArgOperand(0) == call.getArgOperand(1) ? 1 : 3;
      break;
    case Intrinsic::bswap:  // byte by byte: shifts and masks
      counts[wide ? kInt64Logic : kInt32Logic] += wide ? 8 : 4;
      break;
    case Intrinsic::uadd_with_overflow:  // the add and its carry flag
    case Intrinsic::sadd_with_overflow:
    case Intrinsic::usub_with_overflow:
    case Intrinsic::ssub_with_overflow:
      counts[wide ? kInt64Add : kInt32Add] += 2;
      break;
    case Intrinsic::uadd_sat:  // the add, its carry, a select
    case Intrinsic::sadd_sat:
    case Intrinsic::usub_sat:
    case Intrinsic::ssub_sat:
      counts[wide ? kInt64Add : kInt32Add] += 3;
      break;
    case Intrinsic::fabs:  // the sign bit cleared
      counts[wide || t->getScalarType()->isDoubleTy() ? kInt64Logic : kInt32Logic] += 1;
      break;
    case Intrinsic::copysign:
      counts[t->getScalarType()->isDoubleTy() ? kInt64Logic : kInt32Logic] += 3;
      break;
    case Intrinsic::fmuladd:  // not fused on the DPU: the soft-float multiply, then the add
    case Intrinsic::fma:
      ++counts[t->getScalarType()->isDoubleTy() ? kDoubleMul : kFloatMul];
      ++counts[t->getScalarType()->isDoubleTy() ? kDoubleAdd : kFloatAdd];
      break;
    default:
      break;
  }
}

// The width (8 or 16) a 32-bit multiply's operand fits in, signed or unsigned (a value sign- or zero-extended from
// a char or a short); 32 otherwise. The DPU has 8 x 8 multiplies (mul_ul_ul, mul_sh_ul, ...): the DPU compiler makes
// a multiply of two such operands from them instead of calling __mulsi3.
unsigned NarrowWidth(const Value& v, const DataLayout& layout) {
  if (!v.getType()->isIntegerTy(32)) return 32;
  const unsigned sign_bits = ComputeNumSignBits(&v, layout);
  const unsigned zeros = computeKnownBits(&v, layout).countMinLeadingZeros();
  if (sign_bits >= 25 || zeros >= 24) return 8;
  if (sign_bits >= 17 || zeros >= 16) return 16;
  return 32;
}

// A 32-bit multiply of two operands of at most 16 bits: one 8 x 8 multiply when both fit 8 bits; otherwise its four
// byte products (mul_ul_ul, mul_sh_ul twice, mul_sh_sh) added with three lsl_add, as the DPU compiler emits it for a
// char or short times a short (pim-ml's LogReg_int8 disassembly, docs/pim-emulator.md); 0 products for a multiply
// that needs __mulsi3.
unsigned NarrowMultiplyProducts(const BinaryOperator& op, const DataLayout& layout) {
  if (!op.getType()->isIntegerTy(32)) return 0;
  const unsigned a = NarrowWidth(*op.getOperand(0), layout), b = NarrowWidth(*op.getOperand(1), layout);
  if (a == 8 && b == 8) return 1;
  if (a <= 16 && b <= 16) return 4;
  return 0;
}

// Whether `v` is the same all along `loop`: defined before it, a tasklet constant (kTaskletConstants), or a cast or a
// constant offset of such a value (the placement's address of a WRAM global, its image's base plus the global's
// offset: on the DPU a constant address, not code in the loop).
bool SameAlongLoop(const Value* v, const Loop& loop) {
  for (int depth = 0; depth < 16; ++depth) {
    if (loop.isLoopInvariant(v)) return true;
    if (const auto* call = dyn_cast<CallInst>(v)) return IsTaskletConstant(call->getCalledFunction());
    if (const auto* gep = dyn_cast<GEPOperator>(v); gep != nullptr && gep->hasAllConstantIndices()) {
      v = gep->getPointerOperand();
    } else if (const auto* cast = dyn_cast<CastInst>(v)) {
      v = cast->getOperand(0);
    } else {
      return false;
    }
  }
  return false;
}

// The issue slots of one instruction, by class (what the DPU compiler makes of it: docs/pim-emulator.md); `loop`: the
// innermost loop the instruction is in (nullptr: none).
void CountInstruction(const Instruction& i, std::vector<uint64_t>& counts, const Loop* loop) {
  const Type* t = i.getType()->getScalarType();
  const DataLayout& layout = i.getModule()->getDataLayout();
  switch (i.getOpcode()) {
    case Instruction::Add:
    case Instruction::Sub:  // address arithmetic (only indexing memory) is 32-bit on the DPU
      ++counts[Wide(t) && !HighWordUnobserved(i) ? kInt64Add : kInt32Add];
      break;
    case Instruction::And:
    case Instruction::Or:
    case Instruction::Xor:
      ++counts[Wide(t) && !HighHalfKnownZero(i, layout) ? kInt64Logic : kInt32Logic];
      break;
    case Instruction::Shl:
    case Instruction::LShr:
    case Instruction::AShr:
      ++counts[Wide(t) ? kInt64Shift : kInt32Shift];
      break;
    case Instruction::UDiv:
    case Instruction::SDiv:
    case Instruction::URem:
    case Instruction::SRem:
      // A 64-bit divide by a run-time value: the DPU's 64-bit division routine, its fixed cost (a 32-bit one is
      // replaced by a call that counts its steps, below; a divide by a power of two is a shift by now).
      if (Wide(t) && !isa<Constant>(i.getOperand(1))) ++counts[kInt64Div];
      break;
    case Instruction::Mul: {  // by a constant: shifts and adds, one per set bit beyond the first
      const auto* c = dyn_cast<ConstantInt>(i.getOperand(1));
      if (c == nullptr) c = dyn_cast<ConstantInt>(i.getOperand(0));
      if (c == nullptr) {  // two narrow operands (the others are counted as __mulsi3's calls)
        const unsigned products = NarrowMultiplyProducts(cast<BinaryOperator>(i), layout);
        counts[kMul8] += products;
        if (products > 1) counts[kInt32Add] += products - 1;
        break;
      }
      const unsigned bits = c ? c->getValue().countPopulation() : 1;
      // A 64-bit multiply by a constant that is not a power of two is __muldi3, as by a run-time operand: the DPU
      // backend breaks only powers of two into shifts (it does not override decomposeMulByConstant, [DPU-LLVM]).
      if (Wide(t) && bits > 1) {
        ++counts[kInt64Mul];
        break;
      }
      counts[Wide(t) ? kInt64Shift : kInt32Shift] += 1;
      if (bits > 1) counts[Wide(t) ? kInt64Add : kInt32Add] += bits - 1;
      break;
    }
    case Instruction::FAdd:
      ++counts[t->isDoubleTy() ? kDoubleAdd : kFloatAdd];
      break;
    case Instruction::FSub:
      ++counts[t->isDoubleTy() ? kDoubleSub : kFloatSub];
      break;
    case Instruction::FMul:
      ++counts[t->isDoubleTy() ? kDoubleMul : kFloatMul];
      break;
    case Instruction::FDiv:
      ++counts[t->isDoubleTy() ? kDoubleDiv : kFloatDiv];
      break;
    case Instruction::FPToSI:
    case Instruction::FPToUI:
    case Instruction::SIToFP:
    case Instruction::UIToFP:
    case Instruction::FCmp:
      ++counts[kFloatConvert];
      break;
    case Instruction::Load:  // lw / ld: a 64-bit load is one instruction (a register pair)
      ++counts[kWramLoad];
      break;
    case Instruction::Store:  // sw / sd
      ++counts[kWramStore];
      break;
    case Instruction::Br:
      if (cast<BranchInst>(i).isConditional()) {
        ++counts[kBranch];
        if (const auto* cmp = dyn_cast<ICmpInst>(cast<BranchInst>(i).getCondition())) {
          if (Wide(cmp->getOperand(0)->getType()) &&
              !(HighHalfKnownZero(*cmp->getOperand(0), layout) && HighHalfKnownZero(*cmp->getOperand(1), layout))) {
            ++counts[kInt64Compare];
          }
        }
      }
      break;
    case Instruction::ICmp:  // fused into its branch; otherwise a set instruction
      if (!(i.hasOneUse() && isa<BranchInst>(*i.user_begin()))) ++counts[kInt32Add];
      break;
    case Instruction::Select:
      counts[Wide(t) ? kInt64Add : kInt32Add] += 2;
      break;
    case Instruction::SExt:
    case Instruction::ZExt:
      // The high word; an index widened only to address memory (the host's 64-bit GEP index) costs nothing: the
      // DPU's addresses are 32-bit.
      if (Wide(t) && !HighWordUnobserved(i)) ++counts[kInt32Add];
      break;
    case Instruction::GetElementPtr: {
      // Each run-time index: lsl_add, the index scaled and added in one instruction. In a loop, the indices that do
      // not change in it are, with a base that does not either, one address computed before the loop (the DPU
      // compiler's loop-invariant code motion; its addressing is a register plus a constant, so nothing sinks the
      // sum back into the loop): only the changing indices cost an instruction per iteration (cache[me()][i]: one,
      // not two). Charged where the optimizer left the GEP (a GEP that is all invariant was hoisted by LICM).
      const auto& gep = cast<GetElementPtrInst>(i);
      const bool invariant_base = loop != nullptr && SameAlongLoop(gep.getPointerOperand(), *loop);
      for (auto it = gep.idx_begin(); it != gep.idx_end(); ++it) {
        if (isa<Constant>(*it) || (invariant_base && SameAlongLoop(*it, *loop))) continue;
        counts[kInt32Add] += 1;
      }
      break;
    }
    case Instruction::Call:
      if (const auto* intrinsic = dyn_cast<IntrinsicInst>(&i)) {
        CountIntrinsic(*intrinsic, counts);
      } else if (IsConstantMultiplyBuiltin(cast<CallInst>(i))) {
        ++counts[kMul8];  // inlined after counting (InlineMultiplies): the runtime no longer counts it
      } else if (!IsRuntime(cast<CallInst>(i).getCalledFunction())) {
        ++counts[kCall];
      }
      break;
    case Instruction::Ret:
    case Instruction::Switch:
      ++counts[kBranch];
      break;
    default:
      break;  // phi, casts between pointer types, truncations: no instruction
  }
}

// An instruction on vectors (clang makes none with the toolchain's flags; a program's own vector types can) is
// charged once per lane: the DPU has no vector unit.
void CountLanes(const Instruction& i, std::vector<uint64_t>& counts, const Loop* loop) {
  uint64_t lanes = 1;
  auto widen = [&](const Type* t) {
    if (const auto* v = dyn_cast<FixedVectorType>(t)) lanes = std::max<uint64_t>(lanes, v->getNumElements());
  };
  widen(i.getType());
  for (const Value* operand : i.operands()) widen(operand->getType());
  if (lanes == 1 || (isa<CallBase>(i) && !isa<IntrinsicInst>(i))) {
    CountInstruction(i, counts, loop);
    return;
  }
  std::vector<uint64_t> one(counts.size(), 0);
  CountInstruction(i, one, loop);
  for (size_t op = 0; op < counts.size(); ++op) counts[op] += one[op] * lanes;
}

struct Placed {
  GlobalVariable* global;
  bool mram;
  uint64_t offset;
  uint64_t bytes;
};

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class DpuPass : public PassInfoMixin<DpuPass> {
 public:
  PreservedAnalyses run(Module& m, ModuleAnalysisManager&) {
    if (m.getNamedGlobal("__pimopt_dpu_symbols")) return PreservedAnalyses::all();  // already done
    const DataLayout& layout = m.getDataLayout();
    LLVMContext& ctx = m.getContext();
    Type* i8 = Type::getInt8Ty(ctx);
    Type* i32 = Type::getInt32Ty(ctx);
    Type* i64 = Type::getInt64Ty(ctx);
    PointerType* i8p = PointerType::getUnqual(i8);

    // The DPU's printf writes to its log buffer.
    for (const char* name : {"printf", "puts", "putchar"}) {
      if (Function* f = m.getFunction(name); f != nullptr && f->isDeclaration()) {
        f->setName(std::string("__pimopt_dpu_") + name);
      }
    }

    // 1, 2: placement.
    std::vector<Placed> placed;
    uint64_t wram = 0, mram = 0;
    for (GlobalVariable& g : m.globals()) {
      if (g.isDeclaration() || g.getName().startswith("llvm.") || g.isConstant()) continue;
      const bool in_mram = g.getSection() == ".mram" || g.getSection() == ".mram.noinit" ||
                           g.getAddressSpace() == kMramAddressSpace;
      const uint64_t bytes = layout.getTypeAllocSize(g.getValueType());
      uint64_t& cursor = in_mram ? mram : wram;
      cursor = AlignUp(cursor, 8);
      placed.push_back({&g, in_mram, cursor, bytes});
      cursor += bytes;
    }
    FunctionCallee base_fn = m.getOrInsertFunction("__pimopt_dpu_wram_base", i8p);
    for (const char* name : kTaskletConstants) {
      if (Function* f = m.getFunction(name)) {
        f->setDoesNotAccessMemory();
        f->setDoesNotThrow();
        f->setWillReturn();
      }
    }
    RefuseInlineAssembly(m);
    TrapWramAccessesThroughMram(m, placed);
    for (const Placed& p : placed) Relocate(p, base_fn, i8, i64);
    CapAlignments(m);
    LowerMramAccesses(m);
    MarkCheckedCalls(m);
    WarnOnDataModel(m);

    // 3: costs, counted inline into the emulator's per-thread counters (pimopt::pim::tls_op_counts, dpu_types.h:
    // the running tasklet's counts since its last event, harvested at every event), as the operand types count.
    // The general-dynamic TLS model: the counters may live in a shared object that was itself opened at run time
    // (Python's extension module), whose TLS is not in the static block an initial-exec access needs. The counts
    // reach them only at flushes (below), not per operation.
    ArrayType* counts_type = ArrayType::get(i64, kNumOpCodes);
    GlobalVariable* counters = m.getNamedGlobal(kCountersSymbol);
    if (counters == nullptr) {
      counters = new GlobalVariable(m, counts_type, false, GlobalValue::ExternalLinkage, nullptr, kCountersSymbol,
                                    nullptr, GlobalValue::GeneralDynamicTLSModel);
    }
    // Each function counts into its own locals (registers once SROA has run: a loop's counts become a phi, and a
    // loop of known trip count a product at its exit), added to the per-thread counters before every call that may
    // reach an event (where the clock harvests them) and before every return.
    std::vector<AllocaInst*> local(kNumOpCodes, nullptr);
    Function* counting = nullptr;
    auto local_slot = [&](uint32_t op) {
      if (local[op] == nullptr) {
        IRBuilder<> at_entry(&*counting->getEntryBlock().getFirstInsertionPt());
        local[op] = at_entry.CreateAlloca(i64, nullptr, "pimopt.count");
        at_entry.CreateStore(ConstantInt::get(i64, 0), local[op]);
      }
      return local[op];
    };
    auto add_count = [&](IRBuilder<>& builder, uint32_t op, Value* n) {
      AllocaInst* slot = local_slot(op);
      builder.CreateStore(builder.CreateAdd(builder.CreateLoad(i64, slot), n), slot);
    };
    auto flush = [&](Instruction* before) {
      IRBuilder<> builder(before);
      for (uint32_t op = 0; op < kNumOpCodes; ++op) {
        if (local[op] == nullptr) continue;
        Value* shared = builder.CreateConstInBoundsGEP2_32(counts_type, counters, 0, op);
        builder.CreateStore(builder.CreateAdd(builder.CreateLoad(i64, shared), builder.CreateLoad(i64, local[op])),
                            shared);
        builder.CreateStore(ConstantInt::get(i64, 0), local[op]);
      }
    };
    FunctionCallee udiv32 = m.getOrInsertFunction(kDivideRoutines[0], i32, i32, i32);
    FunctionCallee sdiv32 = m.getOrInsertFunction(kDivideRoutines[1], i32, i32, i32);
    FunctionCallee urem32 = m.getOrInsertFunction(kDivideRoutines[2], i32, i32, i32);
    FunctionCallee srem32 = m.getOrInsertFunction(kDivideRoutines[3], i32, i32, i32);
    Function* ctlz32 = Intrinsic::getDeclaration(&m, Intrinsic::ctlz, {i32});
    for (Function& f : m) {
      if (f.isDeclaration() || IsRuntime(&f)) continue;
      counting = &f;
      std::fill(local.begin(), local.end(), nullptr);
      const DominatorTree dominators(f);
      LoopInfo loops;
      loops.analyze(dominators);
      for (BasicBlock& b : f) {
        const Loop* loop = loops.getLoopFor(&b);
        std::vector<uint64_t> counts(kNumOpCodes, 0);
        // Run-time multiplies: the host's multiply, and the DPU routine's steps counted from the operands
        // (__mulsi3: one mul_step per bit of the smaller unsigned operand, at least one; its operands moved into
        // place; a 64-bit multiply: the routine's fixed cost). Divides: a call that counts its steps.
        std::vector<BinaryOperator*> divides, multiplies;
        for (Instruction& i : b) {
          auto* op = dyn_cast<BinaryOperator>(&i);
          if (op == nullptr || !op->getType()->isIntegerTy()) continue;
          const unsigned width = op->getType()->getIntegerBitWidth();
          const bool constant = isa<Constant>(op->getOperand(0)) || isa<Constant>(op->getOperand(1));
          const auto opcode = op->getOpcode();
          if (opcode == Instruction::Mul && !constant && (width == 32 || width == 64) &&
              NarrowMultiplyProducts(*op, m.getDataLayout()) == 0) {
            multiplies.push_back(op);
          }
          if ((opcode == Instruction::UDiv || opcode == Instruction::SDiv || opcode == Instruction::URem ||
               opcode == Instruction::SRem) &&
              width == 32 && !isa<Constant>(op->getOperand(1))) {
            divides.push_back(op);
          }
        }
        for (BinaryOperator* op : divides) {
          IRBuilder<> builder(op);
          FunctionCallee callee = op->getOpcode() == Instruction::UDiv   ? udiv32
                                  : op->getOpcode() == Instruction::SDiv ? sdiv32
                                  : op->getOpcode() == Instruction::URem ? urem32
                                                                         : srem32;
          op->replaceAllUsesWith(builder.CreateCall(callee, {op->getOperand(0), op->getOperand(1)}));
          op->eraseFromParent();
        }
        // The block's own instructions, before any counting code is added (a run-time multiply: below), in
        // segments: the instructions up to and including a call that may reach an event are charged before it, the
        // ones after it once it returns (a block that takes a lock, works and releases it holds the lock for its
        // work: charged all at its start, the work would run before the lock was taken).
        std::vector<MemIntrinsic*> copies;
        std::vector<std::pair<Instruction*, std::vector<uint64_t>>> later_segments;  // (where it starts, counts)
        std::vector<uint64_t>* segment = &counts;
        for (Instruction& i : b) {
          if (std::find(multiplies.begin(), multiplies.end(), &i) == multiplies.end()) CountLanes(i, *segment, loop);
          if (auto* copy = dyn_cast<MemIntrinsic>(&i)) copies.push_back(copy);
          if (const auto* call = dyn_cast<CallBase>(&i); call && !CannotReachEvent(call->getCalledFunction())) {
            later_segments.emplace_back(i.getNextNode(), std::vector<uint64_t>(kNumOpCodes, 0));
            segment = &later_segments.back().second;
          }
        }
        // A WRAM copy or fill (what clang makes of a copying loop: llvm.memcpy / memmove / memset) is the loop the
        // DPU runs, per 4-byte word: a load (not for a fill), a store, the index's add and the loop's branch.
        for (MemIntrinsic* copy : copies) {
          const bool fill = isa<MemSetInst>(copy);
          if (const auto* length = dyn_cast<ConstantInt>(copy->getLength())) {
            const uint64_t words = (length->getZExtValue() + 3) / 4;
            if (!fill) counts[kWramLoad] += words;
            counts[kWramStore] += words;
            counts[kInt32Add] += words;
            counts[kBranch] += words;
          } else {
            IRBuilder<> builder(copy);
            Value* bytes = builder.CreateZExtOrTrunc(copy->getLength(), i64);
            Value* words = builder.CreateLShr(builder.CreateAdd(bytes, ConstantInt::get(i64, 3)), 2);
            if (!fill) add_count(builder, kWramLoad, words);
            for (uint32_t op : {kWramStore, kInt32Add, kBranch}) add_count(builder, op, words);
          }
        }
        for (BinaryOperator* op : multiplies) {
          IRBuilder<> builder(op->getNextNode());
          if (op->getType()->getIntegerBitWidth() == 64) {
            ++counts[kInt64Mul];
          } else {
            ++counts[kInt32Add];
            ++counts[kMul32Setup];
            Value* a = op->getOperand(0);
            Value* c = op->getOperand(1);
            Value* smaller = builder.CreateSelect(builder.CreateICmpULT(a, c), a, c);
            // the bits of the smaller operand, at least one: 32 - clz(smaller | 1)
            Value* steps = builder.CreateSub(
                ConstantInt::get(i32, 32),
                builder.CreateCall(ctlz32, {builder.CreateOr(smaller, ConstantInt::get(i32, 1)), builder.getTrue()}));
            add_count(builder, kMulStep, builder.CreateZExt(steps, i64));
          }
        }
        IRBuilder<> builder(&*b.getFirstInsertionPt());
        for (uint32_t op = 0; op < kNumOpCodes; ++op) {
          if (counts[op] != 0) add_count(builder, op, ConstantInt::get(i64, counts[op]));
        }
        for (const auto& [start, later] : later_segments) {
          IRBuilder<> after_call(start);
          for (uint32_t op = 0; op < kNumOpCodes; ++op) {
            if (later[op] != 0) add_count(after_call, op, ConstantInt::get(i64, later[op]));
          }
        }
      }
      std::vector<Instruction*> flush_points;
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          if (isa<ReturnInst>(i)) flush_points.push_back(&i);
          if (const auto* call = dyn_cast<CallBase>(&i); call && !CannotReachEvent(call->getCalledFunction())) {
            flush_points.push_back(&i);
          }
        }
      }
      for (Instruction* i : flush_points) flush(i);
    }
    InlineMultiplies(m);
    EmitTable(m, placed, wram, mram);
    // The counts are taken: from here on the module is host code. The code counted was made for any x86-64 (so
    // that it, and with it the counts, are the same on every host); the optimization and code generation after the
    // pass use the CPU that opt and llc are given (pimopt-dpu-cc: this machine's, as the project's own code is).
    for (Function& f : m) {
      for (const char* attribute : {"target-cpu", "target-features", "tune-cpu"}) f.removeFnAttr(attribute);
    }
    return PreservedAnalyses::none();
  }

 private:
  // A relocated variable lies at an 8-aligned WRAM address (the emulator's layout), whatever alignment its global
  // had: an access the optimizer made assuming more (a 16-byte vector store that clears a 16-aligned array) would
  // fault on the host. Every memory access of the program is capped at 8-byte alignment (this changes no count).
  static void CapAlignments(Module& m) {
    const Align cap(8);
    for (Function& f : m) {
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          if (auto* load = dyn_cast<LoadInst>(&i)) {
            if (load->getAlign() > cap) load->setAlignment(cap);
          } else if (auto* store = dyn_cast<StoreInst>(&i)) {
            if (store->getAlign() > cap) store->setAlignment(cap);
          } else if (auto* transfer = dyn_cast<MemTransferInst>(&i)) {
            if (transfer->getDestAlign().valueOrOne() > cap) transfer->setDestAlignment(cap);
            if (transfer->getSourceAlign().valueOrOne() > cap) transfer->setSourceAlignment(cap);
          } else if (auto* fill = dyn_cast<MemSetInst>(&i)) {
            if (fill->getDestAlign().valueOrOne() > cap) fill->setDestAlignment(cap);
          }
        }
      }
    }
  }

  // Loads and stores through a __mram_ptr (and copies and fills of MRAM) become the runtime's DMA-backed accesses
  // (__pimopt_dpu_mram_copy_from, ...): on the DPU they are a DMA of the aligned 8 bytes around the access.
  static void LowerMramAccesses(Module& m) {
    LLVMContext& ctx = m.getContext();
    Type* void_ty = Type::getVoidTy(ctx);
    Type* i8 = Type::getInt8Ty(ctx);
    Type* i64 = Type::getInt64Ty(ctx);
    PointerType* i8p = PointerType::getUnqual(i8);
    FunctionCallee copy_from_fn = m.getOrInsertFunction("__pimopt_dpu_mram_copy_from", void_ty, i8p, i64, i64);
    FunctionCallee copy_to_fn = m.getOrInsertFunction("__pimopt_dpu_mram_copy_to", void_ty, i64, i8p, i64);
    FunctionCallee copy_fn = m.getOrInsertFunction("__pimopt_dpu_mram_copy", void_ty, i64, i64, i64);
    FunctionCallee set_fn = m.getOrInsertFunction("__pimopt_dpu_mram_set", void_ty, i64, i8, i64);
    const DataLayout& layout = m.getDataLayout();
    auto in_mram = [](const Value* v) {
      return v->getType()->isPointerTy() && v->getType()->getPointerAddressSpace() == kMramAddressSpace;
    };
    for (Function& f : m) {
      if (f.isDeclaration()) continue;
      std::vector<Instruction*> work;
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          if (auto* l = dyn_cast<LoadInst>(&i); l && in_mram(l->getPointerOperand())) work.push_back(&i);
          if (auto* s = dyn_cast<StoreInst>(&i); s && in_mram(s->getPointerOperand())) work.push_back(&i);
          if (auto* t = dyn_cast<MemTransferInst>(&i); t && (in_mram(t->getRawDest()) || in_mram(t->getRawSource()))) {
            work.push_back(&i);
          }
          if (auto* t = dyn_cast<MemSetInst>(&i); t && in_mram(t->getRawDest())) work.push_back(&i);
        }
      }
      for (Instruction* i : work) {
        IRBuilder<> at_entry(&*f.getEntryBlock().getFirstInsertionPt());
        IRBuilder<> builder(i);
        if (auto* l = dyn_cast<LoadInst>(i)) {
          AllocaInst* slot = at_entry.CreateAlloca(l->getType());
          const uint64_t bytes = layout.getTypeStoreSize(l->getType());
          builder.CreateCall(copy_from_fn, {builder.CreatePointerCast(slot, i8p),
                                            builder.CreatePtrToInt(l->getPointerOperand(), i64),
                                            ConstantInt::get(i64, bytes)});
          LoadInst* value = builder.CreateLoad(l->getType(), slot);
          l->replaceAllUsesWith(value);
        } else if (auto* s = dyn_cast<StoreInst>(i)) {
          Type* t = s->getValueOperand()->getType();
          AllocaInst* slot = at_entry.CreateAlloca(t);
          builder.CreateStore(s->getValueOperand(), slot);
          builder.CreateCall(copy_to_fn, {builder.CreatePtrToInt(s->getPointerOperand(), i64),
                                          builder.CreatePointerCast(slot, i8p),
                                          ConstantInt::get(i64, layout.getTypeStoreSize(t))});
        } else if (auto* t = dyn_cast<MemTransferInst>(i)) {
          Value* n = builder.CreateZExtOrTrunc(t->getLength(), i64);
          const bool to = in_mram(t->getRawDest()), from = in_mram(t->getRawSource());
          if (to && from) {
            builder.CreateCall(copy_fn, {builder.CreatePtrToInt(t->getRawDest(), i64),
                                         builder.CreatePtrToInt(t->getRawSource(), i64), n});
          } else if (to) {
            builder.CreateCall(copy_to_fn, {builder.CreatePtrToInt(t->getRawDest(), i64),
                                            builder.CreatePointerCast(t->getRawSource(), i8p), n});
          } else {
            builder.CreateCall(copy_from_fn, {builder.CreatePointerCast(t->getRawDest(), i8p),
                                              builder.CreatePtrToInt(t->getRawSource(), i64), n});
          }
        } else if (auto* t = dyn_cast<MemSetInst>(i)) {
          builder.CreateCall(set_fn, {builder.CreatePtrToInt(t->getRawDest(), i64), t->getValue(),
                                      builder.CreateZExtOrTrunc(t->getLength(), i64)});
        }
        i->eraseFromParent();
      }
      // Anything else that reaches MRAM directly (an atomic, a call through an MRAM pointer) has no DPU meaning.
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          if (isa<AtomicRMWInst>(i) || isa<AtomicCmpXchgInst>(i)) {
            for (const Value* op : i.operands()) {
              if (in_mram(op)) {
                errs() << "pimopt-dpu-cc: error: " << Where(i) << ": an atomic operation on MRAM\n";
                std::exit(2);
              }
            }
          }
        }
      }
    }
  }

  // Before each SDK call whose rules the emulator checks: __pimopt_dpu_at("file.c:LINE"), so that an error names
  // the line.
  static void MarkCheckedCalls(Module& m) {
    LLVMContext& ctx = m.getContext();
    PointerType* i8p = PointerType::getUnqual(Type::getInt8Ty(ctx));
    FunctionCallee at_fn = m.getOrInsertFunction("__pimopt_dpu_at", Type::getVoidTy(ctx), i8p);
    std::map<std::string, Constant*> strings;
    for (Function& f : m) {
      if (f.isDeclaration()) continue;
      std::vector<CallInst*> calls;
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          if (auto* c = dyn_cast<CallInst>(&i); c && IsChecked(c->getCalledFunction()) && !Where(i).empty()) {
            calls.push_back(c);
          }
        }
      }
      for (CallInst* c : calls) {
        const std::string where = Where(*c);
        Constant*& text = strings[where];
        if (text == nullptr) {
          Constant* data = ConstantDataArray::getString(ctx, where);
          auto* g = new GlobalVariable(m, data->getType(), true, GlobalValue::PrivateLinkage, data, "pimopt_at");
          text = ConstantExpr::getPointerCast(g, i8p);
        }
        IRBuilder<> builder(c);
        builder.CreateCall(at_fn, {text});
      }
    }
  }

  // The WRAM word at address 0 on the DPU: the SDK runtime's `__sys_null_pointer`, a zero in section
  // `.data.__sys_zero`, which its linker places first, so that a null WRAM pointer reads zero.
  static constexpr uint64_t kWramZeroWordBytes = 8;
  static constexpr uint64_t kWramBytes = 64 << 10;

  // `pointer` as a global plus a constant byte offset (through constant GEPs, bitcasts and address space casts), or
  // nullptr with a non-constant offset.
  static const GlobalVariable* GlobalAndOffset(const Value* pointer, const DataLayout& layout, int64_t& offset) {
    offset = 0;
    for (;;) {
      if (const auto* g = dyn_cast<GlobalVariable>(pointer)) return g;
      if (const auto* gep = dyn_cast<GEPOperator>(pointer)) {
        APInt step(layout.getIndexTypeSizeInBits(gep->getPointerOperandType()), 0);
        if (!gep->accumulateConstantOffset(layout, step)) return nullptr;
        offset += step.getSExtValue();
        pointer = gep->getPointerOperand();
      } else if (const auto* cast = dyn_cast<Operator>(pointer);
                 cast != nullptr && (cast->getOpcode() == Instruction::BitCast ||
                                     cast->getOpcode() == Instruction::AddrSpaceCast)) {
        pointer = cast->getOperand(0);
      } else {
        return nullptr;
      }
    }
  }

  // A WRAM load or store through the address of an MRAM variable (its address cast to a WRAM pointer; PIM-Opt's
  // programs read `*(uint32_t *)&DPU_RESULTS` for the variable's address). On the DPU it reaches WRAM at the MRAM
  // address modulo the WRAM's size. A load that lands in the WRAM's first 8 bytes (the first MRAM variable, at MRAM
  // offset 0, as PIM-Opt's) reads the runtime's zero word: here it reads zero, as there. Any other access depends
  // on the SDK's WRAM layout, which pimopt does not reproduce: the tasklet stops there with an error naming the line
  // (the runtime's __pimopt_dpu_mram_as_wram), instead of reading host memory at a meaningless address. Either is
  // warned at compile time with the line.
  static void TrapWramAccessesThroughMram(Module& m, const std::vector<Placed>& placed) {
    LLVMContext& ctx = m.getContext();
    const DataLayout& layout = m.getDataLayout();
    PointerType* i8p = PointerType::getUnqual(Type::getInt8Ty(ctx));
    FunctionCallee fault_fn = m.getOrInsertFunction("__pimopt_dpu_mram_as_wram", Type::getVoidTy(ctx), i8p);
    for (Function& f : m) {
      if (f.isDeclaration()) continue;
      std::vector<std::pair<Instruction*, const GlobalVariable*>> accesses;
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          Value* pointer = nullptr;
          if (auto* load = dyn_cast<LoadInst>(&i)) pointer = load->getPointerOperand();
          if (auto* store = dyn_cast<StoreInst>(&i)) pointer = store->getPointerOperand();
          if (pointer == nullptr || pointer->getType()->getPointerAddressSpace() == kMramAddressSpace) continue;
          const auto* g = dyn_cast<GlobalVariable>(getUnderlyingObject(pointer));
          if (g != nullptr && g->getAddressSpace() == kMramAddressSpace) accesses.emplace_back(&i, g);
        }
      }
      for (auto [i, g] : accesses) {
        const bool load = isa<LoadInst>(i);
        const std::string where = Where(*i).empty() ? f.getName().str() : Where(*i);
        // Only a load reads the zero word; a store into it would change what the SDK keeps zero.
        int64_t offset = 0;
        const GlobalVariable* base = load ? GlobalAndOffset(cast<LoadInst>(i)->getPointerOperand(), layout, offset)
                                          : nullptr;
        bool zero_word = false;
        if (base == g) {
          for (const Placed& p : placed) {
            if (p.global != g) continue;
            const uint64_t wram_address = (p.offset + static_cast<uint64_t>(offset)) % kWramBytes;
            zero_word = wram_address + layout.getTypeStoreSize(i->getType()) <= kWramZeroWordBytes;
          }
        }
        const std::string access = std::string("a WRAM ") + (load ? "load" : "store") +
                                   " through the address of MRAM variable '" + g->getName().str() +
                                   "' (an MRAM address cast to a WRAM pointer: on the DPU it reaches WRAM at that "
                                   "address modulo the WRAM's size";
        if (zero_word) {
          errs() << "pimopt-dpu-cc: warning: " << where << ": " << access
                 << ", here the runtime's zero word at WRAM address 0: it reads 0, as on the DPU)\n";
          i->replaceAllUsesWith(Constant::getNullValue(i->getType()));
          i->eraseFromParent();
          continue;
        }
        const std::string what = access +
                                 ", whose contents depend on the SDK's WRAM layout; read the variable with mram_read, "
                                 "or use its address as a __mram_ptr)";
        errs() << "pimopt-dpu-cc: warning: " << where << ": " << what << " (the DPU stops here)\n";
        IRBuilder<> builder(i);
        Constant* data = ConstantDataArray::getString(ctx, what);
        auto* text = new GlobalVariable(m, data->getType(), true, GlobalValue::PrivateLinkage, data, "pimopt_mram_as_wram");
        builder.CreateCall(fault_fn, {ConstantExpr::getPointerCast(text, i8p)});
        if (load) i->replaceAllUsesWith(Constant::getNullValue(i->getType()));
        i->eraseFromParent();
      }
    }
  }

  // DPU assembly in a C program (`__asm__("ldma ...")`, usecase_dpu_alignment's scoring loops) cannot run: the
  // program is host code here. Refused with every line that has some, before the host's assembler would fail on a
  // DPU mnemonic without naming the line.
  static void RefuseInlineAssembly(Module& m) {
    unsigned found = 0;
    for (Function& f : m) {
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          const auto* call = dyn_cast<CallBase>(&i);
          if (call == nullptr || !call->isInlineAsm()) continue;
          const auto* asm_code = cast<InlineAsm>(call->getCalledOperand());
          std::string text = asm_code->getAsmString();
          text = text.substr(0, text.find_first_of("\n;"));
          errs() << "pimopt-dpu-cc: error: " << WhereOrFunction(i)
                 << ": DPU assembly (\"" << text << "\") is not supported: pimopt runs a DPU program as host code "
                 << "(docs/pim-emulator.md, \"What differs\")\n";
          ++found;
        }
      }
    }
    if (found > 0) std::exit(2);  // opt's own exit, without a crash report: pimopt-dpu-cc then exits 2, writing nothing
  }

  // The host's data model is not the DPU's: a pointer is 64 bits. The emulator maps WRAM images and tasklet stacks
  // below 2 GiB where the host allows it (x86-64 Linux), so a WRAM pointer kept in 32 bits comes back whole there;
  // elsewhere it would lose its high half. Warned, with the line, as a portability note.
  static void WarnOnDataModel(Module& m) {
    for (Function& f : m) {
      if (f.isDeclaration()) continue;
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          auto* cast = dyn_cast<PtrToIntInst>(&i);
          if (cast == nullptr || cast->getPointerAddressSpace() == kMramAddressSpace) continue;
          bool narrow = cast->getType()->getIntegerBitWidth() < 64;
          for (const User* u : cast->users()) {
            if (isa<TruncInst>(u) && u->getType()->getIntegerBitWidth() < 64) narrow = true;
          }
          if (narrow) {
            errs() << "pimopt-dpu-cc: warning: " << WhereOrFunction(i)
                   << ": a WRAM pointer converted to a 32-bit integer: it comes back whole only where the emulator "
                      "can map WRAM below 2 GiB, as on x86-64 Linux (docs/pim-emulator.md, \"What differs\")\n";
          }
        }
      }
    }
  }

  // Whether constant `c` is `g` or is built from it.
  static bool References(const Constant* c, const GlobalVariable* g) {
    if (c == g) return true;
    for (const Use& op : c->operands()) {
      if (const auto* inner = dyn_cast<Constant>(op.get()); inner && !isa<GlobalValue>(inner) && References(inner, g)) {
        return true;
      }
      if (op.get() == g) return true;
    }
    return false;
  }
  // `ce` as instructions before `at` (its operands that are built from `g` too, first).
  static Instruction* Expand(ConstantExpr* ce, const GlobalVariable* g, Instruction* at) {
    Instruction* inst = ce->getAsInstruction();
    inst->insertBefore(at);
    for (unsigned k = 0; k < inst->getNumOperands(); ++k) {
      auto* inner = dyn_cast<ConstantExpr>(inst->getOperand(k));
      if (inner != nullptr && References(inner, g)) inst->setOperand(k, Expand(inner, g, inst));
    }
    return inst;
  }

  // Replaces every use of the global by base + offset (WRAM) or by its MRAM address, in instructions; constant
  // expressions over it become instructions first.
  static void Relocate(const Placed& p, FunctionCallee base_fn, Type* i8, Type* i64) {
    GlobalVariable* g = p.global;
    // Constant expressions that use it, however nested (a cast of a GEP into an array global): expanded into
    // instructions where instructions use them, so that every use is an instruction's operand.
    Module& m = *g->getParent();
    for (Function& f : m) {
      for (BasicBlock& b : f) {
        for (Instruction& i : b) {
          for (unsigned k = 0; k < i.getNumOperands(); ++k) {
            auto* ce = dyn_cast<ConstantExpr>(i.getOperand(k));
            if (ce == nullptr || !References(ce, g)) continue;
            Instruction* at = &i;
            if (auto* phi = dyn_cast<PHINode>(&i)) at = phi->getIncomingBlock(k)->getTerminator();
            i.setOperand(k, Expand(ce, g, at));
          }
        }
      }
    }
    std::vector<Use*> direct;
    for (Use& u : g->uses()) direct.push_back(&u);
    for (Use* u : direct) {
      auto* user = dyn_cast<Instruction>(u->getUser());
      if (user == nullptr) continue;
      Instruction* at = user;
      if (auto* phi = dyn_cast<PHINode>(user)) at = phi->getIncomingBlock(*u)->getTerminator();
      IRBuilder<> builder(at);
      Value* address;
      if (p.mram) {
        address = builder.CreateIntToPtr(ConstantInt::get(i64, p.offset), g->getType());
      } else {
        Value* base = builder.CreateCall(base_fn);
        Value* at_offset = builder.CreateGEP(i8, base, ConstantInt::get(i64, p.offset));
        address = builder.CreatePointerCast(at_offset, g->getType());
      }
      u->set(address);
    }
  }

  // __pimopt_dpu_symbols: one record per placed global, { name, kind (0 WRAM, 1 MRAM, 2 MRAM without initial
  // value, 3 a WRAM semaphore: SEMAPHORE_INIT), offset, bytes, initial bytes or null }, then __pimopt_dpu_symbol_count and __pimopt_dpu_op_names.
  static void EmitTable(Module& m, const std::vector<Placed>& placed, uint64_t wram, uint64_t mram) {
    LLVMContext& ctx = m.getContext();
    Type* i8 = Type::getInt8Ty(ctx);
    Type* i64 = Type::getInt64Ty(ctx);
    PointerType* i8p = PointerType::getUnqual(i8);
    StructType* record = StructType::get(ctx, {i8p, i64, i64, i64, i8p});
    std::vector<Constant*> records;
    auto string = [&](StringRef s, const Twine& name) {
      Constant* text = ConstantDataArray::getString(ctx, s);
      auto* g = new GlobalVariable(m, text->getType(), true, GlobalValue::PrivateLinkage, text, name);
      return ConstantExpr::getPointerCast(g, i8p);
    };
    for (const Placed& p : placed) {
      GlobalVariable* g = p.global;
      const bool noinit = g->getSection() == ".mram.noinit";
      Constant* init = ConstantPointerNull::get(i8p);
      if (!noinit && g->hasInitializer() && !g->getInitializer()->isNullValue()) {
        auto* copy = new GlobalVariable(m, g->getValueType(), true, GlobalValue::PrivateLinkage,
                                        g->getInitializer(), g->getName() + ".pimopt_init");
        init = ConstantExpr::getPointerCast(copy, i8p);
      }
      const bool semaphore = g->getSection() == ".pimopt.semaphore";
      const uint64_t kind = p.mram ? (noinit ? 2 : 1) : semaphore ? 3 : 0;
      records.push_back(ConstantStruct::get(
          record, {string(g->getName(), g->getName() + ".pimopt_name"), ConstantInt::get(i64, kind),
                   ConstantInt::get(i64, p.offset), ConstantInt::get(i64, p.bytes), init}));
    }
    ArrayType* table_type = ArrayType::get(record, records.size());
    new GlobalVariable(m, table_type, true, GlobalValue::ExternalLinkage, ConstantArray::get(table_type, records),
                       "__pimopt_dpu_symbols");
    new GlobalVariable(m, i64, true, GlobalValue::ExternalLinkage, ConstantInt::get(i64, records.size()),
                       "__pimopt_dpu_symbol_count");
    new GlobalVariable(m, i64, true, GlobalValue::ExternalLinkage, ConstantInt::get(i64, wram),
                       "__pimopt_dpu_wram_bytes");
    new GlobalVariable(m, i64, true, GlobalValue::ExternalLinkage, ConstantInt::get(i64, mram),
                       "__pimopt_dpu_mram_bytes");
    std::vector<Constant*> names;
    for (const char* n : pimopt::pim::kOpNames) names.push_back(string(n, "pimopt_op"));
    ArrayType* names_type = ArrayType::get(i8p, names.size());
    new GlobalVariable(m, names_type, true, GlobalValue::ExternalLinkage, ConstantArray::get(names_type, names),
                       "__pimopt_dpu_op_names");
    // The globals themselves are no longer used: their storage is the DPU's.
    for (const Placed& p : placed) {
      p.global->removeDeadConstantUsers();
      if (p.global->use_empty()) p.global->eraseFromParent();
    }
  }
};

}  // namespace

// opt -load-pass-plugin=pimopt_dpu_pass.so -passes=pimopt-dpu: pimopt-dpu-cc runs it on the linked program, after
// each source file's optimization under the cost layout, so that the costs are those of the optimized code (as the
// DPU compiler's) and the WRAM and MRAM layouts are the whole program's.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "PimoptDpu", "0.2", [](PassBuilder& builder) {
            builder.registerPipelineParsingCallback(
                [](StringRef name, ModulePassManager& mpm, ArrayRef<PassBuilder::PipelineElement>) {
                  if (name != "pimopt-dpu") return false;
                  mpm.addPass(DpuPass());
                  return true;
                });
          }};
}
