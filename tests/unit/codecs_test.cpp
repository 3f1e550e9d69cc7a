#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "api/device_codec.hpp"
#include "api/field_errors.hpp"
#include "api/job_codec.hpp"
#include "api/json.hpp"
#include "api/result_codec.hpp"
#include "api/worker_protocol.hpp"
#include "engine/fault_phase.hpp"
#include "server/device_view.hpp"

namespace kernelscan {
namespace {

namespace wp = worker_protocol;

point_result ok_result() {
  point_result r;
  r.index = 3;
  r.params = {{"M", 128}, {"N", 64}};
  r.status = point_status::ok;
  time_summary t;
  t.count = 100;
  t.mean = 13;
  t.median = 12.5;
  t.min = 10;
  t.max = 20;
  t.stddev = 1.5;
  t.p5 = 10.5;
  t.p95 = 18;
  t.p99 = 19.5;
  t.ci95_low = 12;
  t.ci95_high = 13;
  t.rel_noise = 0.01;
  r.time_us = t;
  r.samples = 100;
  r.discarded = 2;
  r.converged = true;
  r.stop_reason = "noise_target";
  r.sampling_ms = 11.25;
  r.batch = 4;
  r.l2 = l2_mode::hot;
  point_metrics m;
  m.flops = 2e9;
  m.bytes = 4e8;
  m.tflops = 1.25;
  m.gbps = 300;
  m.arithmetic_intensity = 4.5;
  m.roof_tflops = 2.5;
  m.roof_pct = 50;
  m.bound = "compute";
  m.roof_source = "datasheet";
  r.metrics = m;
  r.verification.status = "skipped";
  r.verification.note = "the mock engine cannot run device code";
  r.flags = {"faster_than_roofline", "x,y"};
  r.advice = {"use a library"};
  r.environment.device = "AMD Instinct MI300X (mock)";
  r.environment.driver = "kernelscan-mock";
  r.environment.clock_mhz = 2100;
  r.environment.temperature_c = 55.5;
  return r;
}

device_info sample_device(bool with_datasheet) {
  device_info d;
  d.index = 2;
  d.engine = engine_kind::hip;
  d.vendor = "AMD";
  d.name = "AMD Instinct MI300X";
  d.arch = "gfx942";
  d.model = with_datasheet ? "MI300X" : "";
  d.compute_units = 304;
  d.clock_mhz = 2100.5;
  d.memory_bytes = 206158430208ull;
  d.l2_bytes = 33554432;
  d.llc_bytes = 268435456;
  d.driver = "6.2.1";
  if (with_datasheet) d.datasheet = device_peaks{163.4, 163.4, 1307.4, 1307.4, 2614.9, 81.7, 5300};
  return d;
}

void expect_same_device(const device_info& a, const device_info& b) {
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.engine, b.engine);
  EXPECT_EQ(a.vendor, b.vendor);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.compute_units, b.compute_units);
  EXPECT_EQ(a.clock_mhz, b.clock_mhz);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.l2_bytes, b.l2_bytes);
  EXPECT_EQ(a.llc_bytes, b.llc_bytes);
  EXPECT_EQ(a.core_caches_bytes, b.core_caches_bytes);
  EXPECT_EQ(a.driver, b.driver);
  EXPECT_EQ(a.capabilities, b.capabilities);
  EXPECT_EQ(a.limits, b.limits);
  ASSERT_EQ(a.datasheet.has_value(), b.datasheet.has_value());
  if (a.datasheet) {
    EXPECT_EQ(a.datasheet->f64_tflops, b.datasheet->f64_tflops);
    EXPECT_EQ(a.datasheet->f32_tflops, b.datasheet->f32_tflops);
    EXPECT_EQ(a.datasheet->f16_tflops, b.datasheet->f16_tflops);
    EXPECT_EQ(a.datasheet->bf16_tflops, b.datasheet->bf16_tflops);
    EXPECT_EQ(a.datasheet->i8_tops, b.datasheet->i8_tops);
    EXPECT_EQ(a.datasheet->vector_f32_tflops, b.datasheet->vector_f32_tflops);
    EXPECT_EQ(a.datasheet->bandwidth_gbps, b.datasheet->bandwidth_gbps);
  }
}

// --- result_codec ------------------------------------------------------------------------------

