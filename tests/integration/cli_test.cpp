// The command-line client (`kernelscan submit`, `jobs`, `results`) run as a child process
// against a real daemon, checked against what the HTTP API itself answers.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/daemon_process.hpp"
#include "tests/support/import_samples.hpp"
#include "tests/support/raw_client.hpp"
#include "tests/support/required_device.hpp"

extern char** environ;

namespace kernelscan::testing {
namespace {

struct cli_run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A kernelscan binary started by start_cli, its output not yet read.
struct cli_child {
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
};

// Starts the kernelscan binary with `args`, feeding `input` to its standard input. The child gets
// this environment without KERNELSCAN_* variables (plus `env`), so a developer's settings cannot
// leak into a test.
cli_child start_cli(const std::vector<std::string>& args, const std::string& input = "",
                    const std::vector<std::string>& env = {}) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
    posix_spawn_file_actions_addclose(&actions, fd);

  std::vector<std::string> argv_s{KERNELSCAN_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("KERNELSCAN_", 0) != 0) env_s.emplace_back(*e);
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) throw std::runtime_error("cannot start " + argv_s[0]);

  // The input is written whole before reading, then closed for EOF. A child may stop reading
  // it (input over a limit): the rest is not written, without a SIGPIPE for this process.
  const auto previous = signal(SIGPIPE, SIG_IGN);
  for (std::size_t at = 0; at < input.size();) {
    const ssize_t n = write(in_pipe[1], input.data() + at, input.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) break;
    if (n <= 0) throw std::runtime_error("writing the child's input failed");
    at += std::size_t(n);
  }
  signal(SIGPIPE, previous);
  close(in_pipe[1]);
  return {pid, out_pipe[0], err_pipe[0]};
}

