#include "engine/units.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace kernelscan::units {
namespace {

// `v` in base units with `symbol`, scaled by the largest prefix that keeps it >= 1.
std::string with_prefix(double v, std::string_view symbol, bool small_prefixes) {
  struct prefix {
    double scale;
    const char* name;
  };
  static constexpr std::array<prefix, 9> k_prefixes{{{1e15, "P"},
                                                     {1e12, "T"},
                                                     {1e9, "G"},
                                                     {1e6, "M"},
                                                     {1e3, "k"},
                                                     {1, ""},
                                                     {1e-3, "m"},
                                                     {1e-6, "\u00b5"},
                                                     {1e-9, "n"}}};
  const double mag = std::fabs(v);
  const prefix* chosen = &k_prefixes[5];
  if (std::isfinite(mag) && mag > 0) {
    for (const auto& p : k_prefixes) {
      if (!small_prefixes && p.scale < 1) break;
      chosen = &p;
      if (mag >= p.scale * 0.9995) break;  // 999.7 G prints as 1 T, not 1e+03 G
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s", v / chosen->scale, chosen->name);
  return std::string(buf) + std::string(symbol);
}

}  // namespace

std::string format(flops v) {
  return with_prefix(v.base_value(), "FLOP", false);
}
std::string format(bytes v) {
  return with_prefix(v.base_value(), "B", false);
}
std::string format(seconds v) {
  return with_prefix(v.base_value(), "s", true);
}
std::string format(flop_rate v) {
  return with_prefix(v.base_value(), "FLOP/s", false);
}
std::string format(byte_rate v) {
  return with_prefix(v.base_value(), "B/s", false);
}
std::string format(intensity v) {
  return with_prefix(v.base_value(), "FLOP/B", false);
}

}  // namespace kernelscan::units
