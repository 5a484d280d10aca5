// Fixed-point arithmetic for DPU kernels and their host-side reference. DPUs have no FPU and only an
// 8x8-bit hardware multiplier, so training on them uses integers:
//
//   features      int8   Q0.7   x = q / 2^7,  q in [-128, 127]     (data scaled to [-1, 1]; 1.0 saturates to 127)
//   model         int32  Q8.24  w = v / 2^24, |w| < 128            (weights and bias)
//   products/sums int64  Q8.31  feature x weight products, scores before the shift, gradient sums
//   scales        uint64 Q0.32  step multipliers such as lr / |batch| (< 2^31 as a real number)
//
// Rounding is toward zero everywhere (a right shift of a negative number would round toward -infinity and drift,
// the bug PIM-Opt patches with its "-1 check"); every narrowing saturates to +-(2^31 - 1) (symmetric: no
// off-by-one at +2^31) and counts the event, so saturation is reported, never hidden. Q8.24 was chosen because
// the weights of the linear models trained on fashion-mnist and the synthetic sets stay below 16 in magnitude
// (measured on the CPU backend) while the 2^-24 resolution keeps updates of size lr * 1e-6 representable.
#pragma once

#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "pimopt/model/loss.h"

namespace pimopt::fixed {

inline constexpr int kFeatureFracBits = 7;
inline constexpr int kModelFracBits = 24;
inline constexpr int kProductFracBits = kFeatureFracBits + kModelFracBits;  // 31
inline constexpr int kScaleFracBits = 32;
inline constexpr int64_t kModelMax = (int64_t{1} << 31) - 1;

// Counts narrowing operations that had to clamp.
struct Saturation {
  uint64_t events = 0;
};

// One code for the host and the DPU: the functions below that take a 64-bit value run on plain integers (int64_t)
// in host code and on the emulator's operand types in DPU kernels (pim::i64, pim::i32: any class type with the
// integer operators, dpu_types.h), which count what the DPU executes. Narrow32 and Widen64 convert between the two
// widths; the operand types' own are found by argument-dependent lookup.
template <class V>
concept FixedValue = std::integral<V> || std::is_class_v<V>;
// The 64-bit type of a value: int64_t for a plain integer, the operand type itself otherwise.
template <class V>
using Wide = std::conditional_t<std::is_class_v<V>, V, int64_t>;
inline int32_t Narrow32(int64_t v) { return static_cast<int32_t>(v); }
inline int64_t Widen64(int64_t v) { return v; }

// Arithmetic right shift rounding toward zero (v / 2^shift): a negative v is first raised by 2^shift - 1, so the
// flooring shift rounds it up. Branch-free: the emulated kernels apply it to values of random sign.
// The templates are always inlined: in the emulated kernels each is a handful of counted operations in a hot loop.
#define PIMOPT_FIXED_INLINE [[gnu::always_inline]] inline
template <FixedValue V>
PIMOPT_FIXED_INLINE constexpr Wide<V> ShiftTowardZero(V value, int shift) {
  const Wide<V> v = value;
  return (v + ((v >> 63) & ((int64_t{1} << shift) - 1))) >> shift;
}

// v narrowed to int32, saturated to +-kModelMax (counted in `sat`).
template <FixedValue V>
PIMOPT_FIXED_INLINE auto SaturateModel(V value, Saturation& sat) {
  const Wide<V> v = value;
  if (v > kModelMax) {
    ++sat.events;
    return Narrow32(Wide<V>(kModelMax));
  }
  if (v < -kModelMax) {
    ++sat.events;
    return Narrow32(Wide<V>(-kModelMax));
  }
  return Narrow32(v);
}

int8_t QuantizeFeature(float x, Saturation& sat);
int32_t ToModel(double w, Saturation& sat);
inline double FromModel(int64_t v) { return static_cast<double>(v) / (1 << kModelFracBits); }

// A real multiplier in Q0.32 (throws ConfigError naming `parameter` when negative, not finite or >= 2^31).
uint64_t ToScale(double s, const char* parameter);
// If `scale` is exactly 2^-k (k in 0..32), returns k: the multiply is a shift. Else -1.
int ScaleShift(uint64_t scale);
// (v * scale) / 2^32 rounded toward zero, exact (128-bit intermediate). For scale = 2^-k this equals
// ShiftTowardZero(v, k): DPU kernels charge a shift then, a software 64-bit multiply otherwise.
inline int64_t MulScale(int64_t v, uint64_t scale) {
  const __int128_t p = static_cast<__int128_t>(v) * static_cast<__int128_t>(scale);
  const __int128_t round_up = (p >> 127) & ((__int128_t{1} << kScaleFracBits) - 1);  // as in ShiftTowardZero
  return static_cast<int64_t>((p + round_up) >> kScaleFracBits);
}

// One SGD coordinate update: x - (G * scale) / 2^32 / 2^7 - decay_base * decay / 2^32, all toward zero, where G is a
// gradient sum in Q.31 and x, decay_base in Q.24 (not yet saturated). Used by the DPU kernel (with its own ways of
// scaling, SgdUpdateWith), its host reference and the host's GA-SGD step.
template <class V, class StepScale, class DecayScale>
PIMOPT_FIXED_INLINE V SgdUpdateWith(V x, V g_q31, const StepScale& step, V decay_base, const DecayScale& decay) {
  return x - ShiftTowardZero(step(g_q31), kFeatureFracBits) - decay(decay_base);
}
inline int64_t SgdUpdate(int64_t x, int64_t g_q31, uint64_t scale_q32, int64_t decay_base, uint64_t decay_q32) {
  return SgdUpdateWith(
      x, g_q31, [scale_q32](int64_t v) { return MulScale(v, scale_q32); }, decay_base,
      [decay_q32](int64_t v) { return MulScale(v, decay_q32); });
}

// sigma(z) for z in [-8, 8) in steps of 1/64, nearest entry, Q.24; below -8 -> 0, at or above 8 -> 1.
inline constexpr int kSigmoidEntries = 1024;
const std::array<int32_t, kSigmoidEntries>& SigmoidTable();
// The table entry of z: -1 below the table (sigma = 0), kSigmoidEntries above it (sigma = 1).
template <FixedValue V>
PIMOPT_FIXED_INLINE Wide<V> SigmoidIndex(V z) {
  using W = Wide<V>;
  const W z_q24 = z;
  if (z_q24 < -(int64_t{8} << kModelFracBits)) return W(-1);
  const W index = (z_q24 + (int64_t{8} << kModelFracBits)) >> (kModelFracBits - 6);
  return index >= kSigmoidEntries ? W(kSigmoidEntries) : index;
}
inline int32_t Sigmoid(int64_t z_q24) {
  const int64_t index = SigmoidIndex(z_q24);
  if (index < 0) return 0;
  if (index >= kSigmoidEntries) return 1 << kModelFracBits;
  return SigmoidTable()[static_cast<size_t>(index)];
}
// sigma(z) the way PIM-Opt computes it: in software floating point, 2^24 / (1 + expf(-z)) (Q.24, rounded).
inline int32_t SigmoidFloat(int64_t z_q24) {
  const float z = static_cast<float>(z_q24) / static_cast<float>(1 << kModelFracBits);
  return static_cast<int32_t>(std::nearbyint(static_cast<double>(1 << kModelFracBits) / (1.0 + std::exp(-z))));
}
// Derivative with sigma already looked up (the DPU reads its table from MRAM): sigma and the result are 32-bit,
// z_q24 a 64-bit value, y the label (-1 or +1).
template <class S, FixedValue V, class Y>
PIMOPT_FIXED_INLINE S DerivativeFromSigmoid(LossKind loss, S sigma, V z, Y y) {
  if (loss == LossKind::kLogistic) return sigma - (y > 0 ? S(1 << kModelFracBits) : S(0));
  const Wide<V> z_q24 = z;
  const Wide<V> margin = y > 0 ? z_q24 : Wide<V>(-z_q24);
  return margin < (int64_t{1} << kModelFracBits) ? S(-y * (1 << kModelFracBits)) : S(0);
}

// Loss derivative dl/dz in Q.24 for label y in {-1, +1} and score z in Q.24:
//   logistic: sigma(z) - [y = +1]        hinge (margin 1): -y if y z < 1 else 0
inline int32_t Derivative(LossKind loss, int64_t z_q24, int y) {
  return DerivativeFromSigmoid(loss, loss == LossKind::kLogistic ? Sigmoid(z_q24) : 0, z_q24, y);
}
// d * class weight (Q.24), toward zero; weight 1.0 costs nothing. d and the weight are 32-bit.
template <class S, class W>
PIMOPT_FIXED_INLINE S ApplyClassWeight(S d, W weight_q24) {
  if (weight_q24 == (1 << kModelFracBits)) return d;
  return Narrow32(ShiftTowardZero(Widen64(d) * Widen64(weight_q24), kModelFracBits));
}

}  // namespace pimopt::fixed