// Collects the output of `child` until it closes it, and its exit code. A child still running
// after `limit` is sent SIGTERM (a daemon then stops, and its workers with it), and SIGKILL 10 s
// later.
cli_run finish_cli(const cli_child& child, std::chrono::seconds limit = std::chrono::seconds(120)) {
  cli_run r;
  pollfd fds[2] = {{child.out_fd, POLLIN, 0}, {child.err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  auto deadline = std::chrono::steady_clock::now() + limit;
  int signal_next = SIGTERM;
  while (open_fds > 0) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (signal_next == 0) break;
      kill(child.pid, signal_next);
      signal_next = signal_next == SIGTERM ? SIGKILL : 0;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      continue;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, std::size_t(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(child.pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs the kernelscan binary with `args` (as start_cli does) and collects its output and exit
// code (as finish_cli does, within `limit`).
cli_run run_cli(const std::vector<std::string>& args, const std::string& input = "",
                const std::vector<std::string>& env = {},
                std::chrono::seconds limit = std::chrono::seconds(120)) {
  return finish_cli(start_cli(args, input, env), limit);
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string describe(const cli_run& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

std::size_t count_lines_starting(const std::string& text, const std::string& start) {
  std::size_t n = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    line.erase(0, line.find_first_not_of(' '));
    if (line.rfind(start, 0) == 0) ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

// A loopback port nothing listens on: bound, read back and closed again.
int closed_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

class cli : public ::testing::Test {
 protected:
  void SetUp() override { daemon.start(); }

  std::string server() const { return "http://127.0.0.1:" + std::to_string(daemon.port()); }
  cli_run run(std::vector<std::string> args, const std::string& input = "") const {
    args.push_back("--server");
    args.push_back(server());
    return run_cli(args, input);
  }
  std::string write_file(const std::string& name, const std::string& text) const {
    const std::string path = daemon.data_dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // A finished five-point job, submitted through the API.
  std::int64_t finished_job() const {
    json spec = stream_sweep(5, 0);
    spec["name"] = "five points";
    spec["labels"] = {{"team", "perf"}, {"run", "a"}};
    const std::int64_t id = daemon.submit(spec);
    EXPECT_EQ(daemon.wait_job(id)["status"], "succeeded");
    return id;
  }

  daemon_process daemon;
};

TEST_F(cli, SubmitWaitPrintsAReportWithOneRowPerPoint) {
  json spec = stream_sweep(4, 0);
  spec["name"] = "triad sizes";
  const auto r = run({"submit", write_file("job.json", spec.dump()), "--wait", "5"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out.rfind("job 1 queued: \"triad sizes\", stream, 4 points, device any", 0), 0u)
      << describe(r);
  EXPECT_NE(r.out.find("job 1 \"triad sizes\": succeeded\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("points  4 of 4 measured: 4 ok, 0 failed"), std::string::npos);
  EXPECT_NE(r.out.find("median µs"), std::string::npos) << describe(r);
  for (const std::string n : {"4096", "8192", "12288", "16384"}) {
    EXPECT_EQ(count_lines_starting(r.out, n + "  ok  "), 1u) << n << "\n" << describe(r);
  }
  // The four sizes are all about one launch long, so which is fastest is up to the noise: the
  // report names the job's best point, whichever it is.
  const json job = daemon.get("/api/v1/jobs/1").body;
  const std::string best = "best    N=" + job["summary"]["best"]["params"]["N"].dump() + ": ";
  EXPECT_EQ(count_lines_starting(r.out, best), 1u) << best << "\n" << describe(r);
  EXPECT_TRUE(r.err.empty()) << describe(r);
  EXPECT_EQ(job["status"], "succeeded");
}

TEST_F(cli, SubmitReadsStandardInputAndSendsTheIdempotencyKey) {
  const std::string spec = stream_sweep(2, 0).dump();
  const auto first = run({"submit", "-", "--idempotency-key", "k-1"}, spec);
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  EXPECT_EQ(first.out.rfind("job 1 queued", 0), 0u) << describe(first);
  const auto again = run({"submit", "-", "--idempotency-key", "k-1"}, spec);
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_EQ(again.out.rfind("job 1 ", 0), 0u) << describe(again);
  EXPECT_NE(again.out.find("submitted before with this Idempotency-Key"), std::string::npos)
      << describe(again);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 1u);
}

TEST_F(cli, JobsListsTheJobAndFilters) {
  const std::int64_t id = finished_job();
  const auto all = run({"jobs"});
  ASSERT_EQ(all.exit_code, 0) << describe(all);
  EXPECT_EQ(all.out.rfind("id  status     progress  device  name", 0), 0u) << describe(all);
  EXPECT_NE(all.out.find("five points"), std::string::npos) << describe(all);
  EXPECT_NE(all.out.find("run=a,team=perf"), std::string::npos) << describe(all);  // sorted
  EXPECT_NE(all.out.find("5/5"), std::string::npos) << describe(all);
  EXPECT_NE(all.out.find("s ago\n"), std::string::npos) << describe(all);

  const auto match = run({"jobs", "--label", "team=perf", "--label", "run=a", "--status",
                          "succeeded,failed", "--format", "json"});
  ASSERT_EQ(match.exit_code, 0) << describe(match);
  const json listed = json::parse(match.out);
  ASSERT_EQ(listed["jobs"].size(), 1u) << match.out;
  EXPECT_EQ(listed["jobs"][0]["id"], id);
  EXPECT_TRUE(listed["next_cursor"].is_null());

  const auto none = run({"jobs", "--label", "team=other"});
  ASSERT_EQ(none.exit_code, 0) << describe(none);
  EXPECT_EQ(none.out, "no jobs\n");
}

// A copy task for the mock engine, whose candidates are verified as correct.
json copy_task() {
  return json::parse(R"js({
    "name": "axpy", "engine": "mock",
    "kernel": {"language": "hip", "entry": "axpy", "block": [256, 1, 1],
      "grid": ["ceil(N/256)", 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": "N", "output": true},
               {"name": "a", "type": "f32*", "count": "N"},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "N", "bytes": "8*N",
      "reference": {"op": "stream", "variant": "copy", "n": "N", "dtype": "f32",
                    "a": "a", "c": "out"}},
    "sweep": {"N": [4096]}, "verify": {"trials": 2}, "mock": {"output": "correct"}})js");
}

// A candidate submitted to task `name`, ended.
std::int64_t submitted_candidate(const daemon_process& daemon, const std::string& name) {
  const auto sent = daemon.post_json(
      "/api/v1/tasks/" + name + "/submissions",
      {{"source", "extern \"C\" __global__ void axpy(float* out, const float* a, int n) {}"}});
  EXPECT_EQ(sent.status, 201) << sent.text;
  const std::int64_t id = sent.body["id"];
  daemon.wait_job(id);
  return id;
}

// `--task` lists a task's jobs, with their scores.
TEST_F(cli, JobsListsATasksJobsWithTheirScores) {
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", copy_task()).status, 201);
  const std::int64_t id = submitted_candidate(daemon, "axpy");
  (void)finished_job();  // a plain job, not listed with the task's

  const auto listed = run({"jobs", "--task", "axpy", "--format", "json"});
  ASSERT_EQ(listed.exit_code, 0) << describe(listed);
  const json jobs = json::parse(listed.out)["jobs"];
  ASSERT_EQ(jobs.size(), 1u) << listed.out;
  EXPECT_EQ(jobs[0]["id"], id);
  const auto table = run({"jobs", "--task", "axpy"});
  ASSERT_EQ(table.exit_code, 0) << describe(table);
  EXPECT_EQ(table.out.rfind("id  status     progress  score", 0), 0u) << describe(table);
  EXPECT_EQ(run({"jobs", "--task", "nope"}).out, "no jobs\n");
}

// A started daemon (one mock device) whose writers hold `writer` and whose operators hold
// operator-token-of-the-cli-test.
struct tokens_daemon {
  explicit tokens_daemon(const std::string& writer) {
    const std::string writers = files.data_dir() + "/writers";
    const std::string operators = files.data_dir() + "/operators";
    std::ofstream(writers) << writer << "\n";
    std::ofstream(operators) << "operator-token-of-the-cli-test\n";
    daemon = std::make_unique<daemon_process>(daemon_process::options{
        .mock_devices = 1,
        .allow_fault_injection = false,
        .extra_args = {"--token-file", writers, "--operator-token-file", operators}});
    daemon->start();
  }
  daemon_process files;  // not started: its temp dir holds the token files, and outlives `daemon`
  std::unique_ptr<daemon_process> daemon;
};

// The copy task with a description, a held-out size and a target.
json described_task() {
  json task = copy_task();
  task["description"] = "out = a over N floats";
  task["held_out"] = {{"N", {8192}}};
  task["fitness"] = {{"target_us", 5}};
  return task;
}

// `tasks` lists the evaluation tasks, and shows one as the author of a candidate reads it.
TEST_F(cli, TasksListsTheTasksAndShowsOne) {
  EXPECT_EQ(run({"tasks"}).out, "no tasks\n");
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", described_task()).status, 201);
  const auto listed = run({"tasks"});
  ASSERT_EQ(listed.exit_code, 0) << describe(listed);
  EXPECT_EQ(listed.out.rfind("name  status  language", 0), 0u) << describe(listed);
  EXPECT_NE(listed.out.find("\naxpy  active  hip       1 + 1 held out  5 µs    -            "
                            "out = a over N floats\n"),
            std::string::npos)
      << describe(listed);

  const auto shown = run({"tasks", "axpy"});
  ASSERT_EQ(shown.exit_code, 0) << describe(shown);
  for (const char* line :
       {"task         axpy: active\n", "description  out = a over N floats\n",
        "kernel       hip, entry axpy, block 256,1,1, grid ceil(N/256),1,1 (defaults a "
        "submission may change)\n",
        "             out       f32*  N elements, output (compared with the reference's)\n",
        "             n         i32   = N\n", "sizes        N: 4096\n",
        // Without tokens every caller is an operator, and is shown the held-out sizes.
        "held out     N: 8192 (shown to an operator only)\n",
        "work         flops N, bytes 8*N a launch\n", "reference    stream copy f32\n",
        "verify       2 trials, atol 0.0001, rtol 0.0001\n",
        "fitness      target 5 µs, correctness weight 0.5\n", "submissions  not bounded\n",
        "submit       kernelscan evaluate axpy FILE"}) {
    EXPECT_NE(shown.out.find(line), std::string::npos) << line << describe(shown);
  }
  // The arguments in the kernel's order.
  EXPECT_LT(shown.out.find("             out "), shown.out.find("             a "));
  EXPECT_LT(shown.out.find("             a "), shown.out.find("             n "));

  const auto as_json = run({"tasks", "axpy", "--format", "json"});
  ASSERT_EQ(as_json.exit_code, 0) << describe(as_json);
  EXPECT_EQ(json::parse(as_json.out), daemon.get("/api/v1/tasks/axpy").body);
  const auto missing = run({"tasks", "nope"});
  EXPECT_EQ(missing.exit_code, 1) << describe(missing);
  EXPECT_EQ(missing.err.rfind("kernelscan: not_found (HTTP 404): ", 0), 0u) << describe(missing);

  ASSERT_EQ(daemon.del("/api/v1/tasks/axpy").status, 200);
  const auto retired = run({"tasks", "axpy"});
  EXPECT_NE(retired.out.find("task         axpy: retired\n"), std::string::npos)
      << describe(retired);
  EXPECT_NE(retired.out.find("submit       the task is retired"), std::string::npos)
      << describe(retired);
}

// `evaluate` submits a candidate's source and launch settings to a task, waits, and prints its
// report with the score; its exit code says whether the candidate is correct everywhere.
TEST_F(cli, EvaluateSubmitsACandidateAndPrintsItsScore) {
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", described_task()).status, 201);
  const std::string source =
      "extern \"C\" __global__ void axpy(float* out, const float* a, int n) {}";
  const std::string file = write_file("candidate.hip", source);
  const auto scored = run({"evaluate", "axpy", file, "--block", "128", "--grid", "ceil(N/128)",
                           "--label", "agent=cli", "--name", "first try"});
  ASSERT_EQ(scored.exit_code, 0) << describe(scored);
  const json jobs = daemon.get("/api/v1/jobs?task=axpy").body["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  const std::int64_t id = jobs[0]["id"];
  const json job = daemon.get("/api/v1/jobs/" + std::to_string(id)).body;
  EXPECT_EQ(job["name"], "first try");
  EXPECT_EQ(job["labels"]["agent"], "cli");
  EXPECT_EQ(job["spec"]["kernel"]["source"], source);
  EXPECT_EQ(job["spec"]["kernel"]["block"], json::parse("[128, 1, 1]"));
  EXPECT_EQ(job["spec"]["kernel"]["grid"], json::parse(R"js(["ceil(N/128)", 1, 1])js"));
  // The report's score line is the job's fitness, as `jobs --task` ranks it (3 digits).
  const double combined = job["summary"]["fitness"]["combined_score"];
  const auto at = scored.out.find("\nscore   ");
  ASSERT_NE(at, std::string::npos) << describe(scored);
  EXPECT_NEAR(std::stod(scored.out.substr(at + 9)), combined, combined * 0.005) << describe(scored);
  EXPECT_NE(scored.out.find("(correct at 2 of 2 points; "), std::string::npos) << describe(scored);
  EXPECT_EQ(scored.out.rfind("job " + std::to_string(id) + " queued: \"first try\"", 0), 0u)
      << describe(scored);

  // A candidate the task's mock devices answer wrongly: measured, scored 0, exit 1.
  json wrong_task = described_task();
  wrong_task["name"] = "wrong";
  wrong_task["mock"] = {{"output", "wrong"}};
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", wrong_task).status, 201);
  const auto wrong = run({"evaluate", "wrong", file});
  EXPECT_EQ(wrong.exit_code, 1) << describe(wrong);
  EXPECT_NE(wrong.out.find("\nscore   0 (correct at 0 of 2 points; "), std::string::npos)
      << describe(wrong);

  // What the task fixes is refused naming the field; a flag at fault exits 2, a missing file too.
  const auto unknown = run({"evaluate", "nope", file});
  EXPECT_EQ(unknown.exit_code, 1) << describe(unknown);
  EXPECT_EQ(unknown.err.rfind("kernelscan: not_found (HTTP 404): ", 0), 0u) << describe(unknown);
  const auto dims = run({"evaluate", "axpy", file, "--block", "1,2,3,4"});
  EXPECT_EQ(dims.exit_code, 2) << describe(dims);
  EXPECT_EQ(dims.err, "kernelscan evaluate: --block: \"1,2,3,4\": at most three sizes, X,Y,Z\n");
  const auto absent = run({"evaluate", "axpy", daemon.data_dir() + "/absent.hip"});
  EXPECT_EQ(absent.exit_code, 2) << describe(absent);
  EXPECT_NE(absent.err.find("cannot read "), std::string::npos) << describe(absent);
  // For a script: the ended job alone on stdout, its fitness as the API gives it.
  const auto as_json = run({"evaluate", "axpy", file, "--format", "json"});
  ASSERT_EQ(as_json.exit_code, 0) << describe(as_json);
  const json ended = json::parse(as_json.out);
  EXPECT_EQ(ended["status"], "succeeded") << as_json.out;
  EXPECT_EQ(ended["task"], "axpy") << as_json.out;
  EXPECT_EQ(ended["summary"]["fitness"],
            daemon.get("/api/v1/jobs/" + std::to_string(ended["id"].get<std::int64_t>()))
                .body["summary"]["fitness"]);
  const auto wrong_json = run({"evaluate", "wrong", file, "--format", "json"});
  EXPECT_EQ(wrong_json.exit_code, 1) << describe(wrong_json);
  EXPECT_EQ(json::parse(wrong_json.out)["summary"]["fitness"]["combined_score"], 0);
  const auto no_wait = run({"evaluate", "axpy", file, "--no-wait"});
  EXPECT_EQ(no_wait.exit_code, 0) << describe(no_wait);
  EXPECT_EQ(no_wait.out.find("score"), std::string::npos) << describe(no_wait);
}

// A candidate's author without an operator token is told how many held-out points there are,
// not their sizes, and how many of its submissions the task's bound has left.
TEST(cli_tasks, AnAgentSeesNoHeldOutSizeAndItsRemainingSubmissions) {
  const tokens_daemon tokens("agent-token-of-the-cli-test");
  const daemon_process& daemon = *tokens.daemon;
  json task = described_task();
  task["submissions"] = {{"per_agent", 5}, {"window_hours", 24}};
  ASSERT_EQ(daemon
                .post("/api/v1/tasks", task.dump(),
                      {{"Authorization", "Bearer operator-token-of-the-cli-test"}})
                .status,
            201);
  const std::vector<std::string> as_agent{"--server",
                                          "http://127.0.0.1:" + std::to_string(daemon.port()),
                                          "--token", "agent-token-of-the-cli-test"};
  const auto shown = run_cli(std::vector<std::string>{"tasks", "axpy"} + as_agent);
  ASSERT_EQ(shown.exit_code, 0) << describe(shown);
  EXPECT_NE(shown.out.find("held out     1 point at sizes not shown, measured and scored with "
                           "the public ones\n"),
            std::string::npos)
      << describe(shown);
  EXPECT_EQ(shown.out.find("8192"), std::string::npos) << describe(shown);
  EXPECT_NE(shown.out.find("submissions  5 per agent in 24 h: 0 used, 5 remaining\n"),
            std::string::npos)
      << describe(shown);
  const auto listed = run_cli(std::vector<std::string>{"tasks"} + as_agent);
  EXPECT_NE(listed.out.find("5 in 24 h"), std::string::npos) << describe(listed);
}

// `confirm` scores a withheld job as measured; a job with nothing withheld is refused.
TEST_F(cli, ConfirmScoresAWithheldJob) {
  json task = copy_task();
  task["name"] = "copy-vs-gemm";  // a baseline so slow that every speedup is excessive
  task["fitness"] = {{"baseline", {{"op", "gemm"}, {"m", 4096}, {"n", 4096}, {"k", 4096}}}};
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", task).status, 201);
  const std::int64_t id = submitted_candidate(daemon, "copy-vs-gemm");
  ASSERT_EQ(daemon.get("/api/v1/jobs/" + std::to_string(id)).body["summary"]["fitness"]["withheld"],
            true);
  const auto table = run({"jobs", "--task", "copy-vs-gemm"});
  EXPECT_NE(table.out.find("withheld"), std::string::npos) << describe(table);

  const auto confirmed = run({"confirm", std::to_string(id)});
  ASSERT_EQ(confirmed.exit_code, 0) << describe(confirmed);
  EXPECT_EQ(confirmed.out.rfind("job " + std::to_string(id) + " confirmed: combined score ", 0), 0u)
      << describe(confirmed);
  EXPECT_EQ(
      daemon.get("/api/v1/jobs/" + std::to_string(id)).body["summary"]["fitness"]["confirmed"],
      true);
  const std::int64_t plain = finished_job();
  const auto refused = run({"confirm", std::to_string(plain)});
  EXPECT_EQ(refused.exit_code, 1) << describe(refused);
  EXPECT_NE(refused.err.find("kernelscan: job " + std::to_string(plain) + ": nothing_to_confirm"),
            std::string::npos)
      << describe(refused);
}

TEST_F(cli, JobsFollowsCursorsUpToTheLimit) {
  for (int i = 0; i < 3; ++i)
    daemon.submit(stream_sweep(1, 0));
  const auto r = run({"jobs", "--limit", "2", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json listed = json::parse(r.out);
  ASSERT_EQ(listed["jobs"].size(), 2u);
  EXPECT_EQ(listed["jobs"][0]["id"], 3);
  EXPECT_EQ(listed["jobs"][1]["id"], 2);
  EXPECT_TRUE(listed["next_cursor"].is_string());  // there is more
}

TEST_F(cli, ResultsCsvIsTheApisCsvWhateverThePageSize) {
  const std::int64_t id = finished_job();
  const auto api = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=csv");
  ASSERT_EQ(api.status, 200);
  for (const std::string page : {"1000", "2", "5", "1"}) {
    SCOPED_TRACE("page size " + page);
    const auto r = run({"results", std::to_string(id), "--format", "csv", "--page-size", page});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(r.out, api.text);
  }
}

TEST_F(cli, ResultsJsonIsTheApisJsonWhateverThePageSize) {
  const std::int64_t id = finished_job();
  const auto api = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results");
  ASSERT_EQ(api.status, 200);
  ASSERT_EQ(api.body["results"].size(), 5u);
  for (const std::string page : {"1000", "2"}) {
    SCOPED_TRACE("page size " + page);
    const auto r = run({"results", std::to_string(id), "--format", "json", "--page-size", page});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(json::parse(r.out), api.body);
  }
}

TEST_F(cli, ResultsTableIsTheReport) {
  const std::int64_t id = finished_job();
  const auto r = run({"results", std::to_string(id), "--page-size", "2"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out.rfind("job " + std::to_string(id) + " \"five points\": succeeded\n", 0), 0u)
      << describe(r);
  EXPECT_NE(r.out.find("kernel  stream triad f32, n=N\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("device  0: AMD Instinct MI300X (mock)\n"), std::string::npos);
  EXPECT_EQ(count_lines_starting(r.out, "4096  ok "), 1u) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "20480  ok "), 1u) << describe(r);
}

TEST_F(cli, AnInvalidSpecPrintsEveryFieldErrorAndExitsOne) {
  const std::string path =
      write_file("bad.json",
                 R"({"kernel": {"op": "stream", "n": "N", "dtype": "f17"}, "sweep": {"N": [1]},
          "timing": {"min_sample": 3}})");
  const auto r = run({"submit", path, "--wait"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_TRUE(r.out.empty()) << describe(r);
  EXPECT_NE(r.err.find("invalid_spec (HTTP 422): "), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("\n  kernel.dtype: \"f17\" is not one of"), std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("\n  timing.min_sample: unknown field"), std::string::npos) << describe(r);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
}

TEST_F(cli, ASpecWithOneProblemSaysItOnce) {
  const std::string path = write_file(
      "one.json",
      R"({"kernel": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f17"}, "sweep": {"N": [1]}})");
  const auto r = run({"submit", path});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_EQ(
      r.err.rfind("kernelscan: invalid_spec (HTTP 422): kernel.dtype: \"f17\" is not one of", 0),
      0u)
      << describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
}

TEST_F(cli, AnUnknownJobIsA404) {
  const auto r = run({"results", "424242"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_EQ(r.err, "kernelscan: not_found (HTTP 404): no job 424242\n") << describe(r);
  const auto csv = run({"results", "424242", "--format", "csv"});
  EXPECT_EQ(csv.exit_code, 1) << describe(csv);
  EXPECT_TRUE(csv.out.empty()) << describe(csv);
}

TEST_F(cli, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"jobs", "--label", "no-equals-sign"},
        {"jobs", "--format", "yaml"},
        {"results", "abc"},
        {"results", "0"},
        {"submit", "/no/such/file.json"},
        {"submit", "/"},
        {"submit"},
        {"delete"},
        {"delete", "abc"},
        {"bogus"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "") << "\n"
                              << describe(r);
    EXPECT_FALSE(r.err.empty()) << describe(r);
  }
}

// A job or kernel file is read up to the most any daemon may be set to take, and no further: a
// file or a pipe without end (/dev/zero) is refused unsent, naming that. Within it, the file
// is sent and the daemon refuses what is over its own limits, naming them.
TEST_F(cli, FilesAreHeldToTheDaemonsLimits) {
  const auto endless = run({"submit", "/dev/zero"});
  EXPECT_EQ(endless.exit_code, 2) << describe(endless);
  EXPECT_EQ(endless.err,
            "kernelscan submit: /dev/zero is larger than 256 MiB, the most a daemon takes as a "
            "request body (--max-body-bytes)\n")
      << describe(endless);
  const auto source = run({"bench", "/dev/zero", "k", "--sweep", "n=1"});
  EXPECT_EQ(source.exit_code, 2) << describe(source);
  EXPECT_EQ(source.err,
            "kernelscan bench: FILE: /dev/zero is larger than 64 MiB, the most a daemon takes as "
            "a kernel source (--max-source-bytes)\n")
      << describe(source);
  EXPECT_TRUE(daemon.get("/api/v1/jobs").body["jobs"].empty());

  // Over this daemon's (default) limits: sent, and its answer says which.
  const std::string big_spec = write_file("big.json", std::string(5 << 20, ' '));
  const auto file = run({"submit", big_spec});
  EXPECT_EQ(file.exit_code, 1) << describe(file);
  EXPECT_NE(file.err.find("payload_too_large (HTTP 413): request body of 5242880 bytes exceeds "
                          "this daemon's limit of 4194304 bytes (--max-body-bytes)"),
            std::string::npos)
      << describe(file);
  const std::string big_source = write_file(
      "big.cl", "__kernel void k(__global float* x, int n) {}" + std::string(300 << 10, ' '));
  const auto kernel = run({"bench", big_source, "k", "--sweep", "n=1024", "--size", "1024",
                           "--block", "64", "--grid", "16", "--engine", "mock"});
  EXPECT_EQ(kernel.exit_code, 1) << describe(kernel);
  EXPECT_NE(kernel.err.find("kernel.source: is 307244 bytes long; the limit is 262144"),
            std::string::npos)
      << describe(kernel);
  EXPECT_TRUE(daemon.get("/api/v1/jobs").body["jobs"].empty());
  // Within them, a file is read whole.
  const std::string spec = stream_sweep(1, 0).dump();
  const auto fits = run({"submit", "-"}, spec + std::string((4 << 20) - spec.size(), ' '));
  EXPECT_EQ(fits.exit_code, 0) << describe(fits);
}

// A kernel source that is not UTF-8 cannot travel in JSON: the file and the byte are named, and
// nothing is sent (the daemon was once blamed for not answering like a kernelscan daemon).
TEST_F(cli, ASourceThatIsNotUtf8IsRefusedNamingTheByte) {
  const std::string bad =
      write_file("bad.cl", "__kernel void k(__global float* o, int n) {\n  /* caf\xff */ }\n");
  const std::string why =
      " is not UTF-8 text: byte 0xFF at line 2, column 9 (a kernel source "
      "travels in JSON, which holds UTF-8 only; save the file as UTF-8)\n";
  const auto direct = run({"bench", bad, "k", "--sweep", "n=1", "--size", "o=n"});
  EXPECT_EQ(direct.exit_code, 2) << describe(direct);
  EXPECT_EQ(direct.err, "kernelscan bench: FILE: " + bad + why) << describe(direct);
  const std::string job_file =
      write_file("job.json", R"({"kernel": {"op": "custom", "source_file": "bad.cl"}})");
  const auto named = run({"bench", job_file});
  EXPECT_EQ(named.exit_code, 2) << describe(named);
  EXPECT_EQ(named.err, "kernelscan bench: source_file: " + bad + why) << describe(named);
  EXPECT_TRUE(daemon.get("/api/v1/jobs").body["jobs"].empty());
}

// Arguments a command does not take are named as they were given, first to last.
TEST_F(cli, UnexpectedArgumentsAreNamedInTheirOrder) {
  const auto many = run({"jobs", "foo", "bar", "baz"});
  EXPECT_EQ(many.exit_code, 2) << describe(many);
  EXPECT_EQ(many.err.rfind("The following arguments were not expected: foo bar baz\n", 0), 0u)
      << describe(many);
  // cancel takes the 9 as a second job id.
  const auto one = run({"cancel", "3", "--page-size", "9"});
  EXPECT_EQ(one.exit_code, 2) << describe(one);
  EXPECT_EQ(one.err.rfind("The following argument was not expected: --page-size\n", 0), 0u)
      << describe(one);
}

// A value that is not a number is said to be that, not "out of range".
TEST_F(cli, ANumberOptionSaysWhyItsValueIsRefused) {
  const std::string file = write_file("job.json", stream_sweep(1, 0).dump());
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"submit", file, "--wait", "abc"}, "--wait: \"abc\" is not a number"},
           {{"submit", file, "--wait", "700"}, "--wait: 700 is not from 0.001 to 600"},
           {{"jobs", "--limit", "2.5"}, "--limit: \"2.5\" is not a whole number"},
           {{"jobs", "--limit", "0"}, "--limit: 0 is not from 1 to 1000000"},
           {{"results", "1", "--page-size", "0"}, "--page-size: 0 is not from 1 to 1000000"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(r.err.rfind(says, 0), 0u) << describe(r) << "expected: " << says;
  }
  EXPECT_TRUE(daemon.get("/api/v1/jobs").body["jobs"].empty());
}

TEST(cli_unreachable, AServerThatIsNotThereIsNamedAndExitsOne) {
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port());
  for (const std::vector<std::string>& args : {std::vector<std::string>{"jobs", "--server", url},
                                               {"results", "1", "--server", url},
                                               {"submit", "-", "--server", url}}) {
    const auto r = run_cli(args, "{}");
    EXPECT_EQ(r.exit_code, 1) << describe(r);
    EXPECT_NE(r.err.find("cannot reach the kernelscan daemon at " + url + ": could not connect"),
              std::string::npos)
        << describe(r);
  }
  // The address may come from the environment too.
  const auto r = run_cli({"jobs"}, "", {"KERNELSCAN_SERVER=" + url});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find(url), std::string::npos) << describe(r);
}

TEST(cli_serve, ASecondDaemonOnAnAddressInUseExitsTwoSayingSo) {
  daemon_process first;
  first.start();
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  // The first one closes a connection, which it then holds in TIME_WAIT.
  EXPECT_EQ(exchange_until_closed(first.port(),
                                  "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                  std::chrono::seconds(5))
                .rfind("HTTP/1.1 200", 0),
            0u);
  daemon_process probe;  // for a temp dir
  const std::vector<std::string> serve = {
      "serve",    "--listen", address,          "--data-dir", probe.data_dir() + "/data",
      "--engine", "mock",     "--mock-devices", "1"};
  const auto second = run_cli(serve, "", {}, std::chrono::seconds(15));
  EXPECT_EQ(second.exit_code, 2) << describe(second);
  EXPECT_NE(
      (second.out + second.err).find("cannot listen on " + address + ": address already in use"),
      std::string::npos)
      << describe(second);
  EXPECT_EQ(first.get("/healthz").status, 200);
  // Stopped, it leaves its closed connection in TIME_WAIT: a daemon started at once on its
  // address listens all the same (it is stopped at the limit, and exits 0).
  EXPECT_EQ(first.terminate(), 0);
  const auto restarted = run_cli(serve, "", {}, std::chrono::seconds(4));
  EXPECT_EQ(restarted.exit_code, 0) << describe(restarted);
  EXPECT_NE((restarted.out + restarted.err).find("kernelscan listening on http://" + address),
            std::string::npos)
      << describe(restarted);
}

TEST(cli_failed_job, SubmitWaitExitsOneAndShowsTheFailedPoint) {
  daemon_process daemon({.mock_devices = 1, .allow_fault_injection = true, .extra_args = {}});
  daemon.start();
  json spec = stream_sweep(3, 0);
  spec["mock"]["fault"] = "abort";
  spec["mock"]["fault_index"] = 1;
  const std::string path = daemon.data_dir() + "/job.json";
  std::ofstream(path) << spec.dump();
  const auto r = run_cli(
      {"submit", path, "--wait", "--server", "http://127.0.0.1:" + std::to_string(daemon.port())});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.out.find("\": failed\nerror   points_failed: 1 of 3 points failed"),
            std::string::npos)
      << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "8192  failed  device_fault: "), 1u) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "4096  ok "), 1u) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "12288  ok "), 1u) << describe(r);
}

TEST(cli_token, TheTokenComesFromTheOptionOrTheEnvironment) {
  daemon_process probe;  // for a temp dir that outlives the daemon below
  const std::string token_file = probe.data_dir() + "/tokens";
  std::ofstream(token_file) << "a-token-of-sixteen-chars\n";
  daemon_process daemon({.mock_devices = 1,
                         .allow_fault_injection = false,
                         .extra_args = {"--token-file", token_file}});
  daemon.start();
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port());
  const std::string spec = stream_sweep(1, 0).dump();

  const auto without = run_cli({"submit", "-", "--server", url}, spec);
  EXPECT_EQ(without.exit_code, 1) << describe(without);
  EXPECT_NE(without.err.find("unauthorized (HTTP 401)"), std::string::npos) << describe(without);
  EXPECT_NE(without.err.find("\n  the token is given with --token TOKEN, or KERNELSCAN_TOKEN in "
                             "the environment\n"),
            std::string::npos)
      << describe(without);

  const auto with_option =
      run_cli({"submit", "-", "--server", url, "--token", "a-token-of-sixteen-chars"}, spec);
  EXPECT_EQ(with_option.exit_code, 0) << describe(with_option);

  const auto with_env = run_cli({"submit", "-", "--server", url}, spec,
                                {"KERNELSCAN_TOKEN=a-token-of-sixteen-chars"});
  EXPECT_EQ(with_env.exit_code, 0) << describe(with_env);

  // The command line wins over the environment, in every subcommand.
  const std::vector<std::string> wrong{"KERNELSCAN_TOKEN=not-the-token-at-all"};
  const auto over_env =
      run_cli({"submit", "-", "--server", url, "--token", "a-token-of-sixteen-chars"}, spec, wrong);
  EXPECT_EQ(over_env.exit_code, 0) << describe(over_env);
  daemon_process reads({.mock_devices = 1,
                        .allow_fault_injection = false,
                        .extra_args = {"--token-file", token_file, "--auth-reads"}});
  reads.start();
  const std::string reads_url = "http://127.0.0.1:" + std::to_string(reads.port());
  const std::int64_t id = [&] {
    httplib::Client c("127.0.0.1", reads.port());
    const auto r = c.Post("/api/v1/jobs", {{"Authorization", "Bearer a-token-of-sixteen-chars"}},
                          spec, "application/json");
    return json::parse(r->body).at("id").get<std::int64_t>();
  }();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"jobs"}, {"results", std::to_string(id), "--format", "json"}}) {
    auto full = args;
    for (const std::string a :
         {"--server", reads_url.c_str(), "--token", "a-token-of-sixteen-chars"})
      full.push_back(a);
    const auto r = run_cli(full, "", wrong);
    EXPECT_EQ(r.exit_code, 0) << args[0] << "\n" << describe(r);
  }
}

