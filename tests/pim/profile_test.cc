// Hardware profiles as data: every field is declared once (name, unit, bounds, source) and overridable by name,
// presets are the base with listed fields changed, and bad overrides name the field.
#include "pimopt/pim/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "pimopt/core/error.h"

namespace pimopt::pim {
namespace {

// A value for the field that differs from `current` and lies within its declared bounds (`down`: a smaller one
// where it can, for a part that must stay within its whole, as host_reduction_threads within host_cores).
std::string OtherValue(const ParamInfo& info, const ParamValue& current, bool down = false) {
  if (info.type == ParamType::kChoice) {  // the next choice
    const std::vector<ParamChoice> choices = info.Choices();
    const std::string now = FormatParamValue(current);
    for (size_t i = 0; i < choices.size(); ++i) {
      if (choices[i].name == now) return choices[(i + 1) % choices.size()].name;
    }
    return choices.front().name;
  }
  if (info.type == ParamType::kUint) {
    const uint64_t v = std::get<uint64_t>(current);
    // Even stays a multiple of 8 when it was one.
    return std::to_string(v % 2 != 0 ? v + 1 : down && v >= 16 ? v - 8 : v + 8);
  }
  const double v = std::get<double>(current);
  if (info.max && v + 0.25 > *info.max) return FormatParamValue(ParamValue(v / 2));
  return FormatParamValue(ParamValue(v * 1.5 + 0.25));
}

TEST(ProfileFields, EveryFieldIsDeclaredWithUnitSourceAndMeaning) {
  size_t slots = 0;
  for (const auto& e : ProfileFields().entries()) {
    EXPECT_FALSE(e.info.help.empty()) << e.info.name;
    EXPECT_FALSE(e.info.source.empty()) << e.info.name;
    EXPECT_FALSE(e.info.group.empty()) << e.info.name;
    if (e.info.name.rfind("slots.", 0) == 0) ++slots;
  }
  EXPECT_EQ(slots, kNumOps);
  EXPECT_EQ(ProfileFields().entries().size(), 72 + kNumOps);
}

// Fields that contradict each other describe a machine that cannot exist: refused naming both.
TEST(ProfileFields, ContradictingFieldsAreRefusedNamingBoth) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dpus_per_chip=128", "dpus_per_chip: 128 contradicts dpus_per_rank = 64"},
      {"host_cores=4", "host_reduction_threads: 16 contradicts host_cores = 4"},
      {"default_stack_bytes=4096", "default_stack_bytes: 4096 contradicts wram_bytes = 65536"},
      {"wram_bytes=1024", "contradicts wram_bytes = 1024"},
      {"dma_min_bytes=4096", "dma_max_bytes: must be >= dma_min_bytes"},
  };
  for (const auto& [overrides, message] : cases) {
    HardwareProfile p = MakeProfile("pim-opt");
    try {
      ApplyOverrides(p, overrides);
      ADD_FAILURE() << overrides << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << overrides << ": " << e.what();
    }
  }
  HardwareProfile p = MakeProfile("pim-opt");
  EXPECT_NO_THROW(ApplyOverrides(p, "host_cores=4,host_reduction_threads=4"));  // both changed: consistent
}

TEST(ProfileFields, EveryFieldIsOverridableByNameAndChangesOnlyItself) {
  for (const auto& e : ProfileFields().entries()) {
    HardwareProfile p = MakeProfile("pim-opt");
    std::string value = OtherValue(e.info, e.get(p));
    try {
      HardwareProfile up = p;
      ApplyOverrides(up, StrCat(e.info.name, "=", value));
    } catch (const ConfigError&) {
      value = OtherValue(e.info, e.get(p), /*down=*/true);  // the larger value contradicts another field
    }
    ApplyOverrides(p, StrCat(e.info.name, "=", value));
    EXPECT_EQ(ProfileFields().GetText(p, e.info.name), FormatParamValue(ParseParamValue(e.info, value))) << e.info.name;
    const HardwareProfile base = MakeProfile("pim-opt");
    for (const auto& other : ProfileFields().entries()) {
      if (other.info.name == e.info.name) continue;
      EXPECT_EQ(ProfileFields().GetText(p, other.info.name), ProfileFields().GetText(base, other.info.name))
          << "setting " << e.info.name << " changed " << other.info.name;
    }
  }
}

