#include "engine/fill_pattern.hpp"

#include "engine/element.hpp"

namespace kernelscan {

double random_element(dtype t, std::uint64_t seed, std::int64_t i) {
  const std::uint64_t r = mix64(seed ^ mix64(std::uint64_t(i)));
  if (is_floating(t)) {
    const std::uint64_t f = mix64(seed ^ k_fill_segment_salt);
    const std::uint64_t g = mix64(f ^ (std::uint64_t(i) >> (6 + f % 7)));
    const float h = float(g % 3) * 0.5f;
    const float s = (g >> 8) & 1 ? 0.5f : 1.0f;
    const float u = float(r >> 40) * (1.0f / 16777216.0f);
    return s * (u - h);
  }
  if (t == dtype::u32 || t == dtype::u8) return double(r >> 60);
  return double(std::int64_t(r >> 60) - 8);
}

void fill_host(const fill_request& f, void* dst) {
  auto* p = static_cast<unsigned char*>(dst);
  const std::size_t w = size_of(f.type);
  for (std::int64_t i = 0; i < f.count; ++i, p += w) {
    switch (f.kind) {
      case fill_kind::random:
        store_element(f.type, random_element(f.type, f.seed, i), p);
        break;
      case fill_kind::value:
        store_element(f.type, f.value, p);
        break;
      case fill_kind::arange:
        store_element(f.type, double(i), p);
        break;
      case fill_kind::unwritten:
        store_unwritten(f.type, p, f.pattern);
        break;
    }
  }
}

}  // namespace kernelscan
