// pimopt's DPU pass: an LLVM pass plugin (new pass manager, LLVM 14 or newer) that makes a DPU C program, compiled
// natively by clang, run on pimopt's UPMEM emulator with the DPU's costs (docs/pim-emulator.md "DPU C programs").
//
// It does three things to the module:
//  1. WRAM globals (every global the program defines that is not in MRAM) move into the running DPU's WRAM image:
//     each use becomes the image's base (__pimopt_dpu_wram_base(), the DPU whose tasklet runs) plus the global's
//     offset, so one compiled program serves any number of DPUs, each with its own globals. The layout is the
//     emulator's (8-aligned, in definition order, from WRAM address 0).
//  2. MRAM globals (section ".mram", the headers' __mram and __mram_noinit) get MRAM addresses from 0, 8-aligned;
//     their uses become those addresses (MRAM is reached only through DMA, as on the DPU).
//  3. Every basic block is charged its issue slots by operation class (the emulator's Op table, profile.h) at its
//     start: __pimopt_dpu_count(op, n). A multiply or divide by a run-time operand becomes a call that counts its
//     data-dependent steps (__pimopt_dpu_mul32, ...), as the DPU's software routines take them.
// A table of the symbols (name, WRAM or MRAM, offset, size, initial bytes) is emitted as __pimopt_dpu_symbols for
// the loader (src/pim/native_program.cc).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "llvm/IR/Constants.h"
#include "pimopt/pim/op.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
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
                   kInt64Compare = Code(Op::kInt64Compare), kCall = Code(Op::kCall);

bool Wide(const Type* t) { return t->isIntegerTy() && t->getIntegerBitWidth() > 32; }

// Calls that cost no call instruction: the pass's hooks, LLVM's intrinsics, and the SDK's API, whose DMA and
// synchronization the emulator's events time (on the DPU they are inline code or a few instructions).
bool IsRuntime(const Function* f) {
  if (f == nullptr) return false;
  static const char* const kApi[] = {"mram_read", "mram_write", "mem_alloc", "mem_reset", "barrier_wait",
                                     "mutex_lock", "mutex_unlock", "perfcounter_config", "perfcounter_get"};
  for (const char* name : kApi) {
    if (f->getName() == name) return true;
  }
  return f->getName().startswith("__pimopt_dpu_") || f->isIntrinsic();
}