TEST(ResultCodec, PointResultHasTheDocumentedKeys) {
  const json j = to_json(ok_result());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items())
    keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{
                "index", "params", "status", "simulated", "time_us", "samples", "discarded_samples",
                "converged", "stop_reason", "sampling_ms", "batch", "batch_correction", "l2",
                "metrics", "verification", "flags", "advice", "fitness", "environment"}));
  EXPECT_EQ(j["index"], 3);
  EXPECT_EQ(j["params"], json::parse(R"({"M":128,"N":64})"));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["simulated"], false);
  point_result modelled = ok_result();
  modelled.simulated = true;
  EXPECT_EQ(to_json(modelled)["simulated"], true);
  EXPECT_EQ(csv_line(to_json(modelled), {}).substr(csv_line(to_json(modelled), {}).size() - 11),
            ",true,,,,\r\n");
  EXPECT_EQ(j["time_us"]["median"], 12.5);
  EXPECT_EQ(j["time_us"]["ci95_high"], 13.0);
  EXPECT_EQ(j["time_us"]["rel_noise"], 0.01);
  EXPECT_FALSE(j["time_us"].contains("count"));
  EXPECT_EQ(j["samples"], 100);
  EXPECT_EQ(j["discarded_samples"], 2);
  EXPECT_EQ(j["converged"], true);
  EXPECT_EQ(j["stop_reason"], "noise_target");
  EXPECT_EQ(j["sampling_ms"], 11.25);
  EXPECT_EQ(j["batch"], 4);
  EXPECT_EQ(j["l2"], "hot");
  EXPECT_EQ(j["metrics"]["tflops"], 1.25);
  EXPECT_EQ(j["metrics"]["bound"], "compute");
  EXPECT_EQ(j["metrics"]["roof_source"], "datasheet");
  EXPECT_EQ(j["verification"]["status"], "skipped");
  EXPECT_EQ(j["verification"]["note"], "the mock engine cannot run device code");
  EXPECT_EQ(j["flags"], json::array({"faster_than_roofline", "x,y"}));
  EXPECT_EQ(j["advice"], json::array({"use a library"}));
  // Fitness is always there; what the result did not set is null.
  EXPECT_EQ(j["fitness"], json::parse(R"({"correct":false,"speedup":null,"speedup_ci95":null,
      "baseline_us":null,"latency_score":null,"combined_score":0.0})"));
  EXPECT_EQ(j["environment"]["clock_mhz"], 2100.0);
  EXPECT_EQ(j["environment"]["temperature_c"], 55.5);
  EXPECT_FALSE(j["environment"].contains("power_w"));
}

// A user kernel's resources follow its metrics, with only what the platform told.
TEST(ResultCodec, AKernelsResourcesFollowItsMetricsWithWhatThePlatformTold) {
  point_result r = ok_result();
  kernel_resources k;
  k.registers = 40;
  k.shared_bytes = 8192;
  k.local_bytes = 0;
  k.max_block_threads = 1024;
  k.blocks_per_unit = 12;
  k.occupancy = 0.75;
  k.limited_by = {"registers"};
  r.resources = k;
  const json j = to_json(r);
  EXPECT_EQ(j["resources"], json::parse(R"({"registers":40,"shared_bytes":8192,"local_bytes":0,
      "max_block_threads":1024,"blocks_per_unit":12,"occupancy":0.75,"limited_by":["registers"]})"));
  auto it = j.find("metrics");
  EXPECT_EQ((++it).key(), "resources");
  // OpenCL on a CPU: its work-group limit, preferred multiple and local memory only.
  kernel_resources cl;
  cl.shared_bytes = 6144;
  cl.max_block_threads = 4096;
  cl.block_multiple = 8;
  r.resources = cl;
  EXPECT_EQ(to_json(r)["resources"],
            json::parse(R"({"shared_bytes":6144,"max_block_threads":4096,"block_multiple":8})"));
  // CSV: the four resource columns last, empty where the platform did not tell.
  const std::string line = csv_line(to_json(r), {});
  EXPECT_TRUE(line.ends_with(",false,,6144,,\r\n")) << line;
  r.resources = k;
  const std::string gpu = csv_line(to_json(r), {});
  EXPECT_TRUE(gpu.ends_with(",false,40,8192,0,0.75\r\n")) << gpu;
}

