// Operand types of pimopt's DPU kernels: write ordinary C++ with them and the emulator counts what the DPU would
// execute, by construct (docs/pim-emulator.md "What a construct costs" gives each cost and its source):
//
//   pim::i8 .. pim::u64    integers: +, -, &, |, ^, shifts, compares, ++ (32- or 64-bit instructions by width);
//                          * and / call the SDK's software routines, costed by their operands (a 32-bit multiply
//                          takes one mul_step per bit of its smaller operand, a division one div_step per quotient
//                          bit); int8 x int8 is the DPU's one native multiply
//   pim::f32, pim::f64     software floating point at PrIM's measured cost per operation
//   pim::Cond              a compare; using it as a condition (if, while, for, ?:) is a compare-and-branch
//   pim::WramPtr<T>        a pointer into WRAM: p[i] computes an address, then each read is a load and each
//                          write a store (p[i] += x is load, add, store)
//   pim::Volatile<T>       a WRAM variable other tasklets change (a spin-wait flag): every read is a load and a
//                          point where other tasklets may run; a spin-wait that nothing can end is an error
//
// The rule that makes loops cost what the DPU compiler makes of them: values of pim types are run-time values;
// plain C++ numbers are compile-time constants. `x * 8` is a shift, `x * n` with a pim::u32 n calls __mulsi3;
// `a[3]` and `a[j]` with a plain j (a loop the compiler unrolls, PrIM's `#pragma unroll`) need no address
// arithmetic, `a[j]` with a pim::u32 j does; `for (pim::u32 j = 0; j < n; ++j)` costs an add and a
// compare-and-branch per iteration, `for (uint32_t j = 0; j < 16; ++j)` (unrolled) nothing. A call to a function
// the DPU compiler would not inline is pim::CountCall(). Tasklet::Charge stays for what these types cannot see.
//
// The counts go to the tasklet that runs on this host thread (each host thread runs one tasklet at a time); code
// outside a launch may use the types too (host references share code with kernels): its counts are discarded.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pimopt/pim/profile.h"

namespace pimopt::pim {

// The running tasklet's counts since its last event, per host thread (harvested at every event; dpu.cc).
// `__thread`, not `thread_local`: a plain TLS block without dynamic initialization, so the compiler keeps the
// counters of a loop in registers (a thread_local of another file would be reached through a wrapper call).
// The counters are padded to a multiple of 8 (kCountedOps) so that a harvest adds them up in vector registers.
inline constexpr size_t kCountedOps = (kNumOps + 7) / 8 * 8;
struct OpCounts {
  uint64_t n[kCountedOps];
  uint32_t volatile_reads;   // Volatile reads since the last event (a spin-wait yields every kSpinQuantum)
  uint32_t volatile_writes;  // Volatile writes since the last event
};
extern __thread OpCounts tls_op_counts;
inline void Count(Op op, uint64_t k = 1) { tls_op_counts.n[static_cast<size_t>(op)] += k; }
// A call to a function the DPU compiler does not inline (PrIM's __attribute__((noinline)) helpers).
inline void CountCall() { Count(Op::kCall); }

namespace detail {
// Faults of the running tasklet (a DPU fault: division by zero), and its spin-wait yield (dpu.cc).
[[noreturn]] void DpuFault(const char* what);
void VolatileYield();
inline constexpr uint32_t kSpinQuantum = 16;
}  // namespace detail

template <class T>
class Int;
template <class T>
class Float;
template <class T>
class Ref;

// A compare. Converting it to bool (any condition) costs a compare-and-branch (plus one instruction for 64-bit
// operands). `&&` and `||` between Conds branch once per evaluated operand, as in C.
class Cond {
 public:
  constexpr Cond(bool v, bool wide) : v_(v), wide_(wide) {}
  operator bool() const {
    Count(Op::kBranch);
    if (wide_) Count(Op::kInt64Compare);
    return v_;
  }
  Cond operator!() const { return Cond(!v_, wide_); }
  bool value() const { return v_; }  // no cost: for host code and tests