TEST_F(cli, TheServerOptionWinsOverTheEnvironmentInEverySubcommand) {
  const std::int64_t id = finished_job();
  const std::vector<std::string> elsewhere{"KERNELSCAN_SERVER=http://127.0.0.1:" +
                                           std::to_string(closed_port())};
  const auto jobs = run_cli({"jobs", "--server", server()}, "", elsewhere);
  EXPECT_EQ(jobs.exit_code, 0) << describe(jobs);
  EXPECT_EQ(count_lines_starting(jobs.out, std::to_string(id) + "  succeeded"), 1u)
      << describe(jobs);
  const auto results =
      run_cli({"results", std::to_string(id), "--server", server()}, "", elsewhere);
  EXPECT_EQ(results.exit_code, 0) << describe(results);
  const auto submit =
      run_cli({"submit", "-", "--server", server()}, stream_sweep(1, 0).dump(), elsewhere);
  EXPECT_EQ(submit.exit_code, 0) << describe(submit);
  EXPECT_NE(submit.out.find(", stream, 1 point, device any"), std::string::npos)
      << describe(submit);
  const auto roofline = run_cli({"roofline", "0", "--server", server()}, "", elsewhere);
  EXPECT_EQ(roofline.exit_code, 0) << describe(roofline);
}

// `kernelscan --server URL jobs`, as `git -C DIR log` is written: the client's options before
// the subcommand's name work as they do after it.
TEST_F(cli, TheServerAndTokenMayComeBeforeTheSubcommand) {
  const std::int64_t id = finished_job();
  const auto jobs = run_cli({"--server", server(), "jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << describe(jobs);
  EXPECT_EQ(count_lines_starting(jobs.out, std::to_string(id) + "  succeeded"), 1u)
      << describe(jobs);
  const auto results =
      run_cli({"--token", "t", "--server=" + server(), "results", std::to_string(id)});
  EXPECT_EQ(results.exit_code, 0) << describe(results);
  EXPECT_NE(results.out.find("points  5 of 5 measured"), std::string::npos) << describe(results);
}

// Two matmul kernels in OpenCL C, as a kernel writer keeps them in one file.
const char* const k_matmul_cl = R"cl(
// C = A x B, row-major.
__kernel void matmul_naive(__global const float* A, __global const float* B, __global float* C,
                           int M, int N, int K) {
  int col = get_global_id(0), row = get_global_id(1);
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
__kernel void matmul_rows(__global const float* A, __global const float* B, __global float* C,
                          int M, int N, int K) {
  int row = get_global_id(0);
  if (row >= M) return;
  for (int col = 0; col < N; ++col) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
  }
}
)cl";

std::vector<std::string> matmul_bench_args(const std::string& file) {
  return {"bench",
          file,
          "matmul_naive",
          "--sweep",
          "N=16..64:x2",
          "--sweep",
          "M=N",
          "--sweep",
          "K=N",
          "--size",
          "A=M*K",
          "--size",
          "B=K*N",
          "--size",
          "C=M*N",
          "--block",
          "8,8",
          "--grid",
          "cdiv(N,8),cdiv(M,8)",
          "--flops",
          "2*M*N*K",
          "--reference",
          R"({"op":"gemm","m":"M","n":"N","k":"K","a":"A","b":"B","c":"C","dtype":"f32"})"};
}

TEST_F(cli, BenchDryRunPrintsTheJobItWouldSend) {
  const std::string file = write_file("matmul.cl", k_matmul_cl);
  auto args = matmul_bench_args(file);
  args.insert(args.begin() + 3, "matmul_rows");
  args.insert(args.end(), {"--block", "matmul_rows=64", "--grid", "matmul_rows=cdiv(M,64)",
                           "--baseline", "matmul_naive", "--dry-run"});
  const auto r = run(args);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json spec = json::parse(r.out);
  EXPECT_EQ(spec["name"], "matmul.cl: matmul_naive, matmul_rows");
  EXPECT_EQ(spec["kernel"]["language"], "opencl");
  EXPECT_EQ(spec["kernel"]["source"], k_matmul_cl);
  EXPECT_EQ(spec["kernel"]["args"][2],
            json::parse(R"({"name": "C", "type": "f32*", "count": "N*N", "output": true})"));
  EXPECT_EQ(spec["kernel"]["args"][3],
            json::parse(R"({"name": "M", "type": "i32", "value": "N"})"));
  EXPECT_EQ(spec["variants"][1],
            json::parse(R"j({"name": "matmul_rows", "entry": "matmul_rows", "block": [64, 1, 1],
                            "grid": ["cdiv(N,64)", 1, 1]})j"));
  EXPECT_EQ(spec["baseline"], "matmul_naive");
  EXPECT_EQ(spec["sweep"], json::parse(R"({"N": {"from": 16, "to": 64, "mul": 2}})"));
  EXPECT_TRUE(daemon.get("/api/v1/jobs").body["jobs"].empty()) << "a dry run sends nothing";
}

TEST_F(cli, BenchSubmitsTheKernelAndPrintsItsReport) {
  const std::string file = write_file("matmul.cl", k_matmul_cl);
  const auto r = run(matmul_bench_args(file));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out.rfind("job 1 queued: \"matmul.cl: matmul_naive\", custom, 3 points", 0), 0u)
      << describe(r);
  EXPECT_NE(r.out.find("kernel  custom opencl kernel matmul_naive"), std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("points  3 of 3 measured: 3 ok, 0 failed"), std::string::npos)
      << describe(r);
  const json job = daemon.get("/api/v1/jobs/1").body;
  EXPECT_EQ(job["status"], "succeeded");
  EXPECT_EQ(job["spec"]["kernel"]["entry"], "matmul_naive");
}

