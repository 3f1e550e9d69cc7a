#include "engine/sweep.hpp"

#include <limits>

namespace kernelscan {
namespace {

constexpr auto k_max = std::numeric_limits<std::uint64_t>::max();

std::uint64_t product(const std::vector<sweep_parameter>& parameters) {
  std::uint64_t size = 1;
  for (const auto& p : parameters) {
    const std::uint64_t n = p.values.size();
    if (n == 0) return 0;
    size = (size > k_max / n) ? k_max : size * n;
  }
  return size;
}

}  // namespace

sweep::sweep(std::vector<sweep_parameter> parameters) : m_parameters(std::move(parameters)) {
  m_public_size = m_size = product(m_parameters);
}

sweep::sweep(std::vector<sweep_parameter> parameters, std::vector<sweep_parameter> held_out)
    : m_parameters(std::move(parameters)), m_held_out(std::move(held_out)) {
  m_public_size = product(m_parameters);
  if (m_held_out.empty()) {
    m_size = m_public_size;
    return;
  }
  const std::uint64_t more = product(m_held_out);
  m_size = m_public_size > k_max - more ? k_max : m_public_size + more;
}

std::vector<std::string> sweep::names() const {
  std::vector<std::string> out;
  out.reserve(m_parameters.size());
  for (const auto& p : m_parameters)
    out.push_back(p.name);
  return out;
}

const std::vector<sweep_parameter>& sweep::block(std::uint64_t& index) const {
  if (index < m_public_size || m_held_out.empty()) return m_parameters;
  index -= m_public_size;
  return m_held_out;
}

std::vector<std::int64_t> sweep::point(std::uint64_t index) const {
  const auto& params = block(index);
  std::vector<std::int64_t> out(params.size());
  for (std::size_t i = params.size(); i-- > 0;) {
    const auto& values = params[i].values;
    out[i] = values[index % values.size()];
    index /= values.size();
  }
  return out;
}

void sweep::point_values(std::uint64_t index, std::vector<double>& out) const {
  const auto& params = block(index);
  out.resize(params.size());
  for (std::size_t i = params.size(); i-- > 0;) {
    const auto& values = params[i].values;
    out[i] = static_cast<double>(values[index % values.size()]);
    index /= values.size();
  }
}

}  // namespace kernelscan
