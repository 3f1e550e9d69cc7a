// The client's job list and submit line, on hand-built Job JSON (no daemon).
#include <gtest/gtest.h>

#include <string>

#include "api/job_codec.hpp"
#include "api/json.hpp"
#include "server/cli_job_table.hpp"

namespace kernelscan {
namespace {

json listed_job(std::int64_t id, const std::string& status, const std::string& created_at) {
  return {{"id", id},
          {"name", "sweep " + std::to_string(id)},
          {"labels", {{"team", "perf"}, {"run", "a"}}},
          {"status", status},
          {"op", "stream"},
          {"priority", 0},
          {"engine", "auto"},
          {"requested_device", "any"},
          {"device", status == "queued" ? json(nullptr) : json(1)},
          {"progress", {{"done", 3}, {"total", 10}, {"ok", 3}, {"failed", 0}}},
          {"created_at", created_at},
          {"started_at", nullptr},
          {"finished_at", nullptr},
          {"cancel_requested", false},
          {"error", nullptr},
          {"summary", {{"best", nullptr}, {"fitness", nullptr}}},
          {"links", {{"self", "/api/v1/jobs/1"}, {"results", "/api/v1/jobs/1/results"}}}};
}

TEST(cli_job_table, ListsJobsWithProgressDeviceLabelsAndAge) {
  const std::int64_t now = *parse_timestamp_ms("2025-01-31T12:00:00.000Z");
  const json jobs = json::array({listed_job(12, "queued", "2025-01-31T11:59:58.000Z"),
                                 listed_job(3, "running", "2025-01-31T11:57:00.000Z")});
  EXPECT_EQ(job_table(jobs, now),
            "id  status   progress  device  name      labels           age\n"
            "12  queued       3/10       -  sweep 12  team=perf,run=a  2s ago\n"
            " 3  running      3/10       1  sweep 3   team=perf,run=a  3m ago\n");
}

// A task's jobs are listed with their scores: a withheld one says so, a running one has none.
TEST(cli_job_table, ATasksJobsShowTheirScores) {
  const std::int64_t now = *parse_timestamp_ms("2025-01-31T12:00:00.000Z");
  json scored = listed_job(7, "succeeded", "2025-01-31T11:59:00.000Z");
  scored["task"] = "axpy";
  scored["summary"]["fitness"] = {{"combined_score", 0.72345}, {"withheld", false}};
  json withheld = listed_job(6, "succeeded", "2025-01-31T11:58:00.000Z");
  withheld["task"] = "axpy";
  withheld["summary"]["fitness"] = {{"combined_score", 0}, {"withheld", true}};
  json running = listed_job(5, "running", "2025-01-31T11:57:00.000Z");
  running["task"] = "axpy";
  EXPECT_EQ(job_table(json::array({scored, withheld, running}), now),
            "id  status     progress     score  device  name     labels           age\n"
            " 7  succeeded      3/10     0.723       1  sweep 7  team=perf,run=a  1m ago\n"
            " 6  succeeded      3/10  withheld       1  sweep 6  team=perf,run=a  2m ago\n"
            " 5  running        3/10         -       1  sweep 5  team=perf,run=a  3m ago\n");
}

TEST(cli_job_table, NoJobs) {
  EXPECT_EQ(job_table(json::array(), 0), "no jobs\n");
}

TEST(cli_job_table, Ages) {
  EXPECT_EQ(format_age(-5000), "0s ago");  // the client's clock behind the daemon's
  EXPECT_EQ(format_age(59'999), "59s ago");
  EXPECT_EQ(format_age(60'000), "1m ago");
  EXPECT_EQ(format_age(3 * 3600'000 + 1), "3h ago");
  EXPECT_EQ(format_age(47 * 3600'000), "47h ago");
  EXPECT_EQ(format_age(50 * 3600'000), "2d ago");
}

TEST(cli_job_table, TimestampsParseBackToWhatTheDaemonFormatted) {
  for (std::int64_t ms : {std::int64_t(0), std::int64_t(951'782'400'123),  // 2000-02-29
                          std::int64_t(1'738'324'800'123), std::int64_t(4'102'444'799'999)}) {
    EXPECT_EQ(parse_timestamp_ms(format_time_ms(ms)), ms) << format_time_ms(ms);
  }
  EXPECT_FALSE(parse_timestamp_ms("2025-01-31 12:00:00"));
  EXPECT_FALSE(parse_timestamp_ms("2025-13-31T12:00:00.000Z"));
  EXPECT_FALSE(parse_timestamp_ms(""));
}

TEST(cli_job_table, SubmitLine) {
  json job = listed_job(17, "queued", "2025-01-31T11:59:58.000Z");
  EXPECT_EQ(job_summary_line(job),
            "job 17 queued: \"sweep 17\", stream, 10 points, device any, priority 0");
  job["name"] = "";
  EXPECT_EQ(job_summary_line(job), "job 17 queued: stream, 10 points, device any, priority 0");
  job["progress"]["total"] = 1;
  EXPECT_EQ(job_summary_line(job), "job 17 queued: stream, 1 point, device any, priority 0");
}

}  // namespace
}  // namespace kernelscan
