#include "engine/sweep.hpp"

#include <limits>

namespace kernelscan {

sweep::sweep(std::vector<sweep_parameter> parameters) : m_parameters(std::move(parameters)) {
  constexpr auto k_max = std::numeric_limits<std::uint64_t>::max();
  m_size = 1;
  for (const auto& p : m_parameters) {
    const std::uint64_t n = p.values.size();
    if (n == 0) {
      m_size = 0;
      return;
    }
    m_size = (m_size > k_max / n) ? k_max : m_size * n;
  }
}

std::vector<std::string> sweep::names() const {
  std::vector<std::string> out;
  out.reserve(m_parameters.size());
  for (const auto& p : m_parameters)
    out.push_back(p.name);
  return out;
}

std::vector<std::int64_t> sweep::point(std::uint64_t index) const {
  std::vector<std::int64_t> out(m_parameters.size());
  for (std::size_t i = m_parameters.size(); i-- > 0;) {
    const auto& values = m_parameters[i].values;
    out[i] = values[index % values.size()];
    index /= values.size();
  }
  return out;
}

void sweep::point_values(std::uint64_t index, std::vector<double>& out) const {
  out.resize(m_parameters.size());
  for (std::size_t i = m_parameters.size(); i-- > 0;) {
    const auto& values = m_parameters[i].values;
    out[i] = static_cast<double>(values[index % values.size()]);
    index /= values.size();
  }
}

}  // namespace kernelscan
