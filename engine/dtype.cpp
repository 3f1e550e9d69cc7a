#include "engine/dtype.hpp"

#include <array>
#include <utility>

namespace kernelscan {
namespace {

constexpr std::array<std::pair<dtype, std::string_view>, 9> k_names{{
    {dtype::f64, "f64"},
    {dtype::f32, "f32"},
    {dtype::f16, "f16"},
    {dtype::bf16, "bf16"},
    {dtype::i64, "i64"},
    {dtype::i32, "i32"},
    {dtype::u32, "u32"},
    {dtype::i8, "i8"},
    {dtype::u8, "u8"},
}};

}  // namespace

std::string_view to_string(dtype t) {
  for (const auto& [value, name] : k_names) {
    if (value == t) return name;
  }
  return "?";
}

std::optional<dtype> parse_dtype(std::string_view text) {
  for (const auto& [value, name] : k_names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::size_t size_of(dtype t) {
  switch (t) {
    case dtype::f64:
    case dtype::i64:
      return 8;
    case dtype::f32:
    case dtype::i32:
    case dtype::u32:
      return 4;
    case dtype::f16:
    case dtype::bf16:
      return 2;
    case dtype::i8:
    case dtype::u8:
      return 1;
  }
  return 0;
}

bool is_floating(dtype t) {
  return t == dtype::f64 || t == dtype::f32 || t == dtype::f16 || t == dtype::bf16;
}

double default_tolerance(dtype t) {
  switch (t) {
    case dtype::f64:
      return 1e-8;
    case dtype::f32:
      return 1e-4;
    case dtype::f16:
    case dtype::bf16:
      return 1e-2;
    default:
      return 0.0;  // integers compare exactly
  }
}

}  // namespace kernelscan