// The same bench again is answered by the first job's results, and says so; --no-cache
// measures afresh.
TEST_F(cli, BenchAgainIsAnsweredFromTheCacheUnlessAskedNotTo) {
  const std::string file = write_file("matmul.cl", k_matmul_cl);
  ASSERT_EQ(run(matmul_bench_args(file)).exit_code, 0);
  const auto again = run(matmul_bench_args(file));
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  EXPECT_NE(again.out.find("note    from the result cache: job 1 measured these points; "
                           "kernelscan rerun 2 measures them again\n"),
            std::string::npos)
      << describe(again);
  EXPECT_EQ(daemon.get("/api/v1/jobs/2").body["cached_from"], 1);
  const auto fresh = run(matmul_bench_args(file) + std::vector<std::string>{"--no-cache"});
  ASSERT_EQ(fresh.exit_code, 0) << describe(fresh);
  EXPECT_EQ(fresh.out.find("result cache"), std::string::npos) << describe(fresh);
  const json job = daemon.get("/api/v1/jobs/3").body;
  EXPECT_TRUE(job["cached_from"].is_null()) << job.dump();
  EXPECT_EQ(job["spec"]["cache"], false);
}

TEST_F(cli, BenchRunsAJobFileWithItsSourceFileReadIn) {
  write_file("matmul.cl", k_matmul_cl);
  const auto dry = run(matmul_bench_args(daemon.data_dir() + "/matmul.cl") +
                       std::vector<std::string>{"--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << describe(dry);
  json spec = json::parse(dry.out);
  spec["kernel"].erase("source");
  spec["kernel"]["source_file"] = "matmul.cl";  // beside the job file
  const std::string job_file = write_file("job.json", spec.dump());
  const auto r = run({"bench", job_file, "--label", "from=file", "--no-wait"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const json job = daemon.wait_job(1);
  EXPECT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["spec"]["kernel"]["source"], k_matmul_cl);
  EXPECT_EQ(job["spec"]["labels"]["from"], "file");
  const auto shaped = run({"bench", job_file, "--sweep", "N=8"});
  EXPECT_EQ(shaped.exit_code, 2) << describe(shaped);
  EXPECT_EQ(shaped.err,
            "kernelscan bench: --sweep: a job file says this itself; edit " + job_file + "\n")
      << describe(shaped);
}

TEST_F(cli, BenchErrorsNameTheFlagAndExitTwo) {
  const std::string file = write_file("matmul.cl", k_matmul_cl);
  struct bad {
    std::vector<std::string> args;
    std::string err;
  };
  auto without = [&](const std::string& flag) {
    auto a = matmul_bench_args(file);
    const auto at = std::find(a.begin(), a.end(), flag);
    a.erase(at, at + 2);
    return a;
  };
  const std::vector<bad> cases{
      {without("--block"), "kernelscan bench: --block: needed for matmul_naive"},
      {without("--grid"), "kernelscan bench: --grid: needed for matmul_naive"},
      {{"bench", file, "nope", "--sweep", "N=1"}, "kernelscan bench: KERNEL: nope is not a kernel"},
      {{"bench", daemon.data_dir() + "/none.cl", "k"}, "kernelscan bench: FILE: cannot read"},
      {{"bench", daemon.data_dir(), "k"},
       "kernelscan bench: FILE: cannot read " + daemon.data_dir() + ": Is a directory"},
      {{"bench", write_file("trailing_comma.json", "{\"kernel\": {\"op\": \"custom\",}}")},
       "kernelscan bench: FILE: " + daemon.data_dir() +
           "/trailing_comma.json: malformed JSON: parse error at line 1, column 28"},
      {{"bench", write_file("list.json", "[]")},
       "kernelscan bench: FILE: " + daemon.data_dir() + "/list.json is not a JSON object"},
      {matmul_bench_args(file) + std::vector<std::string>{"--size", "D=4"},
       "kernelscan bench: --size: D is not a pointer parameter"},
      // A sweep parameter's value is the sweep's, not a --value's.
      {matmul_bench_args(file) + std::vector<std::string>{"--value", "N=5"},
       "kernelscan bench: --value: N is a sweep parameter"},
      {matmul_bench_args(file) + std::vector<std::string>{"--value", "M=5"},
       "kernelscan bench: --value: M is a sweep parameter"},
      // A sweep value that is not a number is named.
      {{"bench", file, "matmul_naive", "--sweep", "N=abc"},
       "kernelscan bench: --sweep: N=abc: not a number, a range FROM..TO or a list V,V,...;"},
      {{"bench", file, "matmul_naive", "--sweep", "N=1,,2"},
       "kernelscan bench: --sweep: N=1,,2: value 2 is empty"},
      {{"bench", file, "matmul_naive", "--sweep", "N=1,2,"},
       "kernelscan bench: --sweep: N=1,2,: value 3 is empty"},
      {{"bench", file, "matmul_naive", "--sweep", "N=1,x"},
       "kernelscan bench: --sweep: N=1,x: value 2, \"x\", is not a number"},
      {{"bench", file, "matmul_naive", "--sweep", "N=16", "--sweep", "M=Q"},
       "kernelscan bench: --sweep: M=Q: \"Q\": unknown name Q (sweep parameters: N)"},
  };
  for (const auto& c : cases) {
    const auto r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(r.err.rfind(c.err, 0), 0u) << describe(r) << "expected: " << c.err;
  }
  // A spec the daemon refuses: its field errors, exit 1.
  auto wrong_language = matmul_bench_args(file);
  wrong_language.insert(wrong_language.end(), {"--language", "cuda"});
  const auto r = run(wrong_language);
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("kernel.language: no device runs this kernel"), std::string::npos)
      << describe(r);
  EXPECT_TRUE(daemon.get("/api/v1/jobs").body["jobs"].empty());
}

// Every integer width a job has is read from the source (ulong travels as i64); a 16-bit one,
// which no job has, is refused. A buffer of vectors (float4) is a buffer of their elements, four
// per vector (an OpenCL float3 takes the room of four); a vector passed by value is refused.
TEST_F(cli, BenchReadsIntegerWidthsAndVectorBuffers) {
  const std::string file = write_file("types.cl", R"cl(
__kernel void widths(__global float* out, uchar a, ulong b, unsigned long c, long d, int n) {}
__kernel void shorts(__global float* out, ushort s, int n) {}
__kernel void vectors(__global float4* out, __global const float3* in, __global const int2* i,
                      int n) {}
__kernel void by_value(__global float* out, float4 v, int n) {}
)cl");
  const std::vector<std::string> common{"--sweep", "n=16",   "--size", "n",        "--block",
                                        "1",       "--grid", "1",      "--dry-run"};
  const auto widths =
      run(std::vector<std::string>{"bench", file, "widths", "--value", "a=1", "--value", "b=2",
                                   "--value", "c=3", "--value", "d=4"} +
          common);
  ASSERT_EQ(widths.exit_code, 0) << describe(widths);
  std::vector<std::string> types;
  const json spec = json::parse(widths.out);
  for (const auto& a : spec["kernel"]["args"])
    types.push_back(a["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"f32*", "u8", "i64", "i64", "i64", "i32"}));

  const auto shorts = run(std::vector<std::string>{"bench", file, "shorts"} + common);
  EXPECT_EQ(shorts.exit_code, 2) << describe(shorts);
  EXPECT_EQ(shorts.err.rfind("kernelscan bench: KERNEL: parameter s of shorts has type ushort: "
                             "16-bit integers cannot be bound",
                             0),
            0u)
      << describe(shorts);

  const auto vectors = run(std::vector<std::string>{"bench", file, "vectors"} + common);
  ASSERT_EQ(vectors.exit_code, 0) << describe(vectors);
  const json args = json::parse(vectors.out)["kernel"]["args"];
  EXPECT_EQ(args[0], json::parse(R"js({"name": "out", "type": "f32*", "count": "4*(n)",
                                      "output": true})js"));
  EXPECT_EQ(args[1], json::parse(R"js({"name": "in", "type": "f32*", "count": "4*(n)"})js"));
  EXPECT_EQ(args[2], json::parse(R"js({"name": "i", "type": "i32*", "count": "2*(n)"})js"));
  auto sized = common;
  sized[3] = "8";
  const auto counted = run(std::vector<std::string>{"bench", file, "vectors"} + sized);
  ASSERT_EQ(counted.exit_code, 0) << describe(counted);
  EXPECT_EQ(json::parse(counted.out)["kernel"]["args"][0]["count"], 32);

  const auto by_value = run(std::vector<std::string>{"bench", file, "by_value"} + common);
  EXPECT_EQ(by_value.exit_code, 2) << describe(by_value);
  EXPECT_EQ(by_value.err.rfind("kernelscan bench: KERNEL: parameter v of by_value has type float4, "
                               "a vector, which bench cannot pass by value",
                               0),
            0u)
      << describe(by_value);
  // In CUDA a float3 is three floats.
  const std::string cu =
      write_file("v.cu", "__global__ void k(float3* out, const float4* in, int n) {}\n");
  const auto cuda = run(std::vector<std::string>{"bench", cu, "k"} + common);
  ASSERT_EQ(cuda.exit_code, 0) << describe(cuda);
  EXPECT_EQ(json::parse(cuda.out)["kernel"]["args"][0]["count"], "3*(n)");
  EXPECT_EQ(json::parse(cuda.out)["kernel"]["args"][1]["count"], "4*(n)");
}

// Two kernels: one job whose rows name their variant; every page size reads every row (two
// rows share a point's index), and compare with one job compares its variants.
TEST_F(cli, BenchWithTwoKernelsIsOneJobOfVariants) {
  const std::string file = write_file("matmul.cl", k_matmul_cl);
  auto args = matmul_bench_args(file);
  args.insert(args.begin() + 3, "matmul_rows");
  args.insert(args.end(), {"--block", "matmul_rows=64", "--grid", "matmul_rows=cdiv(M,64)",
                           "--baseline", "matmul_naive"});
  const auto r = run(args);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("kernel  2 variants: matmul_naive, matmul_rows; baseline matmul_naive"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("points  6 of 6 measured: 6 ok, 0 failed"), std::string::npos)
      << describe(r);
  for (const std::string page : {"1", "2", "5"}) {
    const auto rows = run({"results", "1", "--format", "json", "--page-size", page});
    ASSERT_EQ(rows.exit_code, 0) << describe(rows);
    const json got = json::parse(rows.out)["results"];
    ASSERT_EQ(got.size(), 6u) << page << "\n" << rows.out;
    EXPECT_EQ(got[0]["variant"], "matmul_naive");
    EXPECT_EQ(got[1]["variant"], "matmul_rows");
    EXPECT_EQ(got[1]["index"], 0);
    const auto csv = run({"results", "1", "--format", "csv", "--page-size", page});
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 7) << page << "\n" << csv.out;
  }
  const auto compare = run({"compare", "1", "--base", "matmul_naive"});
  ASSERT_EQ(compare.exit_code, 0) << describe(compare);
  EXPECT_EQ(compare.out.rfind("baseline  matmul_naive\njoined on N\n", 0), 0u) << describe(compare);
  EXPECT_NE(compare.out.find("matmul_rows: "), std::string::npos) << describe(compare);
  EXPECT_NE(compare.out.find("(geometric mean over 3 points)"), std::string::npos)
      << describe(compare);
}

TEST_F(cli, CancelDevicesRooflineAndCompare) {
  // A slow job cancelled in the middle, then again (already finished).
  const std::int64_t slow = daemon.submit(stream_sweep(50, 200));
  const auto cancel = run({"cancel", std::to_string(slow)});
  ASSERT_EQ(cancel.exit_code, 0) << describe(cancel);
  // Running: it stops after the point being measured; queued: at once.
  EXPECT_TRUE(cancel.out == "job " + std::to_string(slow) + " cancelled\n" ||
              cancel.out == "job " + std::to_string(slow) +
                                " cancelling: it stops after the point being measured\n")
      << describe(cancel);
  EXPECT_EQ(daemon.wait_job(slow)["status"], "cancelled");
  const auto again = run({"cancel", std::to_string(slow), "424242"});
  EXPECT_EQ(again.exit_code, 1) << describe(again);
  EXPECT_NE(again.err.find("job_finished (HTTP 409)"), std::string::npos) << describe(again);
  EXPECT_NE(again.err.find("kernelscan: job 424242: not_found (HTTP 404): no job 424242\n"),
            std::string::npos)
      << describe(again);

  const auto devices = run({"devices"});
  ASSERT_EQ(devices.exit_code, 0) << describe(devices);
  EXPECT_EQ(devices.out.rfind("index  engine  type", 0), 0u) << describe(devices);
  EXPECT_NE(devices.out.find("mock"), std::string::npos) << describe(devices);
  // The model is not said twice where the name says it.
  EXPECT_NE(devices.out.find("AMD Instinct MI300X (mock)  "), std::string::npos)
      << describe(devices);
  EXPECT_EQ(devices.out.find("(MI300X)"), std::string::npos) << describe(devices);
  const auto devices_json = run({"devices", "--format", "json"});
  const json listed = json::parse(devices_json.out);
  ASSERT_EQ(listed["devices"].size(), 1u) << devices_json.out;
  EXPECT_EQ(listed["devices"][0]["name"], "AMD Instinct MI300X (mock)");

  // A roofline measured again: asked for, then waited for with its new ceilings printed.
  const json before = daemon.get("/api/v1/devices/0").body["measured"];
  const auto asked = run({"roofline", "0"});
  ASSERT_EQ(asked.exit_code, 0) << describe(asked);
  EXPECT_EQ(asked.out.rfind("device 0 (node ", 0), 0u) << describe(asked);
  EXPECT_NE(asked.out.find("measures its roofline again between its jobs"), std::string::npos)
      << describe(asked);
  const auto measured = run({"roofline", "0", "--wait", "--timeout", "60"});
  ASSERT_EQ(measured.exit_code, 0) << describe(measured);
  const json after = daemon.get("/api/v1/devices/0").body["measured"];
  EXPECT_NE(after["measured_at"], before["measured_at"]);
  EXPECT_NE(measured.out.find("roofline measured at " + after["measured_at"].get<std::string>()),
            std::string::npos)
      << describe(measured);
  EXPECT_NE(measured.out.find("bandwidth    4700  GB/s"), std::string::npos) << describe(measured);
  EXPECT_NE(measured.out.find("method: simulated (mock engine)"), std::string::npos)
      << describe(measured);
  const auto missing = run({"roofline", "7"});
  EXPECT_EQ(missing.exit_code, 1) << describe(missing);
  EXPECT_NE(missing.err.find("no device 7 on node"), std::string::npos) << describe(missing);
  const auto elsewhere = run({"roofline", "0", "--node", "gpu-07"});
  EXPECT_EQ(elsewhere.exit_code, 1) << describe(elsewhere);
  EXPECT_NE(elsewhere.err.find("no node \"gpu-07\""), std::string::npos) << describe(elsewhere);
  EXPECT_EQ(run({"roofline", "-1"}).exit_code, 2);

  // Two jobs over the same sizes: the second twice as fast (the mock's speedup).
  json spec = stream_sweep(3, 0);
  spec["cache"] = false;
  const std::int64_t a = daemon.submit(spec);
  spec["mock"]["speedup"] = 2.0;
  const std::int64_t b = daemon.submit(spec);
  daemon.wait_job(a);
  daemon.wait_job(b);
  const auto compare = run({"compare", std::to_string(a), std::to_string(b)});
  ASSERT_EQ(compare.exit_code, 0) << describe(compare);
  EXPECT_EQ(compare.out.rfind("baseline  job " + std::to_string(a) + "\njoined on N\n", 0), 0u)
      << describe(compare);
  EXPECT_NE(compare.out.find("job " + std::to_string(b) + ": 2.0"), std::string::npos)
      << describe(compare);
  EXPECT_NE(compare.out.find("3 faster, 0 slower, 0 the same"), std::string::npos)
      << describe(compare);
  const auto based =
      run({"compare", std::to_string(a), std::to_string(b), "--base", std::to_string(b)});
  EXPECT_NE(based.out.find("0.50x slower"), std::string::npos) << describe(based);
  const auto alone = run({"compare", std::to_string(a)});
  EXPECT_EQ(alone.exit_code, 2) << describe(alone);
  EXPECT_NE(alone.err.find("has no variants to compare"), std::string::npos) << describe(alone);
}

// A custom kernel on the mock engine, checked against a copy, whose simulated output is
// `output` (mock.output: correct, wrong, ...) at every point.
json checked_mock_job(const std::string& output) {
  json spec = json::parse(R"js({
    "name": "checked", "engine": "mock",
    "kernel": {"op": "custom", "language": "hip",
      "source": "extern \"C\" __global__ void copy(float* out, const float* a, int n) {}",
      "entry": "copy", "block": [256, 1, 1], "grid": ["ceil(N/256)", 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": "N", "output": true},
               {"name": "a", "type": "f32*", "count": "N"},
               {"name": "n", "type": "i32", "value": "N"}],
      "reference": {"op": "stream", "variant": "copy", "n": "N", "dtype": "f32",
                    "a": "a", "c": "out"}},
    "sweep": {"N": [4096, 8192]}, "cache": false})js");
  spec["mock"]["output"] = output;
  return spec;
}

// A job that succeeded with wrong answers is no success: the points line counts them and the
// wait exits 1, for submit --wait and bench alike.
TEST_F(cli, AWaitExitsOneWhenAPointFailedVerification) {
  const std::string wrong = write_file("wrong.json", checked_mock_job("wrong").dump());
  for (const auto& args : {std::vector<std::string>{"submit", wrong, "--wait"},
                           std::vector<std::string>{"bench", wrong}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 1) << describe(r);
    EXPECT_NE(r.out.find("\": succeeded\n"), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("points  2 of 2 measured: 2 ok (2 failed verification), 0 failed\n"),
              std::string::npos)
        << describe(r);
  }
  const std::string right = write_file("right.json", checked_mock_job("correct").dump());
  for (const auto& args : {std::vector<std::string>{"submit", right, "--wait"},
                           std::vector<std::string>{"bench", right}}) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_NE(r.out.find("points  2 of 2 measured: 2 ok, 0 failed\n"), std::string::npos)
        << describe(r);
  }
  // results prints a report of whatever there is, and exits 0.
  EXPECT_EQ(run({"results", "1"}).exit_code, 0);
}

// OpenCL kernels run on PoCL: a wrong kernel checked against a good one fails verification and
// exits 1; unchecked, its "ok" comes with a note that nothing was verified.
const char* const k_wrong_cl = R"cl(
__kernel void good(__global float* out, __global const float* x, int n) {
  int i = get_global_id(0); if (i < n) out[i] = 2.0f * x[i];
}
__kernel void wrong(__global float* out, __global const float* x, int n) {
  int i = get_global_id(0); if (i < n) out[i] = 2.0f * x[i] + 1.0f;
}
)cl";

