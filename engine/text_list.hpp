#pragma once
// Lists in messages and reports ("a, b, c", "16×16×1"), and the blanks around what is read. Pure;
// thread-safe.

#include <string>
#include <string_view>

namespace kernelscan {

// The items of `items` (strings, string views or C strings), separated by ", ".
template <class Range>
std::string comma_joined(const Range& items) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ", ";
    out += std::string_view(item);
    first = false;
  }
  return out;
}

// A launch's three dimensions as people write them: "16×16×1".
template <class Dims>
std::string dims_text(const Dims& d) {
  return std::to_string(d[0]) + "×" + std::to_string(d[1]) + "×" + std::to_string(d[2]);
}

// `s` without the spaces and tabs it begins and ends with (a header value's optional whitespace,
// a CSV cell's padding).
inline std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

}  // namespace kernelscan
