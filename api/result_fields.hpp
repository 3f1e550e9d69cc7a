#pragma once
// A projection of result rows (`GET /api/v1/jobs/{id}/results?fields=...`): which members of a
// `PointResult` to keep, parsed and checked once per request, then applied to each stored row's
// JSON text without parsing it into a document (a 10,000-point job's rows are 10 MB; building
// them as documents costs the daemon far more than sending them). Immutable once parsed, so
// one selection may project rows on any thread.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kernelscan {

class result_fields {
 public:
  // `list`: comma-separated names, each a member of PointResult (`index`, `time_us`) or, for
  // its object members with a fixed shape, a member of that (`time_us.median`,
  // `params.M` for a sweep parameter in `param_names`). Throws std::invalid_argument naming the
  // offending item for an empty, unknown or repeated name.
  static result_fields parse(std::string_view list, const std::vector<std::string>& param_names);

  // Appends `row` (one stored row: a JSON object, as to_json wrote it) with only the selected
  // members, in the row's order. A selected member the row lacks (`error` on a point that
  // succeeded) is left out; where a member is selected inside an object that is null in the row
  // (a failed point's `time_us`), the null is kept. Throws std::invalid_argument if `row` is
  // not a JSON object.
  void project(std::string_view row, std::string& out) const;

 private:
  struct member {
    std::string name;
    std::vector<std::string> inner;  // members kept inside it; empty: all of it
  };
  std::vector<member> m_members;
};

}  // namespace kernelscan
