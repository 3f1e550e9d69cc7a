#include "server/point_budget.hpp"

#include <algorithm>

namespace kernelscan {
namespace {

// The first rung of a held-out point's ladder beyond twice its own time budget.
constexpr double k_first_rung_floor_ms = 1000;
// How far before its watchdog's deadline a held point is answered at the latest: the deadline
// runs from when the daemon saw the point begin, which is not quite when the worker did.
constexpr double k_deadline_margin_ms = 250;
constexpr double k_deadline_margin_share = 0.05;

}  // namespace

double point_budget_s(const job_spec& spec, double point_timeout_s) {
  return point_timeout_s + 2.0 * (spec.timing.max_time_ms + spec.mock.delay_ms) / 1000.0;
}

point_hold held_out_hold(const job_spec& spec, std::uint64_t index, double wall_ms,
                         double budget_ms) {
  if (!spec.private_held_out_scores || index < spec.sweep.public_size()) return {};
  double rung = k_first_rung_floor_ms + 2.0 * (spec.timing.max_time_ms + spec.mock.delay_ms);
  while (rung < wall_ms)
    rung *= 2;
  const double latest =
      budget_ms - std::max(k_deadline_margin_ms, k_deadline_margin_share * budget_ms);
  if (rung <= latest) return {point_hold::kind::until, rung};
  // The last rung is the latest answer itself.
  if (wall_ms <= latest) return {point_hold::kind::until, latest};
  return {point_hold::kind::watchdog, budget_ms};
}

}  // namespace kernelscan