class cli_opencl : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_process::options o;
    o.engine = "opencl";
    daemon = std::make_unique<daemon_process>(o);
    try {
      daemon->start();
    } catch (const std::exception& e) {
      if (device_required("KERNELSCAN_REQUIRE_OPENCL")) throw;
      GTEST_SKIP() << "no OpenCL device: " << e.what();
    }
  }
  cli_run run(std::vector<std::string> args) const {
    args.push_back("--server");
    args.push_back("http://127.0.0.1:" + std::to_string(daemon->port()));
    return run_cli(args);
  }
  std::string write_file(const std::string& name, const std::string& text) const {
    const std::string path = daemon->data_dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::unique_ptr<daemon_process> daemon;
};

TEST_F(cli_opencl, BenchOfAWrongKernelExitsOneAndAnUncheckedOneSaysSo) {
  const std::string file = write_file("wrong.cl", k_wrong_cl);
  const std::vector<std::string> args{"bench",       file,     "wrong",     "--sweep",
                                      "n=4096,8192", "--size", "n",         "--block",
                                      "64",          "--grid", "cdiv(n,64)"};
  const auto checked = run(args + std::vector<std::string>{"--reference", "good"});
  EXPECT_EQ(checked.exit_code, 1) << describe(checked);
  EXPECT_NE(checked.out.find("points  2 of 2 measured: 2 ok (2 failed verification), 0 failed\n"),
            std::string::npos)
      << describe(checked);
  EXPECT_EQ(checked.out.find("not verified"), std::string::npos) << describe(checked);

  const auto unchecked = run(args);
  EXPECT_EQ(unchecked.exit_code, 0) << describe(unchecked);
  EXPECT_NE(unchecked.out.find("points  2 of 2 measured: 2 ok, 0 failed\n"), std::string::npos)
      << describe(unchecked);
  EXPECT_EQ(count_lines_starting(unchecked.out,
                                 "note    not verified (the kernel has no reference "
                                 "to compare with): \"ok\" says that a point ran, "
                                 "not that its answers are right"),
            1u)
      << describe(unchecked);
}