 private:
  bool v_;
  bool wide_;
};

namespace detail {
template <class T>
struct IsInt : std::false_type {};
template <class T>
struct IsInt<Int<T>> : std::true_type {};
template <class T>
inline constexpr bool kPlain = std::is_arithmetic_v<T>;
template <class T>
constexpr bool Wide() {
  return sizeof(T) == 8;
}
inline void CountAdd(bool wide) { Count(wide ? Op::kInt64Add : Op::kInt32Add); }
inline void CountLogic(bool wide) { Count(wide ? Op::kInt64Logic : Op::kInt32Logic); }
inline void CountShift(bool wide) { Count(wide ? Op::kInt64Shift : Op::kInt32Shift); }
// 32 -> 64 bit: the high word is set (sign or zero): one instruction. Narrower conversions are free.
template <class To, class From>
inline void CountConvert() {
  if constexpr (sizeof(To) == 8 && sizeof(From) < 8) Count(Op::kInt32Add);
}
// __mulsi3: the smaller unsigned operand drives one mul_step per bit, at least one: the chain leaves after the step
// that shifts the operand to zero ([SDK] mul32.c; [uPIMulator] logic.go, mul_step). Its operands are passed in r0
// and r1, which it clobbers: an operand that comes straight from WRAM is loaded there, one held in a register
// (a loop-invariant scalar) is moved there first.
inline void CountMul32(uint32_t a, uint32_t b, bool operands_loaded) {
  if (!operands_loaded) Count(Op::kInt32Add);
  Count(Op::kMul32Setup);
  Count(Op::kMulStep, static_cast<uint64_t>(std::max(1, static_cast<int>(std::bit_width(a < b ? a : b)))));
}
// A multiply by a compile-time constant: shifts and lsl_add, one per set bit (one shift for a power of two).
inline void CountMulConstant(uint64_t c, bool wide) {
  const int bits = std::popcount(c);
  if (bits <= 1) {
    CountShift(wide);
    return;
  }
  for (int k = 0; k < bits; ++k) {
    CountShift(wide);
    CountAdd(wide);
  }
}
// __udivsi3 / __divsi3: one div_step per quotient bit ([SDK] div32.c).
inline void CountDiv32(uint32_t dividend, uint32_t divisor, bool is_signed) {
  Count(Op::kDiv32Setup);
  if (is_signed) Count(Op::kDivSigned);
  const int steps = std::countl_zero(divisor) - std::countl_zero(dividend) + 1;
  if (steps > 0 && dividend >= divisor) Count(Op::kDivStep, static_cast<uint64_t>(steps));
}
template <class T>
constexpr std::make_unsigned_t<T> Magnitude(T v) {
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>) return v < 0 ? static_cast<U>(U{0} - static_cast<U>(v)) : static_cast<U>(v);
  return static_cast<U>(v);
}
}  // namespace detail

// An integer held in DPU registers.
template <class T>
class Int {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "pim::Int holds an integer type");

 public:
  using value_type = T;
  Int() = default;
  // From a plain number: a compile-time constant (an immediate): no cost.
  template <class P, std::enable_if_t<detail::kPlain<P>, int> = 0>
  constexpr Int(P v) : v_(static_cast<T>(v)) {}
  // From another width: 32 -> 64 bits costs one instruction.
  template <class U>
  Int(Int<U> o) : v_(static_cast<T>(o.value())) {
    detail::CountConvert<T, U>();
  }
  constexpr T value() const { return v_; }  // no cost: for host code, DMA addresses and tests
  explicit operator T() const { return v_; }

  Int& operator++() {
    detail::CountAdd(detail::Wide<T>());
    ++v_;
    return *this;
  }
  Int operator++(int) {
    Int old = *this;
    ++*this;
    return old;
  }
  Int& operator--() {
    detail::CountAdd(detail::Wide<T>());
    --v_;
    return *this;
  }
  Int operator--(int) {
    Int old = *this;
    --*this;
    return old;
  }
  Int operator-() const {
    detail::CountAdd(detail::Wide<T>());
    using U = std::make_unsigned_t<decltype(+T{})>;
    return Int(static_cast<T>(U{0} - static_cast<U>(v_)));
  }
  Int operator~() const {
    detail::CountLogic(detail::Wide<T>());
    return Int(static_cast<T>(~v_));
  }
  Cond operator!() const { return Cond(v_ == 0, detail::Wide<T>()); }
  template <class R>
  Int& operator+=(R r) {
    return *this = *this + r;
  }
  template <class R>
  Int& operator-=(R r) {
    return *this = *this - r;
  }
  template <class R>
  Int& operator*=(R r) {
    return *this = *this * r;
  }
  template <class R>
  Int& operator/=(R r) {
    return *this = *this / r;
  }
  template <class R>
  Int& operator%=(R r) {
    return *this = *this % r;
  }
  template <class R>
  Int& operator&=(R r) {
    return *this = *this & r;
  }
  template <class R>
  Int& operator|=(R r) {
    return *this = *this | r;
  }
  template <class R>
  Int& operator^=(R r) {
    return *this = *this ^ r;
  }
  template <class R>
  Int& operator<<=(R r) {
    return *this = *this << r;
  }
  template <class R>
  Int& operator>>=(R r) {
    return *this = *this >> r;
  }

 private:
  T v_;
};

