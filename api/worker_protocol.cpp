#include "api/worker_protocol.hpp"

#include "api/device_codec.hpp"
#include "api/result_codec.hpp"

#include <cstdio>

namespace kernelscan::worker_protocol {

std::string job_line(std::int64_t job_id, std::string_view spec_json) {
  std::string out = R"({"type":"job","job":)" + std::to_string(job_id) + R"(,"spec":)";
  out += spec_json;
  out += "}\n";
  return out;
}

std::string measure_line(std::uint64_t seq, std::int64_t job_id, std::uint64_t index) {
  return R"({"type":"measure","seq":)" + std::to_string(seq) + R"(,"job":)" +
         std::to_string(job_id) + R"(,"index":)" + std::to_string(index) + "}\n";
}

std::string drop_line(std::int64_t job_id) {
  return R"({"type":"drop","job":)" + std::to_string(job_id) + "}\n";
}

std::string measure_roofline_line() {
  return "{\"type\":\"roofline\",\"measure\":true}\n";
}

std::string set_roofline_line(const measured_roofline& roofline) {
  return json{{"type", "roofline"}, {"set", to_json(roofline)}}.dump() + "\n";
}

std::string roofline_line(const measured_roofline& roofline) {
  return json{{"type", "roofline"}, {"roofline", to_json(roofline)}}.dump() + "\n";
}

std::string roofline_failure_line(std::string_view message) {
  return json{{"type", "roofline"}, {"error", message}}.dump() + "\n";
}

std::string dropped_line(std::uint64_t seq) {
  return R"({"type":"dropped","seq":)" + std::to_string(seq) + "}\n";
}

std::string ready_line(const device_info& device) {
  return json{{"type", "ready"}, {"device", to_json(device)}}.dump() + "\n";
}

std::string result_line(std::uint64_t seq, double wall_ms, const point_result& result) {
  char head[96];
  std::snprintf(head, sizeof head, R"({"type":"result","seq":%llu,"wall_ms":%.3f,"result":)",
                static_cast<unsigned long long>(seq), wall_ms);
  return head + to_json(result).dump() + "}\n";
}

std::string result_line(std::uint64_t seq, double wall_ms,
                        const std::vector<point_result>& results) {
  if (results.size() == 1) return result_line(seq, wall_ms, results.front());
  char head[96];
  std::snprintf(head, sizeof head, R"({"type":"result","seq":%llu,"wall_ms":%.3f,"result":[)",
                static_cast<unsigned long long>(seq), wall_ms);
  std::string out = head;
  for (std::size_t i = 0; i < results.size(); ++i)
    out += (i ? "," : "") + to_json(results[i]).dump();
  return out + "]}\n";
}

std::string failure_line(std::uint64_t seq, std::string_view type, std::string_view message,
                         bool exiting) {
  json j{{"type", "failure"}, {"seq", seq}, {"error", {{"type", type}, {"message", message}}}};
  if (exiting) j["exiting"] = true;
  return j.dump() + "\n";
}

daemon_message parse_daemon_line(std::string_view line) {
  try {
    json j = json::parse(line);
    daemon_message m;
    const auto type = j.at("type").get<std::string>();
    if (type == "roofline") {
      m.type = daemon_message::kind::roofline;
      if (j.contains("set")) m.set_roofline = measured_roofline_from_json(j.at("set"));
      return m;
    }
    m.job = j.at("job").get<std::int64_t>();
    if (type == "job") {
      m.type = daemon_message::kind::job;
      m.spec = std::move(j.at("spec"));
    } else if (type == "drop") {
      m.type = daemon_message::kind::drop;
    } else if (type == "measure") {
      m.type = daemon_message::kind::measure;
      m.seq = j.at("seq").get<std::uint64_t>();
      m.index = j.at("index").get<std::uint64_t>();
    } else {
      throw protocol_error("unknown message type \"" + type + "\"");
    }
    return m;
  } catch (const json::exception& e) {
    throw protocol_error(std::string("bad message from the daemon: ") + e.what());
  }
}

worker_message parse_worker_line(std::string_view line) {
  try {
    json j = json::parse(line);
    worker_message m;
    const auto type = j.at("type").get<std::string>();
    if (type == "ready") {
      m.type = worker_message::kind::ready;
      m.device = device_info_from_json(j.at("device"));
    } else if (type == "result") {
      m.type = worker_message::kind::result;
      m.seq = j.at("seq").get<std::uint64_t>();
      m.wall_ms = j.value("wall_ms", 0.0);
      m.result = std::move(j.at("result"));
      if (m.result.is_array()) {
        // The rows of a point's variants: each is stored as its own text.
        if (m.result.empty()) throw protocol_error("result without rows");
        for (const auto& row : m.result) {
          if (!row.is_object() || !row.contains("index") || !row.contains("status")) {
            throw protocol_error("result without index or status");
          }
        }
        return m;
      }
      if (!m.result.is_object() || !m.result.contains("index") || !m.result.contains("status")) {
        throw protocol_error("result without index or status");
      }
      // The row is the last member: its text runs from its key (the first "result": in the
      // line; the head before it has none) to the closing brace.
      constexpr std::string_view key = R"("result":)";
      const auto at = line.find(key);
      std::string_view text = line.substr(at + key.size());
      while (!text.empty() && (text.back() == '}' || text.back() == ' ' || text.back() == '\r')) {
        if (text.back() == '}') {
          text.remove_suffix(1);
          break;
        }
        text.remove_suffix(1);
      }
      m.result_text = std::string(text);
    } else if (type == "roofline") {
      m.type = worker_message::kind::roofline;
      if (j.contains("error")) {
        m.error_message = j.at("error").get<std::string>();
      } else {
        m.roofline = measured_roofline_from_json(j.at("roofline"));
      }
    } else if (type == "dropped") {
      m.type = worker_message::kind::dropped;
      m.seq = j.at("seq").get<std::uint64_t>();
    } else if (type == "failure") {
      m.type = worker_message::kind::failure;
      m.seq = j.at("seq").get<std::uint64_t>();
      m.error_type = j.at("error").at("type").get<std::string>();
      m.error_message = j.at("error").at("message").get<std::string>();
      m.exiting = j.value("exiting", false);
    } else {
      throw protocol_error("unknown message type \"" + type + "\"");
    }
    return m;
  } catch (const json::exception& e) {
    throw protocol_error(std::string("bad message from a worker: ") + e.what());
  } catch (const std::runtime_error& e) {
    throw protocol_error(e.what());
  }
}

}  // namespace kernelscan::worker_protocol
