#pragma once

namespace kernelscan::detail {

// Builds a std::visit visitor from lambdas.
template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace kernelscan::detail
