#pragma once
// How long a point may take, and how long a task's held-out point is made to take.
//
// A point's watchdog ends its worker when the point outlives its budget: --point-timeout and
// twice the point's own time budget (its sampling's max_time_ms and a mock point's delay).
//
// Where a task keeps its held-out scores private, nothing a candidate reads carries a held-out
// point's time, but the wall time the point took would: when its job ends, when its progress
// moves, when the device is free again. A kernel whose time grows with the size it is given
// would have its held-out size read back from the job's end in one submission. So the worker
// holds such a point until the first rung of a ladder q, 2q, 4q, ... that covers the time it
// took, q being a second and twice the point's own time budget, the last rung a little before its
// watchdog's deadline: an honest point takes q (at most twice its time beyond), and a kernel
// that stretches its time to say something says at most which rung it reached (a few within the
// watchdog's budget). A point that passes the last rung is held until the watchdog ends it, as
// it ends a point that hangs: its status is `timeout`, whatever it took.
//
// Plain functions; thread-safe.

#include <cstdint>
#include <optional>

#include "engine/job_spec.hpp"

namespace kernelscan {

// Seconds a point of `spec` may take before its watchdog ends its worker.
double point_budget_s(const job_spec& spec, double point_timeout_s);

// What the worker does with a point that took `wall_ms`, `budget_ms` being its watchdog's
// budget (point_budget_s).
struct point_hold {
  enum class kind {
    none,      // its time is no secret: answered at once (a public point, or shown scores)
    until,     // answered once `wall_ms` have passed since the point began
    watchdog,  // held past the watchdog's deadline: it ends the worker, the point `timeout`
  };
  kind what = kind::none;
  double wall_ms = 0;
};
point_hold held_out_hold(const job_spec& spec, std::uint64_t index, double wall_ms,
                         double budget_ms);

}  // namespace kernelscan