// The issue slots of one instruction, by class (what the DPU compiler makes of it: docs/pim-emulator.md).
void CountInstruction(const Instruction& i, std::vector<uint64_t>& counts) {
  const Type* t = i.getType();
  switch (i.getOpcode()) {
    case Instruction::Add:
    case Instruction::Sub:
      ++counts[Wide(t) ? kInt64Add : kInt32Add];
      break;
    case Instruction::And:
    case Instruction::Or:
    case Instruction::Xor:
      ++counts[Wide(t) ? kInt64Logic : kInt32Logic];
      break;
    case Instruction::Shl:
    case Instruction::LShr:
    case Instruction::AShr:
      ++counts[Wide(t) ? kInt64Shift : kInt32Shift];
      break;
    case Instruction::Mul: {  // by a constant: shifts and adds, one per set bit beyond the first
      const auto* c = dyn_cast<ConstantInt>(i.getOperand(1));
      if (c == nullptr) c = dyn_cast<ConstantInt>(i.getOperand(0));
      const unsigned bits = c ? c->getValue().countPopulation() : 1;
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
    case Instruction::Load:
      ++counts[kWramLoad];
      if (Wide(t)) ++counts[kWramLoad];
      break;
    case Instruction::Store:
      ++counts[kWramStore];
      if (Wide(i.getOperand(0)->getType())) ++counts[kWramStore];
      break;
    case Instruction::Br:
      if (cast<BranchInst>(i).isConditional()) {
        ++counts[kBranch];
        if (const auto* cmp = dyn_cast<ICmpInst>(cast<BranchInst>(i).getCondition())) {
          if (Wide(cmp->getOperand(0)->getType())) ++counts[kInt64Compare];
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
      if (Wide(t)) ++counts[kInt32Add];  // the high word
      break;
    case Instruction::GetElementPtr:
      for (auto it = cast<GetElementPtrInst>(i).idx_begin(); it != cast<GetElementPtrInst>(i).idx_end(); ++it) {
        if (!isa<Constant>(*it)) counts[kInt32Add] += 2;  // scale and add
      }
      break;
    case Instruction::Call:
      if (!IsRuntime(cast<CallInst>(i).getCalledFunction())) ++counts[kCall];
      break;
    case Instruction::Ret:
    case Instruction::Switch:
      ++counts[kBranch];
      break;
    default:
      break;  // phi, casts between pointer types, truncations: no instruction
  }
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

    // 1, 2: placement.
    std::vector<Placed> placed;
    uint64_t wram = 0, mram = 0;
    for (GlobalVariable& g : m.globals()) {
      if (g.isDeclaration() || g.getName().startswith("llvm.") || g.isConstant()) continue;
      const bool in_mram = g.getSection() == ".mram" || g.getSection() == ".mram.noinit";
      const uint64_t bytes = layout.getTypeAllocSize(g.getValueType());
      uint64_t& cursor = in_mram ? mram : wram;
      cursor = AlignUp(cursor, 8);
      placed.push_back({&g, in_mram, cursor, bytes});
      cursor += bytes;
    }
    FunctionCallee base_fn = m.getOrInsertFunction("__pimopt_dpu_wram_base", i8p);
    for (const Placed& p : placed) Relocate(p, base_fn, i8, i64);

    // 3: costs.
    FunctionCallee count_fn = m.getOrInsertFunction("__pimopt_dpu_count", Type::getVoidTy(ctx), i32, i64);
    FunctionCallee mul32 = m.getOrInsertFunction("__pimopt_dpu_mul32", i32, i32, i32);
    FunctionCallee mul64 = m.getOrInsertFunction("__pimopt_dpu_mul64", i64, i64, i64);
    FunctionCallee udiv32 = m.getOrInsertFunction("__pimopt_dpu_udiv32", i32, i32, i32);
    FunctionCallee sdiv32 = m.getOrInsertFunction("__pimopt_dpu_sdiv32", i32, i32, i32);
    FunctionCallee urem32 = m.getOrInsertFunction("__pimopt_dpu_urem32", i32, i32, i32);
    FunctionCallee srem32 = m.getOrInsertFunction("__pimopt_dpu_srem32", i32, i32, i32);
    for (Function& f : m) {
      if (f.isDeclaration() || IsRuntime(&f)) continue;
      for (BasicBlock& b : f) {
        // Run-time multiplies and divides: the routines count their own steps.
        std::vector<BinaryOperator*> calls;
        for (Instruction& i : b) {
          auto* op = dyn_cast<BinaryOperator>(&i);
          if (op == nullptr || !op->getType()->isIntegerTy()) continue;
          const unsigned width = op->getType()->getIntegerBitWidth();
          const bool constant = isa<Constant>(op->getOperand(0)) || isa<Constant>(op->getOperand(1));
          const auto opcode = op->getOpcode();
          if (opcode == Instruction::Mul && !constant && (width == 32 || width == 64)) calls.push_back(op);
          if ((opcode == Instruction::UDiv || opcode == Instruction::SDiv || opcode == Instruction::URem ||
               opcode == Instruction::SRem) &&
              width == 32 && !isa<Constant>(op->getOperand(1))) {
            calls.push_back(op);
          }
        }
        for (BinaryOperator* op : calls) {
          IRBuilder<> builder(op);
          FunctionCallee callee = op->getType()->getIntegerBitWidth() == 64 ? mul64
                                  : op->getOpcode() == Instruction::Mul     ? mul32
                                  : op->getOpcode() == Instruction::UDiv    ? udiv32
                                  : op->getOpcode() == Instruction::SDiv    ? sdiv32
                                  : op->getOpcode() == Instruction::URem    ? urem32
                                                                            : srem32;
          op->replaceAllUsesWith(builder.CreateCall(callee, {op->getOperand(0), op->getOperand(1)}));
          op->eraseFromParent();
        }
        std::vector<uint64_t> counts(kNumOpCodes, 0);
        for (Instruction& i : b) CountInstruction(i, counts);
        IRBuilder<> builder(&*b.getFirstInsertionPt());
        for (uint32_t op = 0; op < kNumOpCodes; ++op) {
          if (counts[op] == 0) continue;
          builder.CreateCall(count_fn, {ConstantInt::get(i32, op), ConstantInt::get(i64, counts[op])});
        }
      }
    }
    EmitTable(m, placed, wram, mram);
    return PreservedAnalyses::none();
  }

 private:
  // Replaces every use of the global by base + offset (WRAM) or by its MRAM address, in instructions; constant
  // expressions over it become instructions first.
  static void Relocate(const Placed& p, FunctionCallee base_fn, Type* i8, Type* i64) {
    GlobalVariable* g = p.global;
    // Constant expressions that use it (a GEP into an array global, a cast): expand them where they are used.
    for (bool again = true; again;) {
      again = false;
      for (User* u : std::vector<User*>(g->user_begin(), g->user_end())) {
        auto* ce = dyn_cast<ConstantExpr>(u);
        if (ce == nullptr) continue;
        std::vector<Use*> ce_uses;
        for (Use& x : ce->uses()) ce_uses.push_back(&x);
        for (Use* cu : ce_uses) {
          auto* user = dyn_cast<Instruction>(cu->getUser());
          if (user == nullptr) continue;  // a constant of another global's initializer: left (EmitTable refuses)
          Instruction* expanded = ce->getAsInstruction();
          if (auto* phi = dyn_cast<PHINode>(user)) {
            expanded->insertBefore(phi->getIncomingBlock(*cu)->getTerminator());
          } else {
            expanded->insertBefore(user);
          }
          cu->set(expanded);
          again = true;
        }
        if (ce->use_empty()) ce->destroyConstant();
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
  // value), offset, bytes, initial bytes or null }, then __pimopt_dpu_symbol_count and __pimopt_dpu_op_names.
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
      const uint64_t kind = p.mram ? (noinit ? 2 : 1) : 0;
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
      if (p.global->use_empty()) p.global->eraseFromParent();
    }
  }
};

}  // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "PimoptDpu", "0.1", [](PassBuilder& builder) {
            // After clang's optimizations, so that the costs are those of the optimized code, as the DPU compiler's.
            builder.registerOptimizerLastEPCallback(
                [](ModulePassManager& mpm, OptimizationLevel) { mpm.addPass(DpuPass()); });
          }};
}
