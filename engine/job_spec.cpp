#include "engine/job_spec.hpp"

namespace kernelscan {

std::string_view to_string(engine_kind e) {
  switch (e) {
    case engine_kind::any:
      return "auto";
    case engine_kind::mock:
      return "mock";
    case engine_kind::hip:
      return "hip";
    case engine_kind::opencl:
      return "opencl";
    case engine_kind::imported:
      return "import";
  }
  return "?";
}

std::optional<engine_kind> parse_engine_kind(std::string_view s) {
  for (auto e : {engine_kind::any, engine_kind::mock, engine_kind::hip, engine_kind::opencl,
                 engine_kind::imported}) {
    if (to_string(e) == s) return e;
  }
  return std::nullopt;
}

std::string_view to_string(l2_mode m) {
  return m == l2_mode::cold ? "cold" : "hot";
}

std::string_view to_string(mock_fault f) {
  switch (f) {
    case mock_fault::none:
      return "none";
    case mock_fault::crash:
      return "crash";
    case mock_fault::hang:
      return "hang";
    case mock_fault::abort:
      return "abort";
  }
  return "?";
}

bool job_spec::operator==(const job_spec& o) const {
  auto same_block = [](const std::vector<sweep_parameter>& a,
                       const std::vector<sweep_parameter>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].name != b[i].name || a[i].values != b[i].values) return false;
    }
    return true;
  };
  auto same_sweep = [&](const kernelscan::sweep& a, const kernelscan::sweep& b) {
    return same_block(a.parameters(), b.parameters()) && same_block(a.held_out(), b.held_out());
  };
  return name == o.name && labels == o.labels && engine == o.engine && device == o.device &&
         device_node == o.device_node && device_model == o.device_model && priority == o.priority &&
         kernel == o.kernel && variants == o.variants && baseline_variant == o.baseline_variant &&
         same_sweep(sweep, o.sweep) && timing == o.timing && verify == o.verify &&
         fitness == o.fitness && cache == o.cache &&
         private_held_out_scores == o.private_held_out_scores && mock == o.mock && seed == o.seed;
}

}  // namespace kernelscan
