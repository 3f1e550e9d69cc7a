#include <set>

#include "api/device_codec.hpp"
#include "api/job_codec.hpp"
#include "server/detail/http_api_impl.hpp"
#include "server/fleet_devices.hpp"
#include "server/fleet_relay.hpp"

namespace kernelscan {
namespace {

json device_json(const device_view& v) {
  json j = to_json(v);
  j["last_heartbeat_at"] = format_time_ms(unix_time_ms());
  return j;
}

// The 404 of a node the fleet does not have, naming those it has.
[[noreturn]] void no_such_node(const std::string& node, const std::set<std::string>& nodes) {
  std::string known;
  for (const auto& n : nodes)
    known += (known.empty() ? "" : ", ") + n;
  throw api_error(404, "not_found", "no node \"" + node + "\" in the fleet (nodes: " + known + ")",
                  {{"node", "no node \"" + node + "\" (nodes: " + known + ")"}});
}

}  // namespace

// Every device of the fleet, or with `?node=NAME` that node's (a 404 naming the fleet's nodes
// where it has none).
response http_api::impl::list_devices(const request& req) {
  for (const auto& [key, value] : req.query) {
    if (key != "node") throw bad_parameter(key, "unknown parameter (known: node)");
  }
  const auto node = query_value(req, "node");
  if (node && node->empty()) {
    throw bad_parameter("node", "is empty (name a node of the fleet, or leave it out for all)");
  }
  json out = json::array();
  std::set<std::string> nodes;
  for (auto& d : fleet_devices(store, sched, config.lease_timeout_s, !config.database.empty())) {
    const std::string name = device_text(d, "node");
    nodes.insert(name);
    if (!node || name == *node) out.push_back(std::move(d));
  }
  if (node && out.empty()) no_such_node(*node, nodes);
  return json_response(200, {{"devices", std::move(out)}});
}

// The node a device route means: `?node=NAME`, else this node (the routes' meaning before
// fleets). The only query parameter those routes take.
std::string http_api::impl::addressed_node(const request& req) const {
  for (const auto& [key, value] : req.query) {
    if (key != "node") throw bad_parameter(key, "unknown parameter (known: node)");
  }
  auto node = query_value(req, "node");
  if (node && node->empty()) {
    throw bad_parameter("node", "is empty (name a node of the fleet, or leave it out for " +
                                    sched.node() + "'s devices)");
  }
  return node.value_or(sched.node());
}

// Device `{index}` of `node`, as GET /api/v1/devices lists it (this node's live, another's as
// its last heartbeat wrote it); a 404 that says whether the node or its index is unknown.
json http_api::impl::fleet_device(const std::string& node, const std::string& index) {
  std::set<std::string> nodes;
  std::string indices;  // the node's, for the message
  for (auto& d : fleet_devices(store, sched, config.lease_timeout_s, !config.database.empty())) {
    const std::string name = device_text(d, "node");
    nodes.insert(name);
    if (name != node) continue;
    const std::string i = std::to_string(d.value("index", -1));
    if (i == index) return std::move(d);
    indices += (indices.empty() ? "" : ", ") + i;
  }
  if (!nodes.count(node)) no_such_node(node, nodes);
  const std::string has = indices.empty() ? "none" : indices;
  throw api_error(
      404, "not_found",
      "no device " + index + " on node \"" + node + "\" (its devices: " + has + ")",
      {{"index", "node \"" + node + "\" has no device " + index + " (its devices: " + has + ")"}});
}

response http_api::impl::get_device(const request& req) {
  const std::string node = addressed_node(req);
  if (node == sched.node()) {
    for (const auto& d : sched.devices()) {
      if (std::to_string(d.info.index) == req.captures.at(0)) {
        return json_response(200, device_json(d));
      }
    }
  }
  return json_response(200, fleet_device(node, req.captures.at(0)));
}

// Asks for the device's roofline to be measured again (between jobs); 202 with the device.
// Another node's device is asked of its node through the store, as a cancel reaches it.
response http_api::impl::measure_roofline(const request& req) {
  const std::string node = addressed_node(req);
  if (node == sched.node()) {
    for (const auto& d : sched.devices()) {
      if (std::to_string(d.info.index) == req.captures.at(0) &&
          sched.request_roofline(d.info.index)) {
        json j = device_json(d);
        j["roofline_requested"] = true;
        return json_response(202, j);
      }
    }
  }
  json d = fleet_device(node, req.captures.at(0));  // throws 404 for this node's, seen above
  if (device_text(d, "state") == "offline") {
    throw api_error(409, "node_offline",
                    "node \"" + node + "\" is offline (last heartbeat " +
                        device_text(d, "last_heartbeat_at") +
                        "): only the node that has a device measures it; ask again once it "
                        "runs",
                    {{"node", "is offline"}}, json{{"node", node}});
  }
  store.publish_event(fleet_relay::roofline_request(node, d.value("index", 0)));
  d["roofline_requested"] = true;
  return json_response(202, d);
}

}  // namespace kernelscan