// A kernel that does not compile: its log once, line by line, beneath the table, naming the
// user's file, however many points failed with it.
TEST_F(cli_opencl, ACompileErrorsLogIsShownOnceNamingTheFile) {
  const std::string file = write_file("bad.cl", R"cl(__kernel void k(__global float* out, int n) {
  int i = get_global_id(0);
  if (i < n) out[i] = undefined_var;
}
)cl");
  // Compiled with each point's -DW: the points do not compile alike, so each is tried.
  const auto r = run({"bench", file, "k", "--sweep", "n=64,128,256", "--size", "n", "--block", "64",
                      "--grid", "cdiv(n,64)", "--option=-DW=n"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  std::size_t logs = 0;
  for (auto at = r.out.find("undefined_var"); at != std::string::npos;
       at = r.out.find("undefined_var", at + 1))
    ++logs;
  EXPECT_EQ(logs, 1u) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "error: " + file + ":3:"), 1u) << describe(r);
  EXPECT_EQ(r.out.find("kernel.cl"), std::string::npos) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "compile_error at n=64; n=128; n=256:"), 1u) << describe(r);
  EXPECT_EQ(count_lines_starting(r.out, "128  failed  compile_error: the kernel did not compile"),
            1u)
      << describe(r);

  // Compiled alike at every point: the job stops at the first, saying so, and shows the log once.
  const auto alike = run({"bench", file, "k", "--sweep", "n=64,128,256", "--size", "n", "--block",
                          "64", "--grid", "cdiv(n,64)"});
  EXPECT_EQ(alike.exit_code, 1) << describe(alike);
  EXPECT_EQ(
      count_lines_starting(alike.out,
                           "error   compile_error: the kernel did not compile at point 0, nor "
                           "would it at any other (no compile option takes a sweep "
                           "parameter): 2 of 3 points were not measured; the kernel did not "
                           "compile"),
      1u)
      << describe(alike);
  EXPECT_NE(alike.out.find("points  1 of 3 measured: 0 ok, 1 failed\n"), std::string::npos)
      << describe(alike);
  EXPECT_EQ(count_lines_starting(alike.out, "compile_error at n=64:"), 1u) << describe(alike);
  EXPECT_EQ(count_lines_starting(alike.out, "error: " + file + ":3:"), 1u) << describe(alike);
}

// A kernel over float4 buffers is measured and verified over all of their elements.
TEST_F(cli_opencl, BenchOfAVectorKernelChecksEveryElement) {
  const std::string file = write_file("vec.cl", R"cl(
__kernel void twice(__global float4* out, __global const float4* in, int n) {
  int i = get_global_id(0); if (i < n) out[i] = 2.0f * in[i];
}
__kernel void sum(__global float4* out, __global const float4* in, int n) {
  int i = get_global_id(0); if (i < n) out[i] = in[i] + in[i];
}
__kernel void half_done(__global float4* out, __global const float4* in, int n) {
  int i = get_global_id(0); if (i < n) out[i].xy = 2.0f * in[i].xy;
}
)cl");
  const std::vector<std::string> args{"--sweep", "n=1024", "--size",     "n",           "--block",
                                      "64",      "--grid", "cdiv(n,64)", "--reference", "sum"};
  const auto right = run(std::vector<std::string>{"bench", file, "twice"} + args);
  EXPECT_EQ(right.exit_code, 0) << describe(right);
  EXPECT_NE(right.out.find("points  1 of 1 measured: 1 ok, 0 failed\n"), std::string::npos)
      << describe(right);
  const auto half = run(std::vector<std::string>{"bench", file, "half_done"} + args);
  EXPECT_EQ(half.exit_code, 1) << describe(half);
  EXPECT_NE(half.out.find("1 ok (1 failed verification)"), std::string::npos) << describe(half);
}

// Ctrl-C (or SIGTERM) while bench waits: bench made the job for its report, so it cancels it;
// the long poll (held 60 s by default) does not keep it waiting.
TEST_F(cli, ACtrlCDuringBenchCancelsItsJob) {
  const std::string file = write_file("slow.json", stream_sweep(10, 2000).dump());
  for (const auto& [id, signal_number] : {std::pair{1, SIGINT}, std::pair{2, SIGTERM}}) {
    SCOPED_TRACE("signal " + std::to_string(signal_number));
    const std::string path = "/api/v1/jobs/" + std::to_string(id);
    const cli_child child = start_cli({"bench", file, "--server", server()});
    ASSERT_TRUE(eventually([&] { return daemon.get(path).body["status"] == "running"; }))
        << daemon.get(path).text;
    const auto sent = std::chrono::steady_clock::now();
    ASSERT_EQ(kill(child.pid, signal_number), 0);
    const auto r = finish_cli(child);
    EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(5)) << describe(r);
    EXPECT_EQ(r.exit_code, 128 + signal_number) << describe(r);
    EXPECT_EQ(r.out.rfind("job " + std::to_string(id) + " queued: ", 0), 0u) << describe(r);
    EXPECT_EQ(r.err.rfind("kernelscan bench: interrupted: cancelled job " + std::to_string(id), 0),
              0u)
        << describe(r);
    EXPECT_EQ(daemon.wait_job(id)["status"], "cancelled");
  }
}