TEST(ResultCodec, FailedPointHasErrorAndNulls) {
  const auto r = failed_point(5, {{"M", 1}}, "timeout", "outlived its deadline");
  const json j = to_json(r);
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["error"], json::parse(R"({"type":"timeout","message":"outlived its deadline"})"));
  EXPECT_TRUE(j["time_us"].is_null());
  EXPECT_TRUE(j["metrics"].is_null());
  EXPECT_TRUE(j["stop_reason"].is_null());
  EXPECT_EQ(j["samples"], 0);
  EXPECT_EQ(j["flags"], json::array({"timeout"}));
  EXPECT_EQ(j["verification"]["status"], "skipped");
  EXPECT_EQ(j["verification"]["note"], "not run: the point failed");
  // Error sits right after status.
  auto it = j.begin();
  std::advance(it, 3);
  EXPECT_EQ(it.key(), "error");
  // An invalid point is not an anti-cheat flag.
  EXPECT_TRUE(to_json(failed_point(0, {}, "invalid_point", "m < 1"))["flags"].empty());
}

TEST(ResultCodec, ARowsCostIsItsTimePerFlopElsePerByteElseItsMedian) {
  const json gemm = json::parse(
      R"({"status": "ok", "time_us": {"median": 20}, "metrics": {"flops": 4e6, "bytes": 8e3}})");
  EXPECT_DOUBLE_EQ(*cost_of(gemm), 20 / 4e6);
  json stream = gemm;
  stream["metrics"]["flops"] = 0;
  EXPECT_DOUBLE_EQ(*cost_of(stream), 20 / 8e3);
  json counted_nothing = gemm;
  counted_nothing.erase("metrics");
  EXPECT_DOUBLE_EQ(*cost_of(counted_nothing), 20);
  json failed = gemm;
  failed["status"] = "failed";
  EXPECT_FALSE(cost_of(failed));
  json no_time = gemm;
  no_time["time_us"] = nullptr;
  EXPECT_FALSE(cost_of(no_time));
  EXPECT_FALSE(cost_of(json::array()));
}

TEST(ResultCodec, CsvHeaderNamesParamsThenFixedColumns) {
  EXPECT_EQ(csv_header({"M", "N"}),
            "M,N,index,status,error_type,median_us,mean_us,min_us,max_us,stddev_us,p5_us,p95_us,"
            "p99_us,ci95_low_us,ci95_high_us,rel_noise,samples,converged,l2,tflops,gbps,"
            "arithmetic_intensity,roof_pct,bound,verification,flags,correct,speedup,latency_score,"
            "combined_score,name,simulated,registers,shared_bytes,local_bytes,occupancy\r\n");
  // No parameters: the fixed columns alone.
  EXPECT_EQ(csv_header({}).rfind("index,status,", 0), 0u);
}

TEST(ResultCodec, CsvLineOfAnOkPoint) {
  EXPECT_EQ(csv_line(to_json(ok_result()), {"M", "N"}),
            "128,64,3,ok,,12.5,13,10,20,1.5,10.5,18,19.5,12,13,0.01,100,true,hot,1.25,300,4.5,50,"
            "compute,skipped,\"faster_than_roofline;x,y\",false,,,0,,false,,,,\r\n");
  // Parameters follow the requested order; a missing one is an empty cell.
  EXPECT_EQ(csv_line(to_json(ok_result()), {"N", "Q", "M"}).rfind("64,,128,3,ok,", 0), 0u);
}

