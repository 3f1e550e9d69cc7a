#pragma once
// Lists in messages and reports: "a, b, c". Pure; thread-safe.

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

}  // namespace kernelscan
