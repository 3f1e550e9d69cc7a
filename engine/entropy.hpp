#pragma once
// 64 bits from the system's entropy (std::random_device, which reads the operating system's
// random source on Linux): the keys and seeds no kernel, and no one who saw earlier ones, may
// foresee (the answer mask's key, a point's draw key, the seed a job gets when it names none).

#include <cstdint>
#include <random>

namespace kernelscan {

inline std::uint64_t entropy64() {
  std::random_device entropy;
  const std::uint64_t high = entropy();
  return high << 32 | entropy();
}

}  // namespace kernelscan
