#include "api/detail/utf8.hpp"

#include <algorithm>

#include "engine/utf8.hpp"

namespace kernelscan::detail {
bool valid_utf8(std::string_view s) {
  return first_invalid_utf8(s) == std::string_view::npos;
}

std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_prefix(std::string_view s, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (out.size() + std::max<std::size_t>(n, 1) > max_bytes) break;
    if (n == 0) {
      out += '?';
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace kernelscan::detail
