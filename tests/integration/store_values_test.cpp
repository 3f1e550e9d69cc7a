// Values either store keeps as they came: what PostgreSQL's text cannot hold (a NUL character,
// bytes that are not UTF-8) is refused at the door with a clear error, on both stores alike.
#include <gtest/gtest.h>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

TEST(StoreValues, ANulCharacterInANameOrLabelIsRefusedNamingTheField) {
  daemon_process daemon;
  daemon.start();
  json spec = stream_sweep(1, 0);
  spec["name"] = std::string("a\0b", 3);
  spec["labels"] = {{"team", std::string("p\0f", 3)}};
  const auto r = daemon.post_json("/api/v1/jobs", spec);
  ASSERT_EQ(r.status, 422) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "name") << r.text;
  EXPECT_EQ(r.body["error"]["details"][1]["field"], "labels.team") << r.text;
  EXPECT_NE(r.text.find("NUL"), std::string::npos);
  // Nothing half-stored: the next job is job 1.
  EXPECT_EQ(daemon.submit(stream_sweep(1, 0)), 1);
}

TEST(StoreValues, AnIdempotencyKeyMustBePrintableAscii) {
  daemon_process daemon;
  daemon.start();
  const auto r =
      daemon.post("/api/v1/jobs", stream_sweep(1, 0).dump(), {{"Idempotency-Key", "cl\xc3\xa9-1"}});
  EXPECT_EQ(r.status, 400) << r.text;
  EXPECT_EQ(r.body["error"]["type"], "invalid_header") << r.text;
  const auto ok = daemon.post("/api/v1/jobs", stream_sweep(1, 0).dump(),
                              {{"Idempotency-Key", "nightly run #42"}});
  EXPECT_EQ(ok.status, 201) << ok.text;
}

}  // namespace
}  // namespace kernelscan::testing