using i8 = Int<int8_t>;
using u8 = Int<uint8_t>;
using i16 = Int<int16_t>;
using u16 = Int<uint16_t>;
using i32 = Int<int32_t>;
using u32 = Int<uint32_t>;
using i64 = Int<int64_t>;
using u64 = Int<uint64_t>;

namespace detail {
// The value and (for a pim::Int) the width of an operand; plain numbers are constants.
template <class T>
struct Operand {
  using type = T;
  static constexpr bool kConstant = true;
  static constexpr T Get(T v) { return v; }
};
template <class T>
struct Operand<Int<T>> {
  using type = T;
  static constexpr bool kConstant = false;
  static constexpr T Get(Int<T> v) { return v.value(); }
};
// An element of WRAM used in an expression: loaded.
template <class T>
struct Operand<Ref<T>> {
  using type = T;
  static constexpr bool kConstant = false;
  static T Get(const Ref<T>& r) { return r.load().value(); }
};
// An operand read from WRAM right where it is used (a Ref): the compiler loads it into the register it goes to.
template <class T>
inline constexpr bool kLoaded = false;
template <class T>
inline constexpr bool kLoaded<Ref<T>> = true;
template <class T>
struct IsIntLike : IsInt<T> {};
template <class T>
struct IsIntLike<Ref<T>> : std::is_integral<T> {};
template <class A, class B>
using Common = decltype(std::declval<typename Operand<A>::type>() + std::declval<typename Operand<B>::type>());
template <class A, class B>
inline constexpr bool kIntPair = (IsIntLike<A>::value && (IsIntLike<B>::value || std::is_integral_v<B>)) ||
                                 (IsIntLike<B>::value && std::is_integral_v<A>);
// The operand converted to the operation's type, counting a widening of a run-time value.
template <class C, class A>
inline C Widen(A a) {
  if constexpr (!Operand<A>::kConstant) CountConvert<C, typename Operand<A>::type>();
  return static_cast<C>(Operand<A>::Get(a));
}
}  // namespace detail

// Adds and subtracts wrap around as on the DPU (computed unsigned: no signed overflow on the host).
#define PIMOPT_PIM_INT_ARITH(op, count)                                                                       \
  template <class A, class B, std::enable_if_t<detail::kIntPair<A, B>, int> = 0>                              \
  inline Int<detail::Common<A, B>> operator op(A a, B b) {                                                    \
    using C = detail::Common<A, B>;                                                                           \
    using U = std::make_unsigned_t<C>;                                                                        \
    const C x = detail::Widen<C>(a);                                                                          \
    const C y = detail::Widen<C>(b);                                                                          \
    count(detail::Wide<C>());                                                                                 \
    return Int<C>(static_cast<C>(static_cast<U>(static_cast<U>(x) op static_cast<U>(y))));                    \
  }
PIMOPT_PIM_INT_ARITH(+, detail::CountAdd)
PIMOPT_PIM_INT_ARITH(-, detail::CountAdd)
PIMOPT_PIM_INT_ARITH(&, detail::CountLogic)
PIMOPT_PIM_INT_ARITH(|, detail::CountLogic)
PIMOPT_PIM_INT_ARITH(^, detail::CountLogic)
#undef PIMOPT_PIM_INT_ARITH

#define PIMOPT_PIM_INT_COMPARE(op)                                               \
  template <class A, class B, std::enable_if_t<detail::kIntPair<A, B>, int> = 0> \
  inline Cond operator op(A a, B b) {                                            \
    using C = detail::Common<A, B>;                                              \
    const C x = detail::Widen<C>(a);                                             \
    const C y = detail::Widen<C>(b);                                             \
    return Cond(x op y, detail::Wide<C>());                                      \
  }