TEST(ResultCodec, CsvLineOfAFailedPointQuotesFields) {
  const auto r = failed_point(9, {{"M", 7}}, "odd \"type\", really", "x");
  const std::string line = csv_line(to_json(r), {"M"});
  EXPECT_EQ(line,
            "7,9,failed,\"odd \"\"type\"\", really\",,,,,,,,,,,,0,false,cold,,,,,,skipped,,false,,,"
            "0,,false,,,,\r\n");
  // As many cells as header columns.
  const auto count_cells = [](const std::string& s) {
    std::size_t n = 1;
    bool quoted = false;
    for (char c : s) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  EXPECT_EQ(count_cells(line), count_cells(csv_header({"M"})));
}

TEST(ResultCodec, CsvQuotesParameterNamesAndNewlines) {
  EXPECT_EQ(csv_header({"a,b", "q\"x"}).rfind("\"a,b\",\"q\"\"x\",index,", 0), 0u);
  json row = to_json(ok_result());
  row["status"] = "line\nbreak";
  const std::string line = csv_line(row, {});
  EXPECT_NE(line.find(",\"line\nbreak\","), std::string::npos) << line;
}

// --- job_codec ---------------------------------------------------------------------------------

TEST(JobCodec, FormatTimeMs) {
  EXPECT_EQ(format_time_ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time_ms(1700000000123), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(format_time_ms(1), "1970-01-01T00:00:00.001Z");
  EXPECT_EQ(format_time_ms(951782400999), "2000-02-29T00:00:00.999Z");
}

job_record sample_job() {
  job_record j;
  j.id = 7;
  j.name = "nightly";
  j.labels = {{"team", "perf"}};
  j.status = job_status::running;
  j.priority = 2;
  j.engine = engine_kind::mock;
  j.device = 1;
  j.op = "gemm";
  j.progress = {10, 3, 2, 1};
  j.created_ms = 1700000000123;
  j.started_ms = 1700000001000;
  j.best = job_best{4, 12.5, R"({"M":4})"};
  return j;
}

TEST(JobCodec, JobJson) {
  const json j = to_json(sample_job());
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["name"], "nightly");
  EXPECT_EQ(j["labels"], json::parse(R"({"team":"perf"})"));
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["op"], "gemm");
  EXPECT_EQ(j["priority"], 2);
  EXPECT_EQ(j["engine"], "mock");
  EXPECT_EQ(j["requested_device"], "any");
  EXPECT_EQ(j["device"], 1);
  EXPECT_EQ(j["progress"], json::parse(R"({"done":3,"total":10,"ok":2,"failed":1})"));
  EXPECT_EQ(j["created_at"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(j["started_at"], "2023-11-14T22:13:21.000Z");
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_EQ(j["cancel_requested"], false);
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["summary"]["best"], json::parse(R"({"index":4,"params":{"M":4},"median_us":12.5})"));
  EXPECT_TRUE(j["summary"]["fitness"].is_null());
  EXPECT_EQ(j["links"]["self"], "/api/v1/jobs/7");
  EXPECT_EQ(j["links"]["results"], "/api/v1/jobs/7/results");
  EXPECT_FALSE(j.contains("spec"));
}

TEST(JobCodec, EmbedsSpecAndErrorWhenPresent) {
  job_record rec = sample_job();
  rec.spec_json = R"({"name":"nightly","kernel":{"op":"gemm"}})";
  rec.status = job_status::failed;
  rec.requested_device = 3;
  rec.finished_ms = 1000;
  rec.error = point_error{"internal", "boom"};
  rec.best.reset();
  const json j = to_json(rec);
  ASSERT_TRUE(j.contains("spec"));
  EXPECT_EQ(j["spec"]["kernel"]["op"], "gemm");
  EXPECT_EQ(j["requested_device"], 3);
  EXPECT_EQ(j["finished_at"], "1970-01-01T00:00:01.000Z");
  EXPECT_EQ(j["error"], json::parse(R"({"type":"internal","message":"boom"})"));
  EXPECT_TRUE(j["summary"]["best"].is_null());
}

// --- device_codec ------------------------------------------------------------------------------

TEST(DeviceCodec, RoundTrips) {
  for (bool datasheet : {true, false}) {
    const auto d = sample_device(datasheet);
    const json j = to_json(d);
    EXPECT_EQ(j["engine"], "hip");
    EXPECT_EQ(j["model"].is_null(), !datasheet);
    EXPECT_EQ(j["datasheet"].is_null(), !datasheet);
    expect_same_device(device_info_from_json(j), d);
    // Through text, as between processes.
    expect_same_device(device_info_from_json(json::parse(j.dump())), d);
  }
}

// A GPU's limits as its platform told them; OpenCL's work-group limits alone, the rest null; a
// description from before limits were reported has none.
TEST(DeviceCodec, LimitsRoundTripNullWhereNotTold) {
  device_info d = sample_device(false);
  d.limits = {1024, 232448, 32, 2048, 65536, 233472};
  json j = to_json(d);
  EXPECT_EQ(j["limits"], json::parse(R"({"block_threads": 1024, "block_shared_bytes": 232448,
    "warp_size": 32, "unit_threads": 2048, "unit_registers": 65536,
    "unit_shared_bytes": 233472})"));
  expect_same_device(device_info_from_json(json::parse(j.dump())), d);
  d.limits = {};
  d.limits.block_threads = 4096;
  d.limits.block_shared_bytes = 1 << 20;
  j = to_json(d);
  EXPECT_TRUE(j["limits"]["unit_registers"].is_null());
  EXPECT_EQ(j["limits"]["block_threads"], 4096);
  expect_same_device(device_info_from_json(json::parse(j.dump())), d);
  j.erase("limits");
  EXPECT_EQ(device_info_from_json(j).limits, device_limits{});
}

TEST(DeviceCodec, CapabilitiesRoundTripAndADescriptionWithoutThemIsAGpus) {
  device_info d = sample_device(false);
  d.engine = engine_kind::opencl;
  d.capabilities.fp16 = false;
  d.capabilities.gemm_library = "CLBlast";
  d.capabilities.gemm_library_types = {dtype::f32};
  d.capabilities.gemm_builtin_types = {dtype::f32, dtype::bf16};
  const json j = to_json(d);
  EXPECT_EQ(j["capabilities"], json::parse(R"({"fp64": true, "fp16": false,
    "gemm_library": "CLBlast", "gemm_library_dtypes": ["f32"],
    "gemm_builtin_dtypes": ["f32", "bf16"]})"));
  expect_same_device(device_info_from_json(json::parse(j.dump())), d);

  json old = j;
  old.erase("capabilities");  // a node of a version before capabilities
  EXPECT_EQ(device_info_from_json(old).capabilities, device_capabilities{});
  json bad = j;
  bad["capabilities"]["gemm_builtin_dtypes"] = {"f32", "f128"};
  try {
    (void)device_info_from_json(bad);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad device description"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("f128"), std::string::npos);
  }
}

// A CPU device's cores' caches travel with it; a node of a version before them reports none.
TEST(DeviceCodec, ACpuDevicesCoreCachesRoundTrip) {
  device_info d = sample_device(false);
  d.engine = engine_kind::opencl;
  d.type = "cpu";
  d.l2_bytes = 32ull << 20;
  d.llc_bytes = 0;
  d.core_caches_bytes = 16ull << 20;
  const json j = to_json(d);
  EXPECT_EQ(j["core_caches_bytes"], 16ull << 20);
  expect_same_device(device_info_from_json(json::parse(j.dump())), d);
  json old = j;
  old.erase("core_caches_bytes");
  EXPECT_EQ(device_info_from_json(old).core_caches_bytes, 0u);
}

TEST(DeviceCodec, AMeasuredRooflineSaysWhenAndRoundTrips) {
  measured_roofline m;
  m.peaks.f16_tflops = 1000;
  m.peaks.bandwidth_gbps = 4000;
  m.measured_ms = 1'795'510'933'724;
  m.method = "stream triad";
  const json j = to_json(m);
  EXPECT_EQ(j["measured_at"], "2026-11-24T09:02:13.724Z");
  EXPECT_FALSE(j.contains("measured_ms"));  // an instant, not a duration: one field says it
  const auto back = measured_roofline_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.measured_ms, m.measured_ms);
  EXPECT_EQ(back.method, m.method);
  // A roofline stored before measured_at existed still loads.
  json old = j;
  old.erase("measured_at");
  old["measured_ms"] = m.measured_ms;
  EXPECT_EQ(measured_roofline_from_json(old).measured_ms, m.measured_ms);
  old.erase("measured_ms");
  old["measured_at"] = "yesterday";
  EXPECT_THROW((void)measured_roofline_from_json(old), std::runtime_error);
}

