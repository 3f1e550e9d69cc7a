// Placement in a job spec (DESIGN.md §7): "any", a device index, or an object naming a node and
// index, a node, or a catalog model.
#include <gtest/gtest.h>

#include "api/job_spec_codec.hpp"

namespace kernelscan {
namespace {

json body_with(const json& device) {
  return {{"kernel", {{"op", "stream"}, {"variant", "triad"}, {"n", 4096}}}, {"device", device}};
}

std::string first_error_of(const json& body) {
  try {
    parse_job_spec(body, spec_limits{});
  } catch (const validation_error& e) {
    return e.errors().at(0).field + ": " + e.errors().at(0).message;
  }
  return "accepted";
}

std::string first_error(const json& device) {
  return first_error_of(body_with(device));
}

TEST(Placement, ANodeAndIndexAModelOrANodeAreRead) {
  auto spec = parse_job_spec(body_with({{"node", "gpu-07"}, {"index", 3}}), spec_limits{});
  EXPECT_EQ(spec.device_node, "gpu-07");
  EXPECT_EQ(spec.device, 3);
  EXPECT_FALSE(spec.device_model);
  spec = parse_job_spec(body_with({{"model", "MI300X"}}), spec_limits{});
  EXPECT_EQ(spec.device_model, "MI300X");
  EXPECT_FALSE(spec.device);
  EXPECT_FALSE(spec.device_node);
  spec = parse_job_spec(body_with({{"node", "gpu-07"}}), spec_limits{});
  EXPECT_EQ(spec.device_node, "gpu-07");
  spec = parse_job_spec(body_with(2), spec_limits{});
  EXPECT_EQ(spec.device, 2);
  EXPECT_FALSE(spec.device_node);
  spec = parse_job_spec(body_with("any"), spec_limits{});
  EXPECT_FALSE(spec.device || spec.device_node || spec.device_model);
}

TEST(Placement, IsWrittenBackAsGivenAndSurvivesARoundTrip) {
  for (const json& device : {json("any"), json(1), json({{"node", "a"}, {"index", 0}}),
                             json({{"model", "H100-SXM"}}), json({{"node", "b.lab"}})}) {
    const auto spec = parse_job_spec(body_with(device), spec_limits{});
    const json back = to_json(spec);
    EXPECT_EQ(back["device"], device);
    EXPECT_EQ(parse_job_spec(back, spec_limits{}), spec) << device.dump();
  }
}

TEST(Placement, BadPlacementsNameTheFieldAndTheReason) {
  EXPECT_EQ(first_error(json::object()).rfind("device: names no device", 0), 0u);
  EXPECT_NE(
      first_error({{"model", "MI999"}}).find("device.model: \"MI999\" is not a catalog model"),
      std::string::npos);
  EXPECT_NE(first_error({{"model", "MI999"}}).find("MI300X"), std::string::npos);  // the known
  EXPECT_NE(first_error({{"node", "gpu 07"}}).find("device.node: \"gpu 07\" is not a node name"),
            std::string::npos);
  EXPECT_EQ(first_error({{"index", -1}}).rfind("device.index", 0), 0u);
  EXPECT_EQ(first_error({{"index", 1024}}).rfind("device.index", 0), 0u);
  EXPECT_EQ(first_error({{"nodes", "a"}}).rfind("device.nodes: unknown field", 0), 0u);
  EXPECT_EQ(first_error(json::array()).rfind("device: must be \"any\" or a device index", 0), 0u);
}

TEST(SpecStrings, ANulCharacterIsRefusedWhereverAStringIsRead) {
  json body = body_with("any");
  body["name"] = std::string("a\0b", 3);
  EXPECT_EQ(first_error_of(body), "name: must not contain the NUL character (\\u0000)");
  body = body_with("any");
  body["labels"] = {{"k", std::string("\0", 1)}};
  EXPECT_EQ(first_error_of(body), "labels.k: must not contain the NUL character (\\u0000)");
}

}  // namespace
}  // namespace kernelscan