PIMOPT_PIM_INT_COMPARE(==)
PIMOPT_PIM_INT_COMPARE(!=)
PIMOPT_PIM_INT_COMPARE(<)
PIMOPT_PIM_INT_COMPARE(<=)
PIMOPT_PIM_INT_COMPARE(>)
PIMOPT_PIM_INT_COMPARE(>=)
#undef PIMOPT_PIM_INT_COMPARE

// Shifts keep the left operand's (promoted) type; the amount may be a constant or a run-time value.
template <class T, class S, std::enable_if_t<std::is_integral_v<S> || detail::IsInt<S>::value, int> = 0>
inline Int<decltype(+T{})> operator<<(Int<T> a, S s) {
  using C = decltype(+T{});
  detail::CountShift(detail::Wide<C>());
  return Int<C>(static_cast<C>(static_cast<C>(a.value()) << detail::Operand<S>::Get(s)));
}
template <class T, class S, std::enable_if_t<std::is_integral_v<S> || detail::IsInt<S>::value, int> = 0>
inline Int<decltype(+T{})> operator>>(Int<T> a, S s) {
  using C = decltype(+T{});
  detail::CountShift(detail::Wide<C>());
  return Int<C>(static_cast<C>(static_cast<C>(a.value()) >> detail::Operand<S>::Get(s)));
}

template <class A, class B, std::enable_if_t<detail::kIntPair<A, B>, int> = 0>
inline Int<detail::Common<A, B>> operator*(A a, B b) {
  using C = detail::Common<A, B>;
  const C x = detail::Widen<C>(a);
  const C y = detail::Widen<C>(b);
  constexpr bool kWide = detail::Wide<C>();
  if constexpr (detail::Operand<A>::kConstant || detail::Operand<B>::kConstant) {
    const C c = detail::Operand<A>::kConstant ? x : y;
    detail::CountMulConstant(static_cast<uint64_t>(detail::Magnitude(c)), kWide);
  } else if constexpr (sizeof(typename detail::Operand<A>::type) == 1 &&
                       sizeof(typename detail::Operand<B>::type) == 1) {
    Count(Op::kMul8);  // the DPU's native 8 x 8 multiply
  } else if constexpr (kWide) {
    Count(Op::kInt64Mul);
  } else {
    detail::CountMul32(static_cast<uint32_t>(x), static_cast<uint32_t>(y),
                       detail::kLoaded<A> && detail::kLoaded<B>);
  }
  using U = std::make_unsigned_t<C>;  // wrap-around as the DPU's multiply, no signed overflow on the host
  return Int<C>(static_cast<C>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y))));
}

namespace detail {
template <class C>
inline void CheckDivisor(C y) {
  if (y == 0) DpuFault("division by zero");
}
template <class A, class B>
inline void CountDivision(Common<A, B> x, Common<A, B> y, bool remainder) {
  using C = Common<A, B>;
  if constexpr (Operand<B>::kConstant) {
    const auto m = Magnitude(y);
    if ((m & (m - 1)) == 0) {  // a power of two: shift (and mask); signed values round toward zero first
      if (remainder) {
        CountLogic(Wide<C>());
      } else {
        CountShift(Wide<C>());
      }
      if constexpr (std::is_signed_v<C>) {
        CountShift(Wide<C>());
        CountAdd(Wide<C>());
      }
      return;
    }
  }
  if constexpr (Wide<C>()) {
    Count(Op::kInt64Div);
  } else {
    CountDiv32(static_cast<uint32_t>(Magnitude(x)), static_cast<uint32_t>(Magnitude(y)), std::is_signed_v<C>);
  }
}
}  // namespace detail

template <class A, class B, std::enable_if_t<detail::kIntPair<A, B>, int> = 0>
inline Int<detail::Common<A, B>> operator/(A a, B b) {
  using C = detail::Common<A, B>;
  const C x = detail::Widen<C>(a);
  const C y = detail::Widen<C>(b);
  detail::CheckDivisor(y);
  detail::CountDivision<A, B>(x, y, false);
  if constexpr (std::is_signed_v<C>) {
    if (y == -1)
      return Int<C>(static_cast<C>(static_cast<std::make_unsigned_t<C>>(0) - static_cast<std::make_unsigned_t<C>>(x)));
  }
  return Int<C>(static_cast<C>(x / y));
}
template <class A, class B, std::enable_if_t<detail::kIntPair<A, B>, int> = 0>
inline Int<detail::Common<A, B>> operator%(A a, B b) {
  using C = detail::Common<A, B>;
  const C x = detail::Widen<C>(a);
  const C y = detail::Widen<C>(b);
  detail::CheckDivisor(y);
  detail::CountDivision<A, B>(x, y, true);
  if constexpr (std::is_signed_v<C>) {
    if (y == -1) return Int<C>(0);
  }
  return Int<C>(static_cast<C>(x % y));
}