TEST(DeviceCodec, RejectsIncompleteDescriptions) {
  json j = to_json(sample_device(true));
  j.erase("driver");
  try {
    (void)device_info_from_json(j);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad device description"), std::string::npos);
  }
  json wrong = to_json(sample_device(true));
  wrong["compute_units"] = "many";
  EXPECT_THROW((void)device_info_from_json(wrong), std::runtime_error);
  json no_peak = to_json(sample_device(true));
  no_peak["datasheet"].erase("bandwidth_gbps");
  EXPECT_THROW((void)device_info_from_json(no_peak), std::runtime_error);
}

// --- worker_protocol ---------------------------------------------------------------------------

std::string without_newline(std::string line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  line.pop_back();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  return line;
}

// A "device" event: what changes as a device works, its last error cut short and made valid
// UTF-8 (a worker's text), its roofline's time as the device shows it; not its description.
TEST(DeviceEvent, SaysWhatChangesAndNoMore) {
  device_view v;
  v.node = "gpu-07";
  v.info.index = 2;
  v.info.name = "some GPU";
  v.state = device_state::busy;
  v.current_job = 41;
  v.worker_pid = 1234;
  v.worker_restarts = 3;
  v.points_measured = 99;
  json e = device_event(v);
  EXPECT_EQ(e, (json{{"node", "gpu-07"},
                     {"index", 2},
                     {"state", "busy"},
                     {"current_job", 41},
                     {"worker_pid", 1234},
                     {"worker_restarts", 3},
                     {"last_error", nullptr},
                     {"measured_at", nullptr}}))
      << e.dump();
  v.points_measured = 100;
  EXPECT_EQ(device_event(v), e) << "a point measured is no change";

  v.info.measured = measured_roofline{};
  v.info.measured->measured_ms = 1'700'000'000'123;
  v.last_error = std::string(3000, 'x') + "\xff";
  e = device_event(v);
  EXPECT_EQ(e["measured_at"], "2023-11-14T22:13:20.123Z");
  ASSERT_TRUE(e["last_error"].is_string());
  EXPECT_EQ(e["last_error"].get<std::string>(), std::string(k_device_event_error_bytes, 'x'));
  v.last_error = "bad \xff byte";
  EXPECT_EQ(device_event(v)["last_error"], "bad ? byte");
  EXPECT_NO_THROW((void)device_event(v).dump());
}

