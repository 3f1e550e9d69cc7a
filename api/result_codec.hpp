#pragma once
// A sweep point's result row on the wire (api/openapi.yaml `PointResult`), and its flattening
// into CSV columns.

#include <string>
#include <vector>

#include "api/json.hpp"
#include "engine/fitness.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

json to_json(const point_result& r);
json params_json(const std::vector<std::pair<std::string, std::int64_t>>& params);

// What a job's fitness summary needs of a row (its status and "fitness"), and its "flags": read
// once when the row is stored, so that a store never parses rows. Missing or null members read
// as not correct, score 0.
scored_point score_of(const json& row);
std::vector<std::string> flags_of(const json& row);
// What ranks an ok row for its job's best point, lower first: its median time per unit of work,
// per FLOP where the row counts FLOPs, else per byte, else per launch (the median itself). So
// the best point of a problem-size sweep is the one with the highest throughput, not the
// smallest size. nullopt for a row that is not ok or has no median.
std::optional<double> cost_of(const json& row);

// CSV export: a header naming the sweep parameters then the fixed columns, and one line per
// stored row (the JSON text to_json produced). Fields are quoted per RFC 4180 where needed.
// A job with variants (`variants`) has more columns after those: variant, its speedup over
// the slowest variant of the point (and which that is), and over the baseline variant with the
// ends of its 95% interval.
std::string csv_header(const std::vector<std::string>& param_names, bool variants = false);
std::string csv_line(const json& row, const std::vector<std::string>& param_names,
                     bool variants = false);

}  // namespace kernelscan