// A value converted to another width (32 -> 64 costs one instruction; narrowing is free).
template <class To, class From>
inline Int<To> Cast(Int<From> v) {
  detail::CountConvert<To, From>();
  return Int<To>(static_cast<To>(v.value()));
}
// The number of leading zero bits: the DPU's clz instruction ([uPIMulator] op_code.go), one per 32-bit word.
template <class T>
inline Int<uint32_t> CountLeadingZeros(Int<T> v) {
  detail::CountLogic(detail::Wide<T>());
  using U = std::make_unsigned_t<T>;
  return Int<uint32_t>(static_cast<uint32_t>(std::countl_zero(static_cast<U>(v.value()))));
}
// The fixed-point code shared with the host (fixed/fixed_point.h) converts between 32 and 64 bits with these.
template <class From>
inline Int<int64_t> Widen64(Int<From> v) {
  return Cast<int64_t>(v);
}
inline Int<int32_t> Narrow32(Int<int64_t> v) { return Cast<int32_t>(v); }

// ---------------------------------------------------------------- software floating point
template <class T>
class Float {
  static_assert(std::is_floating_point_v<T>, "pim::Float holds float or double");

 public:
  using value_type = T;
  Float() = default;
  template <class P, std::enable_if_t<detail::kPlain<P>, int> = 0>
  constexpr Float(P v) : v_(static_cast<T>(v)) {}
  // From an integer: a software conversion.
  template <class U>
  explicit Float(Int<U> i) : v_(static_cast<T>(i.value())) {
    Count(Op::kFloatConvert);
  }
  // From the other precision (float <-> double): a software conversion.
  template <class U>
  explicit Float(Float<U> o) : v_(static_cast<T>(o.value())) {
    Count(Op::kFloatConvert);
  }
  constexpr T value() const { return v_; }
  // To the nearest integer, ties to even (nearbyint): a software conversion.
  template <class U>
  Int<U> Round() const {
    Count(Op::kFloatConvert);
    return Int<U>(static_cast<U>(std::nearbyint(v_)));
  }
  // To an integer (toward zero, as C): a software conversion.
  template <class U>
  Int<U> To() const {
    Count(Op::kFloatConvert);
    return Int<U>(static_cast<U>(v_));
  }
  Float operator-() const { return Float(-v_); }  // a sign-bit flip: costed as nothing beyond the routine calls
  Float& operator+=(Float o) { return *this = *this + o; }
  Float& operator-=(Float o) { return *this = *this - o; }
  Float& operator*=(Float o) { return *this = *this * o; }
  Float& operator/=(Float o) { return *this = *this / o; }
  friend Float operator+(Float a, Float b) {
    Count(kDouble ? Op::kDoubleAdd : Op::kFloatAdd);
    return Float(a.v_ + b.v_);
  }
  friend Float operator-(Float a, Float b) {
    Count(kDouble ? Op::kDoubleSub : Op::kFloatSub);
    return Float(a.v_ - b.v_);
  }
  friend Float operator*(Float a, Float b) {
    Count(kDouble ? Op::kDoubleMul : Op::kFloatMul);
    return Float(a.v_ * b.v_);
  }
  friend Float operator/(Float a, Float b) {
    Count(kDouble ? Op::kDoubleDiv : Op::kFloatDiv);
    return Float(a.v_ / b.v_);
  }
#define PIMOPT_PIM_FLOAT_COMPARE(op)          \
  friend Cond operator op(Float a, Float b) { \
    Count(Op::kFloatConvert);                 \
    return Cond(a.v_ op b.v_, false);         \
  }
  PIMOPT_PIM_FLOAT_COMPARE(==)
  PIMOPT_PIM_FLOAT_COMPARE(!=)
  PIMOPT_PIM_FLOAT_COMPARE(<)
  PIMOPT_PIM_FLOAT_COMPARE(<=)
  PIMOPT_PIM_FLOAT_COMPARE(>)
  PIMOPT_PIM_FLOAT_COMPARE(>=)
#undef PIMOPT_PIM_FLOAT_COMPARE

 private:
  static constexpr bool kDouble = std::is_same_v<T, double>;
  T v_;
};
using f32 = Float<float>;
using f64 = Float<double>;

