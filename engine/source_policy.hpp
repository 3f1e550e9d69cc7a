#pragma once
// What a user kernel's source may ask of the compiler. Device code is compiled at run time by
// hipRTC/NVRTC; the preprocessor is the one part of that which can read host files, so
// #include is limited to the runtime's own device headers, a fixed list per kernel language
// (HIP's for hip, CUDA's for cuda), and the ways around a plain #include
// (#include_next, #import, #embed, computed includes, __has_include probes, and spellings that
// hide the directive: line splices, comments, the %: digraph) are refused.
// Pure functions; thread-safe.

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/kernel_spec.hpp"

namespace kernelscan {

// The headers a kernel in `language` may include, as written between <> or "".
std::span<const std::string_view> allowed_kernel_includes(kernel_language language);

// nullopt if `source` keeps to the policy for `language`, else why not, starting with the line
// number ("line 3: #include <stdio.h> is not allowed; ...").
std::optional<std::string> check_kernel_source(std::string_view source, kernel_language language);

}  // namespace kernelscan
