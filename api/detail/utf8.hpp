#pragma once
// UTF-8 checks for text from outside that may end up in a JSON answer: nlohmann's writer throws
// on invalid UTF-8, which would turn a clear 4xx into a 500. Pure functions; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>

namespace kernelscan::detail {

// Whether `s` is valid UTF-8 as the JSON writer wants it: no stray continuation bytes, overlong
// forms, surrogates, code points beyond U+10FFFF or sequences cut short.
bool valid_utf8(std::string_view s);

// The offset of the first byte of `s` that does not start a valid UTF-8 sequence (as
// valid_utf8() judges), or std::string_view::npos where there is none.
std::size_t first_invalid_utf8(std::string_view s);

// At most `max_bytes` of `s`, cut at a character boundary, with every byte that does not start a
// valid UTF-8 sequence replaced by '?'.
std::string utf8_prefix(std::string_view s, std::size_t max_bytes = std::string_view::npos);

}  // namespace kernelscan::detail
