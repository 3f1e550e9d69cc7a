#pragma once
// Strong types for the quantities of the roofline (DESIGN.md §5): work in FLOP, traffic in bytes,
// time, and their ratios. A quantity's dimension is the exponents of (FLOP, byte, second) in its
// type, so the compiler checks every formula: a FLOP/s divided by a B/s is a FLOP/B, and adding
// a time to a rate does not compile. Values are kept in base units (FLOP, B, s); the named
// constructors and `in()` convert from and to the units people read (µs, TFLOP/s, GB/s).
// Decimal prefixes throughout: a GB/s is 1e9 B/s, as datasheets count.
//
// Plain values; constexpr; thread-safe.

#include <compare>
#include <string>

namespace kernelscan::units {

template <int Flop, int Byte, int Second>
class quantity {
 public:
  constexpr quantity() = default;
  // From a value in base units (FLOP, B, s and their products).
  static constexpr quantity base(double v) { return quantity(v); }
  constexpr double base_value() const { return m_value; }
  // The value expressed in `unit`, a quantity of the same dimension: rate.in(tflop_per_s).
  constexpr double in(quantity unit) const { return m_value / unit.m_value; }

  constexpr quantity operator+(quantity o) const { return quantity(m_value + o.m_value); }
  constexpr quantity operator-(quantity o) const { return quantity(m_value - o.m_value); }
  constexpr quantity operator*(double k) const { return quantity(m_value * k); }
  constexpr quantity operator/(double k) const { return quantity(m_value / k); }
  friend constexpr quantity operator*(double k, quantity q) { return q * k; }
  // A dimensionless ratio of two quantities of one dimension.
  constexpr double operator/(quantity o) const { return m_value / o.m_value; }
  constexpr auto operator<=>(const quantity&) const = default;

 private:
  constexpr explicit quantity(double v) : m_value(v) {}
  double m_value = 0;
};

template <int F1, int B1, int S1, int F2, int B2, int S2>
constexpr quantity<F1 + F2, B1 + B2, S1 + S2> operator*(quantity<F1, B1, S1> a,
                                                        quantity<F2, B2, S2> b) {
  return quantity<F1 + F2, B1 + B2, S1 + S2>::base(a.base_value() * b.base_value());
}

// Division of different dimensions (one dimension divides to a plain double, above).
template <int F1, int B1, int S1, int F2, int B2, int S2>
requires(F1 != F2 || B1 != B2 || S1 != S2) constexpr quantity<F1 - F2, B1 - B2, S1 - S2> operator/(
    quantity<F1, B1, S1> a, quantity<F2, B2, S2> b) {
  return quantity<F1 - F2, B1 - B2, S1 - S2>::base(a.base_value() / b.base_value());
}

using flops = quantity<1, 0, 0>;       // an amount of floating-point work
using bytes = quantity<0, 1, 0>;       // an amount of memory traffic
using seconds = quantity<0, 0, 1>;     // a time
using flop_rate = quantity<1, 0, -1>;  // FLOP/s
using byte_rate = quantity<0, 1, -1>;  // B/s
using intensity = quantity<1, -1, 0>;  // FLOP/B, arithmetic intensity

// Units to construct from and read in.
inline constexpr flops flop = flops::base(1);
inline constexpr bytes byte = bytes::base(1);
inline constexpr seconds second = seconds::base(1);
inline constexpr seconds microsecond = seconds::base(1e-6);
inline constexpr flop_rate tflop_per_s = flop_rate::base(1e12);
inline constexpr byte_rate gb_per_s = byte_rate::base(1e9);
inline constexpr byte_rate tb_per_s = byte_rate::base(1e12);
inline constexpr intensity flop_per_byte = intensity::base(1);

constexpr seconds microseconds(double us) {
  return microsecond * us;
}
constexpr flop_rate tflops(double v) {
  return tflop_per_s * v;
}
constexpr byte_rate gbps(double v) {
  return gb_per_s * v;
}

// "1.23 TFLOP/s", "850 GB/s", "12.5 µs", "3.2 FLOP/B": three significant digits with the
// largest decimal prefix (k M G T P, or m µ n for small times) that keeps the number >= 1.
std::string format(flops v);
std::string format(bytes v);
std::string format(seconds v);
std::string format(flop_rate v);
std::string format(byte_rate v);
std::string format(intensity v);

}  // namespace kernelscan::units
