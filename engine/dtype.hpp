#pragma once
// Element types of kernels and kernel arguments. Plain data; thread-safe.

#include <cstddef>
#include <optional>
#include <string_view>

namespace kernelscan {

enum class dtype { f64, f32, f16, bf16, i64, i32, u32, i8, u8 };

// The spelling used on the wire ("f32", "bf16", ...).
std::string_view to_string(dtype t);
std::optional<dtype> parse_dtype(std::string_view text);

std::size_t size_of(dtype t);
bool is_floating(dtype t);

// Default verification tolerance (used for both atol and rtol) per DESIGN.md §4.
double default_tolerance(dtype t);

}  // namespace kernelscan