TEST(ProfileFields, BadOverridesNameTheField) {
  auto error_of = [&](const std::string& overrides) {
    HardwareProfile p;
    try {
      ApplyOverrides(p, overrides);
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.parameter(), "--profile-set");
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("colour=3").find("unknown profile field 'colour'"), std::string::npos);
  EXPECT_NE(error_of("dpu_frequency_hz=fast").find("dpu_frequency_hz: 'fast' is not a number"), std::string::npos);
  EXPECT_NE(error_of("dpu_frequency_hz=0").find("dpu_frequency_hz: 0 is out of range: must be > 0"), std::string::npos);
  EXPECT_NE(error_of("num_dpus=1.5").find("num_dpus: '1.5' is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("mram_bytes=100").find("mram_bytes: must be a multiple of 8"), std::string::npos);
  EXPECT_NE(error_of("dma_min_bytes=16,dma_max_bytes=8").find("dma_max_bytes: must be >= dma_min_bytes"),
            std::string::npos);
  EXPECT_NE(error_of("dma_pipeline_stall=2").find("must be 0 .. 1"), std::string::npos);
  // A known field without its value is not "unknown".
  EXPECT_NE(error_of("wram_bytes").find("'wram_bytes' has no value: write wram_bytes=VALUE"), std::string::npos);
  EXPECT_NE(error_of("num_dpus=64,wram_bytes").find("'wram_bytes' has no value"), std::string::npos);
}

TEST(ProfilePresets, AreTheBaseWithTheirListedFieldsChanged) {
  const HardwareProfile base;
  EXPECT_EQ(base.name, "pim-opt");
  for (const ProfilePreset& preset : ProfilePresets()) {
    const HardwareProfile p = MakeProfile(preset.name);
    EXPECT_EQ(p.name, preset.name);
    EXPECT_FALSE(preset.description.empty());
    for (const auto& e : ProfileFields().entries()) {
      bool listed = false;
      for (const auto& [field, value] : preset.fields) listed = listed || field == e.info.name;
      if (!listed) {
        EXPECT_EQ(FormatParamValue(e.get(p)), FormatParamValue(e.get(base))) << preset.name;
      }
    }
  }
  // The values the presets had as code before they were data (results must not move).
  EXPECT_EQ(MakeProfile("prim-640").dpu_frequency_hz, 267e6);
  EXPECT_EQ(MakeProfile("upmem-2524").num_dpus, 2524u);
  const HardwareProfile wide = MakeProfile("future-wide");
  EXPECT_EQ(wide.rank_to_dpu_bytes_per_s, 4 * base.rank_to_dpu_bytes_per_s);
  EXPECT_EQ(wide.rank_from_dpu_bytes_per_s, 4 * base.rank_from_dpu_bytes_per_s);
  EXPECT_EQ(wide.rank_broadcast_bytes_per_s, 4 * base.rank_broadcast_bytes_per_s);
  EXPECT_EQ(wide.max_to_dpu_bytes_per_s, 4 * base.max_to_dpu_bytes_per_s);
  EXPECT_EQ(wide.max_from_dpu_bytes_per_s, 4 * base.max_from_dpu_bytes_per_s);
  EXPECT_EQ(wide.max_broadcast_bytes_per_s, 4 * base.max_broadcast_bytes_per_s);
  EXPECT_EQ(wide.wram_bytes, 256u << 10);
  const HardwareProfile fpu = MakeProfile("future-fpu");
  for (Op op : {Op::kInt32Mul, Op::kInt32Div, Op::kFloatAdd, Op::kFloatSub, Op::kFloatMul, Op::kFloatDiv,
                Op::kDoubleAdd, Op::kDoubleSub, Op::kDoubleMul, Op::kDoubleDiv, Op::kFloatConvert}) {
    EXPECT_EQ(fpu.slots(op), 1) << OpName(op);
  }
  EXPECT_EQ(fpu.slots(Op::kInt64Mul), 2);
  EXPECT_EQ(fpu.slots(Op::kInt64Div), 2);
  EXPECT_EQ(fpu.slots(Op::kInt64Shift), base.slots(Op::kInt64Shift));
  EXPECT_EQ(fpu.slots(Op::kMul32Setup), 1);  // a pipelined 32-bit multiplier: no software steps
  EXPECT_EQ(fpu.slots(Op::kMulStep), 0);
  EXPECT_EQ(fpu.slots(Op::kDivStep), 0);
  try {
    MakeProfile("cray");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--profile");
    EXPECT_NE(std::string(e.what()).find("known: pim-opt, prim-2556"), std::string::npos);
  }
}

}  // namespace
}  // namespace pimopt::pim
