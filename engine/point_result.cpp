#include "engine/point_result.hpp"

namespace kernelscan {

std::string_view to_string(point_status s) {
  return s == point_status::ok ? "ok" : "failed";
}

bool uneven_launches(const verification_result& v) {
  if (!v.launch_spread || *v.launch_spread <= k_uneven_launches) return false;
  return v.launch_excess_us.value_or(0) > k_uneven_over_builtin * v.builtin_excess_us.value_or(0);
}

point_result failed_point(std::uint64_t index,
                          std::vector<std::pair<std::string, std::int64_t>> params,
                          std::string type, std::string message) {
  point_result r;
  r.index = index;
  r.params = std::move(params);
  r.status = point_status::failed;
  if (type == "device_fault" || type == "timeout") r.flags.push_back(type);
  r.error = point_error{std::move(type), std::move(message)};
  r.verification.note = "not run: the point failed";
  return r;
}

}  // namespace kernelscan