// Ctrl-C while submit --wait waits: the job may be wanted, so it runs on, and the client says
// how to stop it.
TEST_F(cli, ACtrlCDuringSubmitWaitLeavesTheJobRunning) {
  const std::string file = write_file("slow.json", stream_sweep(10, 2000).dump());
  const cli_child child = start_cli({"submit", file, "--wait", "--server", server()});
  ASSERT_TRUE(eventually([&] { return daemon.get("/api/v1/jobs/1").body["status"] == "running"; }))
      << daemon.get("/api/v1/jobs/1").text;
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(child.pid, SIGINT), 0);
  const auto r = finish_cli(child);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(5)) << describe(r);
  EXPECT_EQ(r.exit_code, 130) << describe(r);
  EXPECT_EQ(
      r.err,
      "kernelscan submit: interrupted: job 1 is still running; kernelscan cancel 1 stops it\n")
      << describe(r);
  const json job = daemon.get("/api/v1/jobs/1").body;
  EXPECT_EQ(job["status"], "running") << job.dump();
  EXPECT_FALSE(job["cancel_requested"].get<bool>()) << job.dump();
  daemon.post("/api/v1/jobs/1/cancel", "");
}

// Jobs that share no sweep parameter are compared by their best points, which are different
// problems: the report says so above the table.
TEST_F(cli, CompareWarnsWhenTheJobsShareNoParameter) {
  const std::int64_t a = daemon.submit(stream_sweep(2, 0));
  const std::int64_t b = daemon.submit(json::parse(R"({
    "kernel": {"op": "stream", "variant": "triad", "n": "S"}, "sweep": {"S": [1024, 2048]}})"));
  daemon.wait_job(a);
  daemon.wait_job(b);
  const auto r = run({"compare", std::to_string(a), std::to_string(b)});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("joined on nothing: each one's best point\n"
                       "warning: these share no sweep parameter: each one's best point stands "
                       "for it, so the speedup compares different problems, by throughput"),
            std::string::npos)
      << describe(r);
}

// --max-slowdown gates a comparison: the same kernel measured again passes, one measured twice
// as slow (the mock's model told so) fails, exit 1, naming each point and the geometric mean.
TEST_F(cli, CompareMaxSlowdownIsAPerformanceGate) {
  const std::int64_t a = daemon.submit(stream_sweep(3, 0));
  json again = stream_sweep(3, 0);
  again["cache"] = false;
  const std::int64_t b = daemon.submit(again);
  json slower = stream_sweep(3, 0);
  slower["cache"] = false;
  slower["mock"] = {{"speedup", 0.5}};
  const std::int64_t c = daemon.submit(slower);
  for (const std::int64_t id : {a, b, c})
    ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
  const std::string ja = std::to_string(a), jb = std::to_string(b), jc = std::to_string(c);

  const auto pass = run({"compare", ja, jb, "--max-slowdown", "10"});
  EXPECT_EQ(pass.exit_code, 0) << describe(pass);
  EXPECT_TRUE(pass.out.ends_with("\nno regression past --max-slowdown 10%\n")) << describe(pass);

  const auto fail = run({"compare", ja, jc, "--max-slowdown", "10"});
  EXPECT_EQ(fail.exit_code, 1) << describe(fail);
  const auto at = fail.out.find("4 regressions past --max-slowdown 10%:\n  job " + jc + " at N=");
  EXPECT_NE(at, std::string::npos) << describe(fail);
  EXPECT_NE(fail.out.find("x slower\n", at), std::string::npos) << describe(fail);
  EXPECT_TRUE(
      fail.out.ends_with("  job " + jc + ": 0.50x the speed of job " + ja + " (geometric mean)\n"))
      << describe(fail);

  const auto usage = run({"compare", ja, jc, "--max-slowdown", "-1"});
  EXPECT_EQ(usage.exit_code, 2) << describe(usage);
}

// A job still running is compared on its points so far, and said to be running; one with no
// point yet is said to be running, not to have nothing in common with the others.
TEST_F(cli, CompareSaysWhichJobsAreStillRunning) {
  const std::int64_t a = daemon.submit(stream_sweep(2, 0));
  daemon.wait_job(a);
  json spec = stream_sweep(2, 3000);
  spec["cache"] = false;
  const std::int64_t slow = daemon.submit(spec);
  const auto r = run({"compare", std::to_string(a), std::to_string(slow)});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("kernelscan compare: no measured point is shared by"), std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("job " + std::to_string(slow) + " is "), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find(" (0 of 2 points measured)\n"), std::string::npos) << describe(r);
  // Once its first point is in, it is compared there.
  ASSERT_TRUE(eventually(
      [&] {
        return daemon.get("/api/v1/jobs/" + std::to_string(slow)).body["progress"]["done"] == 1;
      },
      std::chrono::seconds(10)));
  const auto partial = run({"compare", std::to_string(a), std::to_string(slow)});
  EXPECT_EQ(partial.exit_code, 0) << describe(partial);
  EXPECT_EQ(partial.out.rfind("job " + std::to_string(slow) +
                                  " is running (1 of 2 points measured)\n"
                                  "compared on the points measured so far\nbaseline  job " +
                                  std::to_string(a) + "\n",
                              0),
            0u)
      << describe(partial);
  run({"cancel", std::to_string(slow)});
}

// cancel and confirm print a whole line per job once its outcome is known: nothing of a job
// whose request failed reaches standard output.
TEST_F(cli, CancelAndConfirmPrintWholeLinesOnly) {
  const std::string id = std::to_string(finished_job());
  const auto twice = run({"cancel", id, id});
  EXPECT_EQ(twice.exit_code, 1) << describe(twice);
  EXPECT_EQ(twice.out, "") << describe(twice);
  EXPECT_EQ(twice.err, "kernelscan: job " + id + ": job_finished (HTTP 409): job " + id +
                           " already succeeded\n"
                           "kernelscan: job " +
                           id + ": job_finished (HTTP 409): job " + id + " already succeeded\n")
      << describe(twice);
  for (const std::string command : {"cancel", "confirm"}) {
    const auto unknown = run({command, "424242"});
    EXPECT_EQ(unknown.exit_code, 1) << describe(unknown);
    EXPECT_EQ(unknown.out, "") << describe(unknown);
    EXPECT_EQ(unknown.err, "kernelscan: job 424242: not_found (HTTP 404): no job 424242\n")
        << describe(unknown);
  }
  // A running job: a whole line once its cancel is answered.
  const std::string slow = std::to_string(daemon.submit(stream_sweep(50, 200)));
  const auto running = run({"cancel", slow});
  EXPECT_EQ(running.exit_code, 0) << describe(running);
  EXPECT_EQ(running.out.back(), '\n') << describe(running);
}

// `delete` removes a job that ended, with its results: the API no longer knows it, nor does the
// jobs list; deleting it again is refused as for any unknown id.
// A job's spec submitted again is measured afresh: not answered from the result cache (which
// the first run filled), with inputs of a new seed; the rest of the spec as it was.
TEST_F(cli, RerunSubmitsTheSpecAgainToBeMeasuredAfresh) {
  const std::int64_t first = finished_job();
  const json before = daemon.get("/api/v1/jobs/" + std::to_string(first)).body;
  const auto again = run({"rerun", std::to_string(first), "--wait"});
  ASSERT_EQ(again.exit_code, 0) << describe(again);
  const std::int64_t second = first + 1;
  EXPECT_EQ(again.out.rfind("job " + std::to_string(second) +
                                " queued: \"five points\", stream, 5 points, device any",
                            0),
            0u)
      << describe(again);
  EXPECT_NE(again.out.find("points  5 of 5 measured: 5 ok, 0 failed"), std::string::npos)
      << describe(again);
  const json after = daemon.get("/api/v1/jobs/" + std::to_string(second)).body;
  EXPECT_EQ(after["status"], "succeeded") << after.dump();
  EXPECT_EQ(after["cached_from"], nullptr) << after.dump();  // measured, not copied
  EXPECT_EQ(after["spec"]["cache"], false);
  EXPECT_NE(after["spec"]["seed"], before["spec"]["seed"]);
  for (const char* same : {"name", "labels", "kernel", "sweep", "timing", "verify", "fitness"})
    EXPECT_EQ(after["spec"][same], before["spec"][same]) << same;

  const auto missing = run({"rerun", "424242"});
  EXPECT_EQ(missing.exit_code, 1) << describe(missing);
  EXPECT_NE(missing.err.find("not_found"), std::string::npos) << describe(missing);
}

// A task's candidate goes through its task again, and an import has nothing to run.
TEST_F(cli, RerunRefusesATasksCandidateAndAnImport) {
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", copy_task()).status, 201);
  const std::string candidate = std::to_string(submitted_candidate(daemon, "axpy"));
  const auto task = run({"rerun", candidate});
  EXPECT_EQ(task.exit_code, 1) << describe(task);
  EXPECT_EQ(task.out, "") << describe(task);
  EXPECT_EQ(task.err, "kernelscan rerun: job " + candidate +
                          " is a candidate of task \"axpy\": submit its source to the task "
                          "again (kernelscan evaluate axpy FILE)\n")
      << describe(task);

  const auto imported =
      daemon.post_json("/api/v1/imports", {{"format", "nsys_cuda_gpu_kern_sum"}, {"data", k_nsys}});
  ASSERT_EQ(imported.status, 201) << imported.text;
  const std::string id = std::to_string(imported.body["id"].get<std::int64_t>());
  const auto refused = run({"rerun", id});
  EXPECT_EQ(refused.exit_code, 1) << describe(refused);
  EXPECT_EQ(refused.err, "kernelscan rerun: job " + id +
                             " was imported (measured elsewhere): there is nothing to run again\n")
      << describe(refused);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 2u);  // nothing submitted
}

TEST_F(cli, DeleteRemovesAFinishedJobAndItsResults) {
  const std::string id = std::to_string(finished_job());
  const auto deleted = run({"delete", id});
  ASSERT_EQ(deleted.exit_code, 0) << describe(deleted);
  EXPECT_EQ(deleted.out, "job " + id + " deleted\n") << describe(deleted);
  EXPECT_EQ(deleted.err, "") << describe(deleted);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + id).status, 404);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + id + "/results").status, 404);
  EXPECT_EQ(run({"jobs"}).out, "no jobs\n");
  const auto again = run({"delete", id});
  EXPECT_EQ(again.exit_code, 1) << describe(again);
  EXPECT_EQ(again.out, "") << describe(again);
  EXPECT_EQ(again.err, "kernelscan: job " + id + ": not_found (HTTP 404): no job " + id + "\n")
      << describe(again);
}

// A job still queued or running is not deleted: the daemon says to cancel it first, and the job
// goes on. Once cancelled, it is deleted.
TEST_F(cli, DeleteRefusesAJobThatHasNotEnded) {
  const std::string running = std::to_string(daemon.submit(stream_sweep(50, 200)));
  const std::string queued = std::to_string(daemon.submit(stream_sweep(50, 200)));  // one device
  ASSERT_TRUE(eventually(
      [&] { return daemon.get("/api/v1/jobs/" + running).body["status"] == "running"; }));
  const auto refused = run({"delete", running, queued});
  EXPECT_EQ(refused.exit_code, 1) << describe(refused);
  EXPECT_EQ(refused.out, "") << describe(refused);
  EXPECT_EQ(refused.err, "kernelscan: job " + running + ": job_not_finished (HTTP 409): job " +
                             running + " is running: cancel it first, then delete it\n" +
                             "kernelscan: job " + queued + ": job_not_finished (HTTP 409): job " +
                             queued + " is queued: cancel it first, then delete it\n")
      << describe(refused);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + running).body["status"], "running");
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + queued).body["status"], "queued");

  ASSERT_EQ(run({"cancel", queued, running}).exit_code, 0);
  for (const std::string& id : {running, queued})
    EXPECT_EQ(daemon.wait_job(std::stoll(id))["status"], "cancelled");
  const auto deleted = run({"delete", running, queued});
  EXPECT_EQ(deleted.exit_code, 0) << describe(deleted);
  EXPECT_EQ(deleted.out, "job " + running + " deleted\njob " + queued + " deleted\n")
      << describe(deleted);
}

