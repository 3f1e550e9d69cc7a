#include "api/device_codec.hpp"

#include "api/job_codec.hpp"

namespace kernelscan {

json to_json(const device_info& d) {
  json j = {{"index", d.index},
            {"engine", to_string(d.engine)},
            {"type", d.type},
            {"vendor", d.vendor},
            {"name", d.name},
            {"arch", d.arch},
            {"model", d.model.empty() ? json(nullptr) : json(d.model)},
            {"compute_units", d.compute_units},
            {"clock_mhz", d.clock_mhz},
            {"memory_bytes", d.memory_bytes},
            {"l2_bytes", d.l2_bytes},
            {"llc_bytes", d.llc_bytes},
            {"core_caches_bytes", d.core_caches_bytes},
            {"driver", d.driver},
            {"pci_bus_id", d.pci_bus_id.empty() ? json(nullptr) : json(d.pci_bus_id)}};
  j["capabilities"] = to_json(d.capabilities);
  j["limits"] = to_json(d.limits);
  j["datasheet"] = d.datasheet ? to_json(*d.datasheet) : json(nullptr);
  j["measured"] = d.measured ? to_json(*d.measured) : json(nullptr);
  return j;
}

json to_json(const device_capabilities& c) {
  const auto names = [](const std::vector<dtype>& types) {
    json out = json::array();
    for (dtype t : types)
      out.push_back(to_string(t));
    return out;
  };
  return {{"fp64", c.fp64},
          {"fp16", c.fp16},
          {"gemm_library", c.gemm_library.empty() ? json(nullptr) : json(c.gemm_library)},
          {"gemm_library_dtypes", names(c.gemm_library_types)},
          {"gemm_builtin_dtypes", names(c.gemm_builtin_types)}};
}

// Each limit the platform told, null where it told none.
json to_json(const device_limits& l) {
  const auto told = [](auto v) { return v > 0 ? json(v) : json(nullptr); };
  return {{"block_threads", told(l.block_threads)},
          {"block_shared_bytes", told(l.block_shared_bytes)},
          {"warp_size", told(l.warp_size)},
          {"unit_threads", told(l.unit_threads)},
          {"unit_registers", told(l.unit_registers)},
          {"unit_shared_bytes", told(l.unit_shared_bytes)}};
}

// A device described before its limits were reported has none told.
device_limits device_limits_from_json(const json& j) {
  device_limits l;
  if (!j.is_object()) return l;
  const auto number = [&](const char* key, auto& out) {
    const auto it = j.find(key);
    if (it != j.end() && it->is_number()) out = it->get<std::remove_reference_t<decltype(out)>>();
  };
  number("block_threads", l.block_threads);
  number("block_shared_bytes", l.block_shared_bytes);
  number("warp_size", l.warp_size);
  number("unit_threads", l.unit_threads);
  number("unit_registers", l.unit_registers);
  number("unit_shared_bytes", l.unit_shared_bytes);
  return l;
}

// A device described before capabilities were reported has a GPU's: everything.
device_capabilities device_capabilities_from_json(const json& j) {
  device_capabilities c;
  if (j.is_null()) return c;
  const auto types = [](const json& list) {
    std::vector<dtype> out;
    for (const auto& t : list) {
      const auto parsed = parse_dtype(t.get<std::string>());
      if (!parsed) {
        throw std::runtime_error("bad device description: capabilities: unknown dtype " + t.dump());
      }
      out.push_back(*parsed);
    }
    return out;
  };
  c.fp64 = j.at("fp64").get<bool>();
  c.fp16 = j.at("fp16").get<bool>();
  c.gemm_library = j.at("gemm_library").is_null() ? "" : j.at("gemm_library").get<std::string>();
  c.gemm_library_types = types(j.at("gemm_library_dtypes"));
  c.gemm_builtin_types = types(j.at("gemm_builtin_dtypes"));
  return c;
}

json to_json(const device_peaks& p) {
  return {{"f64_tflops", p.f64_tflops},
          {"f32_tflops", p.f32_tflops},
          {"f16_tflops", p.f16_tflops},
          {"bf16_tflops", p.bf16_tflops},
          {"i8_tops", p.i8_tops},
          {"vector_f32_tflops", p.vector_f32_tflops},
          {"bandwidth_gbps", p.bandwidth_gbps}};
}

device_peaks device_peaks_from_json(const json& p) {
  return {p.at("f64_tflops").get<double>(),    p.at("f32_tflops").get<double>(),
          p.at("f16_tflops").get<double>(),    p.at("bf16_tflops").get<double>(),
          p.at("i8_tops").get<double>(),       p.at("vector_f32_tflops").get<double>(),
          p.at("bandwidth_gbps").get<double>()};
}

json to_json(const measured_roofline& m) {
  json j = to_json(m.peaks);
  j["measured_at"] = format_time_ms(m.measured_ms);  // when; there is no duration to give
  j["method"] = m.method;
  return j;
}

measured_roofline measured_roofline_from_json(const json& j) {
  std::int64_t when = 0;
  if (j.contains("measured_at")) {
    const auto parsed = parse_time_ms(j.at("measured_at").get<std::string>());
    if (!parsed) throw std::runtime_error("measured_at is not a timestamp");
    when = *parsed;
  } else {
    when = j.at("measured_ms").get<std::int64_t>();  // stored by versions before measured_at
  }
  return {device_peaks_from_json(j), when, j.at("method").get<std::string>()};
}

device_info device_info_from_json(const json& j) {
  try {
    device_info d;
    d.index = j.at("index").get<int>();
    const auto engine = j.at("engine").get<std::string>();
    d.engine = parse_engine_kind(engine).value_or(engine_kind::mock);
    d.type = j.value("type", std::string("gpu"));
    d.vendor = j.at("vendor").get<std::string>();
    d.name = j.at("name").get<std::string>();
    d.arch = j.at("arch").get<std::string>();
    d.model = j.at("model").is_null() ? "" : j.at("model").get<std::string>();
    d.compute_units = j.at("compute_units").get<int>();
    d.clock_mhz = j.at("clock_mhz").get<double>();
    d.memory_bytes = j.at("memory_bytes").get<std::uint64_t>();
    d.l2_bytes = j.at("l2_bytes").get<std::uint64_t>();
    d.llc_bytes = j.at("llc_bytes").get<std::uint64_t>();
    d.core_caches_bytes = j.value("core_caches_bytes", std::uint64_t(0));
    d.driver = j.at("driver").get<std::string>();
    if (j.contains("pci_bus_id") && j["pci_bus_id"].is_string()) {
      d.pci_bus_id = j["pci_bus_id"].get<std::string>();
    }
    if (j.contains("capabilities")) {
      d.capabilities = device_capabilities_from_json(j["capabilities"]);
    }
    if (j.contains("limits")) d.limits = device_limits_from_json(j["limits"]);
    if (const auto& p = j.at("datasheet"); !p.is_null()) d.datasheet = device_peaks_from_json(p);
    if (j.contains("measured") && !j["measured"].is_null()) {
      d.measured = measured_roofline_from_json(j["measured"]);
    }
    return d;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("bad device description: ") + e.what());
  }
}

}  // namespace kernelscan