// ---------------------------------------------------------------- WRAM
namespace detail {
template <class T>
struct ValueOf {
  using type = std::conditional_t<std::is_floating_point_v<T>, Float<T>, Int<T>>;
};
}  // namespace detail
template <class T>
using Value = typename detail::ValueOf<T>::type;

// An element of WRAM: reading it is a load, assigning it a store.
template <class T>
class Ref {
 public:
  explicit Ref(T* p) : p_(p) {}
  Ref(const Ref&) = default;
  operator Value<T>() const {
    Count(Op::kWramLoad);
    return Value<T>(*p_);
  }
  Value<T> load() const { return *this; }
  const Ref& operator=(Value<T> v) const {
    Count(Op::kWramStore);
    *p_ = v.value();
    return *this;
  }
  const Ref& operator=(const Ref& o) const { return *this = o.load(); }
  const Ref& operator+=(Value<T> v) const { return *this = Value<T>(load() + v); }
  const Ref& operator-=(Value<T> v) const { return *this = Value<T>(load() - v); }
  const Ref& operator|=(Value<T> v) const { return *this = Value<T>(load() | v); }
  const Ref& operator&=(Value<T> v) const { return *this = Value<T>(load() & v); }
  const Ref& operator^=(Value<T> v) const { return *this = Value<T>(load() ^ v); }
  T* address() const { return p_; }

 private:
  T* p_;
};

template <class T, class S>
inline auto operator<<(const Ref<T>& a, S s) {
  return a.load() << s;
}
template <class T, class S>
inline auto operator>>(const Ref<T>& a, S s) {
  return a.load() >> s;
}

// A load from / a store to a WRAM variable reached through a plain pointer (a field of a WRAM struct).
template <class T>
inline Value<T> Load(const T* p) {
  Count(Op::kWramLoad);
  return Value<T>(*p);
}
template <class T, class V>
inline void Store(T* p, V v) {
  Count(Op::kWramStore);
  *p = Value<T>(v).value();
}

// A pointer into WRAM (or into the tasklet's stack). Indexing with a run-time value computes an address (one
// instruction); with a plain number it is a constant offset (none).
template <class T>
class WramPtr {
 public:
  WramPtr() = default;
  explicit WramPtr(T* p) : p_(p) {}
  T* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  Ref<T> operator[](I i) const {
    return Ref<T>(p_ + i);
  }
  template <class I>
  Ref<T> operator[](Int<I> i) const {
    Count(Op::kInt32Add);
    return Ref<T>(p_ + i.value());
  }
  Ref<T> operator*() const { return Ref<T>(p_); }
  template <class I>
  WramPtr operator+(Int<I> i) const {
    Count(Op::kInt32Add);
    return WramPtr(p_ + i.value());
  }
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  WramPtr operator+(I i) const {
    Count(Op::kInt32Add);
    return WramPtr(p_ + i);
  }
  WramPtr& operator++() {
    Count(Op::kInt32Add);
    ++p_;
    return *this;
  }
  template <class U>
  WramPtr<U> As() const {
    return WramPtr<U>(reinterpret_cast<U*>(p_));
  }

 private:
  T* p_ = nullptr;
};

// A WRAM variable that other tasklets change while this one reads it (C's `volatile`): reads are loads that a
// spin-wait repeats, so every kSpinQuantum-th read lets the other tasklets run; a spin-wait that nothing can end
// for the profile's spin_limit_cycles fails, naming the tasklet. A write takes effect at its modeled time (the
// other tasklets run up to it first) and counts as progress.
template <class T>
class Volatile {
 public:
  explicit Volatile(T* p) : p_(p) {}
  Value<T> load() const {
    Count(Op::kWramLoad);
    if (++tls_op_counts.volatile_reads >= detail::kSpinQuantum) detail::VolatileYield();
    T v;
    std::memcpy(&v, p_, sizeof(T));
    return Value<T>(v);
  }
  operator Value<T>() const { return load(); }
  // The store takes effect at its modeled time: other tasklets run up to it first.
  const Volatile& operator=(Value<T> v) const {
    Count(Op::kWramStore);
    ++tls_op_counts.volatile_writes;
    detail::VolatileYield();
    const T raw = v.value();
    std::memcpy(p_, &raw, sizeof(T));
    return *this;
  }
  T* address() const { return p_; }

 private:
  T* p_;
};

}  // namespace pimopt::pim
