#pragma once
// Comma-separated header and parameter values (Accept-Encoding, If-None-Match, ?status=,
// --cors-origin). Pure functions; thread-safe.

#include <string_view>
#include <vector>

namespace kernelscan::detail {

// Every item between commas, untrimmed, empty ones included ("" gives one empty item). The
// views point into `list`.
std::vector<std::string_view> split_commas(std::string_view list);

// `s` without leading and trailing spaces.
std::string_view trim_spaces(std::string_view s);

}  // namespace kernelscan::detail