TEST(WorkerProtocol, ResultLineRoundTrips) {
  const auto r = ok_result();
  const std::string line = without_newline(wp::result_line(12, 3.14159, r));
  const auto m = wp::parse_worker_line(line);
  EXPECT_EQ(m.type, wp::worker_message::kind::result);
  EXPECT_EQ(m.seq, 12u);
  EXPECT_DOUBLE_EQ(m.wall_ms, 3.142);
  EXPECT_EQ(m.result, to_json(r));
  EXPECT_EQ(m.result_text, to_json(r).dump());

  const auto failed = failed_point(8, {{"N", 2}}, "device_fault", "crashed: {}\"}");
  const auto f = wp::parse_worker_line(without_newline(wp::result_line(99, 0, failed)));
  EXPECT_EQ(f.seq, 99u);
  EXPECT_EQ(f.result, to_json(failed));
  EXPECT_EQ(f.result_text, to_json(failed).dump());
}

TEST(WorkerProtocol, ReadyAndFailureLinesRoundTrip) {
  const auto ready = wp::parse_worker_line(without_newline(wp::ready_line(sample_device(true))));
  EXPECT_EQ(ready.type, wp::worker_message::kind::ready);
  expect_same_device(ready.device, sample_device(true));

  const auto failure =
      wp::parse_worker_line(without_newline(wp::failure_line(5, "timeout", "took \"long\"")));
  EXPECT_EQ(failure.type, wp::worker_message::kind::failure);
  EXPECT_EQ(failure.seq, 5u);
  EXPECT_EQ(failure.error_type, "timeout");
  EXPECT_EQ(failure.error_message, "took \"long\"");
  EXPECT_FALSE(failure.exiting);
  const auto last = wp::parse_worker_line(
      without_newline(wp::failure_line(6, "compile_error", "stopped", /*exiting=*/true)));
  EXPECT_TRUE(last.exiting);
  EXPECT_EQ(last.seq, 6u);
}

TEST(FaultPhase, TheInnermostStepIsCurrentAndTheOuterComesBack) {
  EXPECT_EQ(fault_phase::current(), nullptr);
  {
    const fault_phase outer("compiling the kernel");
    EXPECT_STREQ(fault_phase::current(), "compiling the kernel");
    {
      std::optional<fault_phase> inner(std::in_place, "verification");
      EXPECT_STREQ(fault_phase::current(), "verification");
      inner.emplace("the timed launches");
      EXPECT_STREQ(fault_phase::current(), "the timed launches");
    }
    EXPECT_STREQ(fault_phase::current(), "compiling the kernel");
  }
  EXPECT_EQ(fault_phase::current(), nullptr);
}

TEST(FaultPhase, ThePageHoldsTheOpenPhaseAndIsReadBoundedAndClean) {
  fault_phase_page page{};
  const fault_phase outer("compiling the kernel");
  fault_phase::publish_to(&page);  // what is open already is written at once
  EXPECT_EQ(fault_phase::read(page), "compiling the kernel");
  {
    const fault_phase inner("the kernel's timed launches");
    EXPECT_EQ(fault_phase::read(page), "the kernel's timed launches");
  }
  EXPECT_EQ(fault_phase::read(page), "compiling the kernel");
  {
    // Samples counted in a phase are read with it; the next phase counts again.
    const fault_phase timed("the timed launches and their checks");
    fault_phase::count_sample();
    EXPECT_EQ(fault_phase::read(page),
              "the timed launches and their checks (after 1 timed sample)");
    for (int i = 0; i < 36; ++i)
      fault_phase::count_sample();
    EXPECT_EQ(fault_phase::read(page),
              "the timed launches and their checks (after 37 timed samples)");
  }
  EXPECT_EQ(fault_phase::read(page), "compiling the kernel");
  fault_phase::publish_to(nullptr);
  fault_phase::count_sample();                                 // nowhere to count
  EXPECT_EQ(fault_phase::read(page), "compiling the kernel");  // no longer written

  // Written by a process that runs untrusted code: a size past the text and bytes that are not
  // printable are not believed.
  page.size.store(1u << 30);
  std::memset(page.text, 'x', sizeof page.text);
  page.text[3] = '\n';
  page.text[4] = static_cast<char>(0xff);
  const std::string read = fault_phase::read(page);
  EXPECT_EQ(read.size(), fault_phase_page::k_text_bytes);
  EXPECT_EQ(read.substr(0, 6), "xxx??x");
  page.size.store(0);  // a write the process died inside
  page.samples.store(5);
  EXPECT_EQ(fault_phase::read(page), "");  // no phase, no count
}

