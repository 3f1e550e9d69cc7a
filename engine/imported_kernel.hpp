#pragma once
// A kernel, or a component of a pipeline, measured by another tool and imported (POST
// /api/v1/imports): what its source says about its time and its work, and how it becomes a
// result row with the same analysis as a measured point (DESIGN.md §5).
//
// Units: microseconds, FLOP and bytes per call. Plain values; pure functions, thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/device_catalog.hpp"
#include "engine/dtype.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

struct imported_kernel {
  std::string name;  // as the source names it
  std::string type;  // the source's kind of component, or ""
  // Every call's time when the source has them (a trace): every statistic is computed from them
  // and `stats` is ignored.
  std::vector<double> samples_us;
  imported_stats stats;  // otherwise: what the source's summary gives
  std::optional<std::uint64_t> calls;
  std::optional<double> total_us;
  std::optional<double> time_pct;
  std::optional<double> flops;  // per call
  std::optional<double> bytes;  // per call, DRAM traffic
};

// What the analysis of an import measures against.
struct import_target {
  const device_model* model = nullptr;  // datasheet peaks; nullptr: no roofline
  std::string device_name;              // the device as named (the model's name, or the
                                        // source's), "" when unknown
  dtype roof_type = dtype::f32;         // the compute ceiling (a peak per dtype)
};

// Fills in what a source gives that the others compute: from samples, every statistic, the
// number of calls and their total (sorted copy; O(n log n)). Leaves a summary as it is.
imported_kernel with_statistics(imported_kernel k);

// The result row of imported kernel `k` at `index`: status ok, its statistics as far as known,
// and metrics (TFLOP/s, GB/s, intensity; with a device model also the roof and the bound) when
// both its flops and bytes are known. What could not be analysed is said in origin->notes.
// Precondition: the median is known (`with_statistics` for a trace).
point_result imported_point(const imported_kernel& k, std::uint64_t index,
                            std::vector<std::pair<std::string, std::int64_t>> params,
                            const import_target& target, std::string_view format);

}  // namespace kernelscan
