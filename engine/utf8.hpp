#pragma once
// UTF-8 sequences, as the JSON writer takes them: what the engine writes of text from outside
// (compiler logs, what a kernel prints) and what the API checks. A pure function; thread-safe.

#include <cstddef>
#include <string_view>

namespace kernelscan {

// The length of the valid UTF-8 sequence that starts at s[i] (1 to 4), or 0 where none does: a
// stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or cut short.
std::size_t utf8_sequence(std::string_view s, std::size_t i);

}  // namespace kernelscan
