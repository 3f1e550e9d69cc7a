#include "server/detail/comma_list.hpp"

namespace kernelscan::detail {

std::vector<std::string_view> split_commas(std::string_view list) {
  std::vector<std::string_view> out;
  std::size_t from = 0;
  for (;;) {
    const auto comma = list.find(',', from);
    out.push_back(list.substr(from, comma == std::string_view::npos ? comma : comma - from));
    if (comma == std::string_view::npos) return out;
    from = comma + 1;
  }
}

std::string_view trim_spaces(std::string_view s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

}  // namespace kernelscan::detail