// Several ids: each is deleted or refused on its own, a whole line each, in the order given; a
// refusal makes the exit code 1 but stops none of the others.
TEST_F(cli, DeleteTakesSeveralIds) {
  const std::string a = std::to_string(finished_job());
  const std::string b = std::to_string(finished_job());
  const auto mixed = run({"delete", a, "424242", b});
  EXPECT_EQ(mixed.exit_code, 1) << describe(mixed);
  EXPECT_EQ(mixed.out, "job " + a + " deleted\njob " + b + " deleted\n") << describe(mixed);
  EXPECT_EQ(mixed.err, "kernelscan: job 424242: not_found (HTTP 404): no job 424242\n")
      << describe(mixed);
  for (const std::string& id : {a, b})
    EXPECT_EQ(daemon.get("/api/v1/jobs/" + id).status, 404) << id;

  const std::string c = std::to_string(finished_job());
  const std::string d = std::to_string(finished_job());
  const auto both = run({"delete", d, c});
  EXPECT_EQ(both.exit_code, 0) << describe(both);
  EXPECT_EQ(both.out, "job " + d + " deleted\njob " + c + " deleted\n") << describe(both);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
}

// Filters instead of ids: every job that ended matching them is deleted, page by page; a job
// still running is not, whatever the filters; --dry-run lists and deletes nothing.
TEST_F(cli, DeleteByFiltersTakesEveryJobThatEndedMatchingThem) {
  const std::string a1 = std::to_string(finished_job());  // labels run=a
  const std::string a2 = std::to_string(finished_job());
  json other = stream_sweep(2, 0);
  other["labels"] = {{"run", "b"}};
  const std::string b = std::to_string(daemon.submit(other));
  ASSERT_EQ(daemon.wait_job(std::stoll(b))["status"], "succeeded");
  json slow = stream_sweep(50, 200);
  slow["labels"] = {{"run", "a"}};
  const std::string running = std::to_string(daemon.submit(slow));
  ASSERT_TRUE(eventually(
      [&] { return daemon.get("/api/v1/jobs/" + running).body["status"] == "running"; }));

  const auto listed = run({"delete", "--label", "run=a", "--dry-run"});
  EXPECT_EQ(listed.exit_code, 0) << describe(listed);
  EXPECT_EQ(listed.out, "job " + a2 + " would be deleted (succeeded)\njob " + a1 +
                            " would be deleted (succeeded)\n2 jobs would be deleted\n")
      << describe(listed);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + a1).status, 200);

  // Ended a moment ago, not a day ago.
  const auto young = run({"delete", "--label", "run=a", "--older-than-days", "1"});
  EXPECT_EQ(young.exit_code, 0) << describe(young);
  EXPECT_EQ(young.out, "no job that ended matches\n") << describe(young);

  const auto deleted = run({"delete", "--label", "run=a", "--status", "succeeded,failed"});
  EXPECT_EQ(deleted.exit_code, 0) << describe(deleted);
  EXPECT_EQ(deleted.out, "job " + a2 + " deleted\njob " + a1 + " deleted\n2 jobs deleted\n")
      << describe(deleted);
  for (const std::string& id : {a1, a2})
    EXPECT_EQ(daemon.get("/api/v1/jobs/" + id).status, 404) << id;
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + b).status, 200);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + running).body["status"], "running");

  const auto all = run({"delete", "--older-than-days", "0"});
  EXPECT_EQ(all.exit_code, 0) << describe(all);
  EXPECT_EQ(all.out, "job " + b + " deleted\n1 job deleted\n") << describe(all);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + running).body["status"], "running");
  ASSERT_EQ(run({"cancel", running}).exit_code, 0);
}

// What a delete cannot be asked: ids and filters at once, neither, a state jobs do not end in.
TEST_F(cli, DeleteRefusesIdsWithFiltersAndStatesThatHaveNotEnded) {
  const std::string id = std::to_string(finished_job());
  const std::pair<std::vector<std::string>, std::string> refused[] = {
      {{"delete"},
       "kernelscan delete: give job ids, or filters (--status, --label, --task, "
       "--older-than-days) to delete every job that ended matching them\n"},
      {{"delete", id, "--label", "run=a"},
       "kernelscan delete: give job ids or filters (--status, --label, --task, "
       "--older-than-days), not both\n"},
      {{"delete", "--status", "succeeded,queued"},
       "kernelscan delete: --status: queued jobs are not deleted (cancel them first); jobs that "
       "ended are succeeded, failed or cancelled\n"},
      {{"delete", "--status", "done"},
       "kernelscan delete: --status: \"done\" is not a state a job ends in (succeeded, failed, "
       "cancelled)\n"},
      {{"delete", "--label", "run"}, "kernelscan delete: --label: \"run\": expected KEY=VALUE\n"},
      {{"delete", id, "--dry-run"},
       "kernelscan delete: --dry-run lists what filters (--status, --label, --task, "
       "--older-than-days) match; ids need none\n"},
  };
  for (const auto& [args, message] : refused) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(r.err, message) << describe(r);
    EXPECT_EQ(r.out, "") << describe(r);
  }
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + id).status, 200);
}

// Where the daemon has operator tokens, deleting takes one, as confirming a score does: a
// writer's token is refused and the job stays.
TEST(cli_delete, DeletingTakesAnOperatorTokenWhereTheDaemonHasThem) {
  const tokens_daemon tokens("writer-token-of-the-cli-test");
  const daemon_process& daemon = *tokens.daemon;
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port());
  const auto submitted = daemon.post("/api/v1/jobs", stream_sweep(1, 0).dump(),
                                     {{"Authorization", "Bearer writer-token-of-the-cli-test"}});
  ASSERT_EQ(submitted.status, 201) << submitted.text;
  const std::int64_t job = submitted.body.at("id").get<std::int64_t>();
  ASSERT_EQ(daemon.wait_job(job)["status"], "succeeded");
  const std::string id = std::to_string(job);

  const auto writer =
      run_cli({"delete", id, "--server", url, "--token", "writer-token-of-the-cli-test"});
  EXPECT_EQ(writer.exit_code, 1) << describe(writer);
  EXPECT_EQ(writer.out, "") << describe(writer);
  EXPECT_EQ(writer.err.rfind("kernelscan: job " + id + ": forbidden (HTTP 403): ", 0), 0u)
      << describe(writer);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + id).status, 200);

  const auto op =
      run_cli({"delete", id, "--server", url, "--token", "operator-token-of-the-cli-test"});
  EXPECT_EQ(op.exit_code, 0) << describe(op);
  EXPECT_EQ(op.out, "job " + id + " deleted\n") << describe(op);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + id).status, 404);
}

// A web server at --server that is not a kernelscan daemon: whatever it answers, no command takes
// it for an answer of the API.
TEST(cli_foreign_server, AnswersThatAreNotTheApisAreSaidToBeSo) {
  httplib::Server fake;
  std::atomic<int> mode{0};  // 0: JSON of another shape; 1: an HTML 404 page
  const auto answer = [&](const httplib::Request&, httplib::Response& res) {
    if (mode == 0) {
      res.set_content(R"({"jobs": 5})", "application/json");
    } else {
      res.status = 404;
      res.set_content("<html><body><h1>Not Found</h1></body></html>", "text/html");
    }
  };
  fake.Get(".*", answer);
  fake.Post(".*", answer);
  fake.Delete(".*", answer);
  const int port = fake.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { fake.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  for (const int m : {0, 1}) {
    mode = m;
    for (const std::vector<std::string>& args : {std::vector<std::string>{"submit", "-"},
                                                 {"cancel", "1"},
                                                 {"confirm", "1"},
                                                 {"delete", "1"},
                                                 {"jobs"},
                                                 {"results", "1"},
                                                 {"results", "1", "--format", "csv"},
                                                 {"results", "1", "--format", "json"},
                                                 {"devices"},
                                                 {"compare", "1", "2"},
                                                 {"roofline", "0"},
                                                 {"submit", "-", "--wait"}}) {
      const auto r =
          run_cli(args + std::vector<std::string>{"--server", url}, stream_sweep(1, 0).dump());
      EXPECT_EQ(r.exit_code, 1) << args[0] << " (mode " << m << ")\n" << describe(r);
      EXPECT_EQ(r.out, "") << args[0] << " (mode " << m << ")\n" << describe(r);
      EXPECT_EQ(
          r.err.rfind(
              "kernelscan: the server at " + url + " did not answer like a kernelscan daemon (", 0),
          0u)
          << args[0] << " (mode " << m << ")\n"
          << describe(r);
      EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << describe(r);
    }
  }
  // A success that is not the API's 204 deletes nothing.
  mode = 0;
  const auto deleted = run_cli({"delete", "1", "--server", url});
  EXPECT_NE(deleted.err.find("(DELETE /api/v1/jobs/1 answered HTTP 200, application/json instead "
                             "of 204 No Content: {\"jobs\": 5})\n"),
            std::string::npos)
      << describe(deleted);
  mode = 1;
  const auto page = run_cli({"results", "1", "--server", url});
  EXPECT_NE(page.err.find("(GET /api/v1/jobs/1 answered HTTP 404, text/html: <html><body><h1>Not "
                          "Found</h1></body></html>)\n"),
            std::string::npos)
      << describe(page);
  fake.stop();
  serving.join();
}

// A mistyped command is named, with the commands there are.
TEST(cli_usage, AnUnknownCommandIsNamed) {
  const auto r = run_cli({"nosuchcmd", "1"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(r.err.rfind("kernelscan: \"nosuchcmd\" is not a command (commands: serve, submit, ", 0),
            0u)
      << describe(r);
  EXPECT_NE(r.err.find(", confirm, delete, rerun, tasks, evaluate, devices, "), std::string::npos)
      << describe(r);
  const auto after_server = run_cli({"--server", "http://127.0.0.1:1", "jbos"});
  EXPECT_EQ(after_server.exit_code, 2) << describe(after_server);
  EXPECT_EQ(after_server.err.rfind("kernelscan: \"jbos\" is not a command", 0), 0u)
      << describe(after_server);
}

TEST(cli_help, HelpNamesTheProgramAndAJobIdIsAskedForByName) {
  const auto help = run_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0) << describe(help);
  EXPECT_NE(help.out.find("Usage: kernelscan [OPTIONS] SUBCOMMAND"), std::string::npos)
      << describe(help);
  const auto jobs_help = run_cli({"jobs", "--help"});
  EXPECT_NE(jobs_help.out.find("Usage: kernelscan jobs [OPTIONS]"), std::string::npos)
      << describe(jobs_help);
  const auto delete_help = run_cli({"delete", "--help"});
  EXPECT_NE(delete_help.out.find("Usage: kernelscan delete [OPTIONS] [ID...]"), std::string::npos)
      << describe(delete_help);
  EXPECT_NE(delete_help.out.find("it cannot be undone"), std::string::npos)
      << describe(delete_help);
  const auto not_an_id = run_cli({"results", "abc"});
  EXPECT_EQ(not_an_id.exit_code, 2) << describe(not_an_id);
  EXPECT_NE(not_an_id.err.find("\"abc\" is not a job id"), std::string::npos)
      << describe(not_an_id);
}

}  // namespace
}  // namespace kernelscan::testing