TEST(WorkerProtocol, ParseWorkerLineRejectsGarbage) {
  for (const char* bad : {"", "garbage", "{", "[1,2]", "{}", R"({"type":"hello"})",
                          R"({"type":"result","result":{"index":1,"status":"ok"}})",
                          R"({"type":"result","seq":1,"result":{"index":1}})",
                          R"({"type":"result","seq":1,"result":[1]})",
                          R"({"type":"failure","seq":1,"error":{"type":"x"}})",
                          R"({"type":"ready","device":{"index":0}})", R"({"type":7})"}) {
    EXPECT_THROW((void)wp::parse_worker_line(bad), wp::protocol_error) << bad;
  }
}

TEST(WorkerProtocol, DaemonLinesRoundTrip) {
  const auto job = wp::parse_daemon_line(wp::job_line(7, R"({"name":"x","sweep":{"M":[1,2]}})"));
  EXPECT_EQ(job.type, wp::daemon_message::kind::job);
  EXPECT_EQ(job.job, 7);
  EXPECT_EQ(job.spec, json::parse(R"({"name":"x","sweep":{"M":[1,2]}})"));

  const auto measure = wp::parse_daemon_line(without_newline(wp::measure_line(12, 7, 3)));
  EXPECT_EQ(measure.type, wp::daemon_message::kind::measure);
  EXPECT_EQ(measure.seq, 12u);
  EXPECT_EQ(measure.job, 7);
  EXPECT_EQ(measure.index, 3u);

  for (const char* bad : {"", "nope", R"({"type":"measure","job":1})", R"({"type":"stop","job":1})",
                          R"({"type":"job","spec":{}})"}) {
    EXPECT_THROW((void)wp::parse_daemon_line(bad), wp::protocol_error) << bad;
  }
}

// --- json --------------------------------------------------------------------------------------

std::string nested_arrays(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string nested_objects(int depth) {
  std::string out;
  for (int i = 0; i < depth; ++i)
    out += R"({"a":)";
  out += "1";
  for (int i = 0; i < depth; ++i)
    out += "}";
  return out;
}

TEST(Json, ASyntaxErrorMessageIsUtf8EvenWhenTheInputIsNot) {
  // nlohmann quotes the byte it stopped at, here half of "é"; the message must still be
  // writable as JSON (it was a 500: the error answer itself failed to serialise).
  try {
    (void)parse_json("{\"a\": \xC3\xA9}");
    FAIL() << "accepted";
  } catch (const json_syntax_error& e) {
    EXPECT_NO_THROW((void)json(e.what()).dump()) << e.what();
    EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos);
  }
}

TEST(Json, ParseJsonLimitsNesting) {
  EXPECT_NO_THROW((void)parse_json(nested_arrays(k_max_json_depth)));
  EXPECT_NO_THROW((void)parse_json(nested_objects(k_max_json_depth)));
  try {
    (void)parse_json(nested_arrays(k_max_json_depth + 1));
    FAIL() << "accepted";
  } catch (const json_syntax_error& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 64"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse_json(nested_objects(k_max_json_depth + 1)), json_syntax_error);
  // Far deeper input fails the same way instead of exhausting the stack.
  EXPECT_THROW((void)parse_json(nested_arrays(100000)), json_syntax_error);
  // Wide is fine.
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i)
    wide += (i ? ",[1]" : "[1]");
  EXPECT_EQ(parse_json(wide + "]").size(), 1000u);
}

