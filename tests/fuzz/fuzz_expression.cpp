// libFuzzer target: expression compilation and evaluation. The first line is the expression,
// the next bytes give the values of M, N and K. Only expression_error may escape, and an
// integer result must be exactly what the double result rounds to.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/expression.hpp"

using namespace kernelscan;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  const void* nl = std::memchr(text, '\n', size);
  const std::size_t len = nl ? std::size_t(static_cast<const char*>(nl) - text) : size;
  std::vector<double> values(3, 1.0);
  for (std::size_t i = 0; i < 3 && len + 1 + 8 * (i + 1) <= size; ++i) {
    std::int64_t v = 0;
    std::memcpy(&v, text + len + 1 + 8 * i, 8);
    values[i] = double(v % 100000);
  }
  try {
    const expression e(std::string(text, len), {"M", "N", "K"});
    const double d = e.evaluate(values);
    if (!std::isfinite(d)) std::abort();  // evaluate() promises a finite number
    try {
      const std::int64_t i = e.evaluate_integer(values);
      if (double(i) != std::nearbyint(d)) std::abort();
    } catch (const expression_error&) {
    }
    (void)e.used_parameters();
  } catch (const expression_error&) {
  }
  return 0;
}
