#pragma once

namespace kernelscan::detail {

// Builds a std::visit visitor from lambdas.
template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
// Needed by compilers without aggregate class template argument deduction (clang 14).
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

}  // namespace kernelscan::detail