TEST(Json, ParseJsonRejectsMalformedInput) {
  for (const char* bad : {"", "{", R"({"a":})", "[1,]", "{'a':1}", "nul", R"({"a":1} x)"}) {
    try {
      (void)parse_json(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const json_syntax_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("malformed JSON: ", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find("[json.exception"), std::string::npos) << e.what();
    }
  }
  const json ok = parse_json(R"({"b": 1, "a": [true, null]})");
  EXPECT_EQ(ok.begin().key(), "b");  // insertion order kept
  EXPECT_EQ(ok["a"][0], true);
}

TEST(Json, ParseJsonKeepsEveryValueAsItWasWritten) {
  const json j =
      parse_json(R"({"z": {"u": 18446744073709551615, "i": -9223372036854775808, "f": 1.5e300},)"
                 R"( "s": "\u00e9\n", "e": {}, "a": [[], [1, {"k": false}]], "n": null, "": 0})");
  const json expected =
      json::parse(R"({"z": {"u": 18446744073709551615, "i": -9223372036854775808, "f": 1.5e300},)"
                  R"( "s": "\u00e9\n", "e": {}, "a": [[], [1, {"k": false}]], "n": null, "": 0})");
  EXPECT_EQ(j, expected);
  EXPECT_EQ(j.dump(), expected.dump());  // the same order, and the same number types
  EXPECT_TRUE(j["z"]["u"].is_number_unsigned());
  EXPECT_TRUE(j["z"]["i"].is_number_integer());
  EXPECT_TRUE(j["z"]["f"].is_number_float());
  EXPECT_EQ(parse_json("7"), json(7));
  EXPECT_EQ(parse_json("\"x\""), json("x"));
}

// A key that comes twice would have the last one win, silently: refused, naming where.
TEST(Json, ParseJsonRefusesAKeyThatComesTwice) {
  const auto message = [](const std::string& text) -> std::string {
    try {
      (void)parse_json(text);
      return "accepted";
    } catch (const json_syntax_error& e) {
      return e.what();
    }
  };
  EXPECT_EQ(message(R"({"kernel": {"op": "gemm", "m": 8, "m": 16}})"),
            R"(malformed JSON: key "m" appears twice in the object at kernel)");
  EXPECT_EQ(message(R"({"a": [0, {"b": 1, "b": 2}]})"),
            R"(malformed JSON: key "b" appears twice in the object at a[1])");
  EXPECT_EQ(message(R"({"a": 1, "a": 1})"),
            R"(malformed JSON: key "a" appears twice in the object)");
  // The same key in two objects is no duplicate.
  EXPECT_EQ(parse_json(R"([{"a": 1}, {"a": 2}, {"b": {"a": 3}}])").size(), 3u);
}

TEST(Json, ParseJsonSaysWhereANumberOverflows) {
  try {
    (void)parse_json(R"({"kernel": {"args": [{"value": 1}, {"value": 1e309}]}})");
    FAIL() << "accepted";
  } catch (const json_syntax_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("1e309"), std::string::npos) << what;
    EXPECT_NE(what.find(" at kernel.args[1].value"), std::string::npos) << what;
  }
}

// An object of many keys is read in time linear in them (the ordered map's own insertion
// searched every key before it); the order stays the one written.
TEST(Json, ParseJsonReadsAnObjectOfManyKeys) {
  std::string text = "{";
  for (int i = 0; i < 200000; ++i)
    text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  const json j = parse_json(text + "}");
  ASSERT_EQ(j.size(), 200000u);
  EXPECT_EQ(j.begin().key(), "k0");
  EXPECT_EQ(j.back(), 199999);
  EXPECT_EQ(j.at("k123456"), 123456);
}

// An answer lists a hundred problems at most, then how many more; paths and messages are cut
// short past a few kilobytes (a body of unknown keys of a megabyte each came back twice).
TEST(ValidationError, ListsAHundredProblemsAtMostAndCutsLongOnesShort) {
  std::vector<field_error> many;
  for (int i = 0; i < 250; ++i)
    many.push_back({"k" + std::to_string(i), "is not a field of a job"});
  const validation_error e(many);
  ASSERT_EQ(e.errors().size(), 101u);
  EXPECT_EQ(e.errors()[99].field, "k99");
  EXPECT_EQ(e.errors()[100].field, "");
  EXPECT_EQ(e.errors()[100].message, "and 150 more problems, not listed");
  EXPECT_EQ(std::string(e.what()), "k0: is not a field of a job (and 249 more problems)");

  const validation_error long_one({{std::string(1 << 20, 'x'), std::string(1 << 20, 'y')}});
  ASSERT_EQ(long_one.errors().size(), 1u);
  EXPECT_LT(long_one.errors()[0].field.size(), 300u);
  EXPECT_LT(long_one.errors()[0].message.size(), 2100u);
  EXPECT_LT(std::string(long_one.what()).size(), 2400u);
  EXPECT_NO_THROW((void)json(long_one.errors()[0].field).dump());
}

}  // namespace
}  // namespace kernelscan
