// Imports of results measured elsewhere: the CSV reader, each format's reader on real-looking
// files (quoted kernel names with commas, CRLF line ends, tool chatter before a table) and on
// each kind of bad input, the request envelope, the analysis of imported points and their rows.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/detail/csv_reader.hpp"
#include "api/import_codec.hpp"
#include "api/result_codec.hpp"
#include "tests/support/import_samples.hpp"

namespace kernelscan {
namespace {

using detail::csv_error;
using detail::csv_reader;
using testing::k_longer_trace;
using testing::k_nsys;
using testing::k_trace;
using testing::seed_results;

// The field errors of a validation_error thrown by `f`, as "field: message" lines.
template <class F>
std::vector<std::string> errors_of(F&& f) {
  try {
    f();
  } catch (const validation_error& e) {
    std::vector<std::string> out;
    for (const auto& fe : e.errors())
      out.push_back(fe.field + ": " + fe.message);
    return out;
  }
  ADD_FAILURE() << "no validation_error";
  return {};
}

// True if some error line contains every one of `parts`.
bool has_error(const std::vector<std::string>& errors, std::initializer_list<std::string> parts) {
  for (const auto& e : errors) {
    bool all = true;
    for (const auto& p : parts)
      all = all && e.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

std::string dump(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors)
    out += e + "\n";
  return out;
}

// --- the CSV reader ----------------------------------------------------------------------------

TEST(CsvReader, QuotedCommasQuotesAndLineBreaks) {
  csv_reader in(
      "\xEF\xBB\xBF"
      "a,\"b, c\",\"say \"\"hi\"\"\"\r\n1,\"two\nlines\",3\r\n\nlast");
  auto r = in.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->line, 1u);
  EXPECT_EQ(r->fields, (std::vector<std::string>{"a", "b, c", "say \"hi\""}));
  r = in.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->line, 2u);
  EXPECT_EQ(r->fields, (std::vector<std::string>{"1", "two\nlines", "3"}));
  r = in.next();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->blank());
  EXPECT_EQ(r->line, 4u);  // the quoted line break counted
  r = in.next();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->fields, (std::vector<std::string>{"last"}));
  EXPECT_FALSE(in.next());
}

TEST(CsvReader, LoneCarriageReturnsEmptyFieldsAndAQuotedEmptyField) {
  csv_reader in("a,,\rb,\"\"");
  EXPECT_EQ(in.next()->fields, (std::vector<std::string>{"a", "", ""}));
  const auto r = in.next();
  EXPECT_EQ(r->line, 2u);
  EXPECT_EQ(r->fields, (std::vector<std::string>{"b", ""}));
  EXPECT_FALSE(csv_reader("\"\"").next()->blank());  // a quoted empty field is not a blank line
}

TEST(CsvReader, BrokenQuotingNamesTheLine) {
  csv_reader open("x\ny,\"never closed\nz\n");
  (void)open.next();
  try {
    (void)open.next();
    FAIL();
  } catch (const csv_error& e) {
    EXPECT_EQ(e.line(), 2u);
    EXPECT_NE(std::string(e.what()).find("not closed"), std::string::npos) << e.what();
  }
  csv_reader after("\"a\"b,c\n");
  EXPECT_THROW((void)after.next(), csv_error);
}

// --- rocm_profiler -----------------------------------------------------------------------------

TEST(ImportRocmProfiler, ComponentsThenTheFullPipeline) {
  const auto ks = read_rocm_profiler(seed_results());
  ASSERT_EQ(ks.size(), 4u);
  EXPECT_EQ(ks[0].name, "hip_topk");
  EXPECT_EQ(ks[0].type, "HIP");
  EXPECT_DOUBLE_EQ(*ks[0].stats.mean, 9.87);
  EXPECT_DOUBLE_EQ(*ks[0].stats.median, 9.8);
  EXPECT_DOUBLE_EQ(*ks[0].stats.stddev, 0.41);
  EXPECT_DOUBLE_EQ(*ks[0].stats.p99, 11.93);
  EXPECT_FALSE(ks[0].stats.p5);  // the seed writes no p5
  EXPECT_FALSE(ks[0].stats.ci95_low);
  EXPECT_FALSE(ks[0].calls);
  EXPECT_DOUBLE_EQ(*ks[0].flops, 2048);
  EXPECT_DOUBLE_EQ(*ks[0].bytes, 2816);
  EXPECT_DOUBLE_EQ(*ks[1].flops, 0);  // pure data movement: a known zero
  EXPECT_EQ(ks[3].name, "full_pipeline");
  EXPECT_EQ(ks[3].type, "pipeline");
  EXPECT_FALSE(ks[3].flops);
  EXPECT_DOUBLE_EQ(*ks[3].stats.median, 30.9);
}

TEST(ImportRocmProfiler, AListOfNamedComponentsAndAliases) {
  const auto ks = read_rocm_profiler(json::parse(R"({"components": [
      {"name": "a", "median_us": 3, "stddev_us": 0.5, "count": 200, "flops": 10, "bytes": 20}]})"));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(*ks[0].stats.median, 3);
  EXPECT_DOUBLE_EQ(*ks[0].stats.stddev, 0.5);
  EXPECT_EQ(*ks[0].calls, 200u);
  EXPECT_DOUBLE_EQ(*ks[0].flops, 10);
}

TEST(ImportRocmProfiler, BadInputNamesTheField) {
  EXPECT_TRUE(has_error(errors_of([] { read_rocm_profiler(json::array()); }),
                        {"data: ", "results object"}));
  EXPECT_TRUE(has_error(errors_of([] { read_rocm_profiler(json::parse(R"({"config": {}})")); }),
                        {"data.components: ", "required"}));
  EXPECT_TRUE(has_error(errors_of([] { read_rocm_profiler(json::parse(R"({"components": {}})")); }),
                        {"data.components: ", "no components"}));

  json j = seed_results();
  j["components"]["hip_topk"].erase("p50_us");
  j["components"]["triton_append"]["mean_us"] = "fast";
  j["components"]["ck_sorting"]["min_us"] = 30;  // above its max
  j["full_pipeline"]["p95_us"] = -1;
  j["components"]["extra"] = 7;
  const auto errors = errors_of([&] { read_rocm_profiler(j); });
  EXPECT_TRUE(has_error(errors, {"data.components.hip_topk.p50_us: ", "required"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"data.components.triton_append.mean_us: ", "a number"}))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, {"data.components.ck_sorting: ", "min", "above max"}))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, {"data.full_pipeline.p95_us: ", "from 0"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"data.components.extra: ", "an object"})) << dump(errors);

  EXPECT_TRUE(has_error(
      errors_of([] { read_rocm_profiler(json::parse(R"({"components": [{"p50_us": 1}]})")); }),
      {"data.components[0].name: ", "required"}));
}

// --- rocprofv3_kernel_trace --------------------------------------------------------------------

TEST(ImportRocprofv3, AggregatesDispatchesPerKernelNameHottestFirst) {
  const auto ks = read_rocprofv3_kernel_trace(k_trace);
  ASSERT_EQ(ks.size(), 2u);
  const auto& gemm = ks[0];
  EXPECT_EQ(gemm.name, "void gemm<float, 64>(float const*, float const*, float*, int, int, int)");
  EXPECT_EQ(*gemm.calls, 3u);
  EXPECT_DOUBLE_EQ(*gemm.stats.median, 13.0);
  EXPECT_DOUBLE_EQ(*gemm.stats.min, 12.0);
  EXPECT_DOUBLE_EQ(*gemm.stats.max, 14.0);
  EXPECT_DOUBLE_EQ(*gemm.stats.mean, 13.0);
  EXPECT_DOUBLE_EQ(*gemm.stats.stddev, 1.0);
  EXPECT_DOUBLE_EQ(*gemm.total_us, 39.0);
  // Every call's time is known, but three calls are too few for a 95% interval of the median.
  EXPECT_TRUE(gemm.stats.p5);
  EXPECT_FALSE(gemm.stats.ci95_low || gemm.stats.ci95_high || gemm.stats.rel_noise);
  EXPECT_DOUBLE_EQ(*gemm.time_pct, 100.0 * 39 / 43);
  EXPECT_EQ(ks[1].name, "__amd_rocclr_fillBufferAligned");
  EXPECT_DOUBLE_EQ(*ks[1].stats.median, 4.0);

  // Seven calls have one (order statistics: their range).
  const auto longer = read_rocprofv3_kernel_trace(k_longer_trace());
  ASSERT_EQ(*longer[0].calls, 7u);
  ASSERT_TRUE(longer[0].stats.ci95_low && longer[0].stats.ci95_high && longer[0].stats.rel_noise);
  EXPECT_DOUBLE_EQ(*longer[0].stats.ci95_low, 12.0);
  EXPECT_DOUBLE_EQ(*longer[0].stats.ci95_high, 14.0);
}

TEST(ImportRocprofv3, OlderColumnsLfLineEndsAndOtherKindsSkipped) {
  const auto ks = read_rocprofv3_kernel_trace(
      "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\","
      "\"Start_Timestamp\",\"End_Timestamp\"\n"
      "\"KERNEL_DISPATCH\",1,139690710949888,15,\"matrixTranspose(float*, float*, int)\",0,"
      "671599758568,671599825328\n"
      "\"MEMORY_COPY\",1,1,0,\"copy\",1,1,2\n\n");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(*ks[0].stats.median, 66.76);
  // rocprof v1/v2 results.csv spellings.
  const auto old = read_rocprofv3_kernel_trace("KernelName,BeginNs,EndNs\nk,100,1100\n");
  EXPECT_DOUBLE_EQ(*old.at(0).stats.median, 1.0);
}

TEST(ImportRocprofv3, BadInputNamesLineAndColumn) {
  EXPECT_TRUE(
      has_error(errors_of([] { read_rocprofv3_kernel_trace(""); }), {"data: ", "is empty"}));
  EXPECT_TRUE(has_error(errors_of([] { read_rocprofv3_kernel_trace("\r\n\r\n"); }),
                        {"data: ", "is empty"}));
  auto errors =
      errors_of([] { read_rocprofv3_kernel_trace("Kind,Kernel_Name,Start_Timestamp\n"); });
  EXPECT_TRUE(has_error(errors, {"data: ", "line 1", "no End_Timestamp column",
                                 "it has: Kind, Kernel_Name, Start_Timestamp"}))
      << dump(errors);
  EXPECT_TRUE(has_error(
      errors_of([] { read_rocprofv3_kernel_trace("Kernel_Name,Start_Timestamp,End_Timestamp\n"); }),
      {"data: ", "no kernel dispatches"}));

  errors = errors_of([] {
    read_rocprofv3_kernel_trace(
        "Kernel_Name,Start_Timestamp,End_Timestamp\r\n"
        "\"a, b\",100,200\r\n"
        "\"a, b\",1.5e3,2000\r\n"
        "c,300,abc\r\n"
        "d,500,400\r\n"
        "e,1,2,3\r\n"
        ",1,2\r\n"
        "f,0,18446744073709551615\r\n");
  });
  EXPECT_TRUE(has_error(
      errors, {"data: ", "line 3, column Start_Timestamp", "\"1.5e3\"", "not a timestamp"}))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 4, column End_Timestamp", "\"abc\""})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 5, column End_Timestamp", "before the start"}))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 6", "4 fields; the header has 3"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 7, column Kernel_Name", "empty"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 8, column End_Timestamp", "not a kernel's time"}))
      << dump(errors);

  EXPECT_TRUE(has_error(errors_of([] {
                          read_rocprofv3_kernel_trace(
                              "Kernel_Name,Start_Timestamp,End_Timestamp\n\"open,1,2\n");
                        }),
                        {"data: ", "line 2", "not closed"}));
}

TEST(ImportRocprofv3, TextThatIsNotUtf8IsRefusedInWordsThatAre) {
  // Through HTTP the CSV arrives in a JSON string, so it is UTF-8; read directly (as the fuzz
  // target does) it need not be, and neither names nor messages may carry bad bytes into JSON.
  const auto errors = errors_of([] {
    read_rocprofv3_kernel_trace("Kernel_Name,Start_Timestamp,End_Timestamp\nk\xFF,1,2\nk,\xC3,2\n");
  });
  EXPECT_TRUE(has_error(errors, {"line 2, column Kernel_Name", "UTF-8"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 3, column Start_Timestamp", "\"?\""})) << dump(errors);
  for (const auto& e : errors)
    EXPECT_NO_THROW((void)json(e).dump()) << e;
  // A rocm_profiler document sent as a string that is not JSON: the parser's message quotes
  // half a character, and the error still reads as UTF-8.
  const auto bad = errors_of([] {
    parse_import({{"format", "rocm_profiler"}, {"data", "{\"components\": \xC3\xA9}"}}, {});
  });
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NO_THROW((void)json(bad[0]).dump()) << bad[0];
}

TEST(ImportRocprofv3, AHundredThousandBadLinesListTwentyProblems) {
  std::string text = "Kernel_Name,Start_Timestamp,End_Timestamp\n";
  for (int i = 0; i < 100000; ++i)
    text += "k,x,1\n";
  const auto errors = errors_of([&] { read_rocprofv3_kernel_trace(text); });
  EXPECT_EQ(errors.size(), 21u);
  EXPECT_EQ(errors.back(), "data: stopped after 20 problems; the lines after were not checked");
}

// --- nsys_cuda_gpu_kern_sum --------------------------------------------------------------------

TEST(ImportNsys, ReadsTheTableAfterToolChatterUntilTheNextReport) {
  const auto ks = read_nsys_cuda_gpu_kern_sum(k_nsys);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(*ks[0].calls, 4u);
  EXPECT_DOUBLE_EQ(*ks[0].stats.mean, 45.6);
  EXPECT_DOUBLE_EQ(*ks[0].stats.median, 45.5);
  EXPECT_DOUBLE_EQ(*ks[0].stats.min, 45.0);
  EXPECT_DOUBLE_EQ(*ks[0].stats.max, 46.4);
  EXPECT_DOUBLE_EQ(*ks[0].stats.stddev, 0.6);
  EXPECT_DOUBLE_EQ(*ks[0].total_us, 182.4);
  EXPECT_DOUBLE_EQ(*ks[0].time_pct, 91.2);
  // A summary has no percentiles or confidence interval; nothing is made up.
  EXPECT_FALSE(ks[0].stats.p95);
  EXPECT_FALSE(ks[0].stats.ci95_low);
  EXPECT_EQ(ks[1].name, "void reduce<float, 256>(float*, int)");
}

TEST(ImportNsys, UnquotedCrlfDigitGroupsAndOtherUnits) {
  const auto ks = read_nsys_cuda_gpu_kern_sum(
      "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name\r\n"
      "58.5,\"5,850\",50,117.0,116.0,100.0,130.0,4.0,\"void MultAlphaBeta<double>(double*, double "
      "const*)\"\r\n");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_DOUBLE_EQ(*ks[0].total_us, 5850);
  EXPECT_DOUBLE_EQ(*ks[0].stats.median, 116);
  EXPECT_EQ(ks[0].name, "void MultAlphaBeta<double>(double*, double const*)");
}

TEST(ImportNsys, BadInputNamesLineAndColumn) {
  EXPECT_TRUE(
      has_error(errors_of([] { read_nsys_cuda_gpu_kern_sum(" \n"); }), {"data: ", "is empty"}));
  EXPECT_TRUE(has_error(errors_of([] { read_nsys_cuda_gpu_kern_sum("no table\nat all\n"); }),
                        {"data: ", "no header line with Name and Instances"}));
  auto errors = errors_of([] {
    read_nsys_cuda_gpu_kern_sum("\"Time (%)\",\"Instances\",\"Avg (ns)\",\"Name\"\n1,2,3,k\n");
  });
  EXPECT_TRUE(has_error(errors, {"data: ", "line 1", "no Med (ns) column"})) << dump(errors);
  EXPECT_TRUE(has_error(
      errors_of([] { read_nsys_cuda_gpu_kern_sum("Instances,Med (parsecs),Name\n1,2,k\n"); }),
      {"column Med (parsecs)", "unknown time unit"}));
  EXPECT_TRUE(has_error(errors_of([] { read_nsys_cuda_gpu_kern_sum("Instances,Med,Name\n"); }),
                        {"header but no kernels"}));

  errors = errors_of([] {
    read_nsys_cuda_gpu_kern_sum(
        "x\r\n\"Time (%)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\","
        "\"Name\"\r\n"
        "50,4,n/a,10,5,20,k1\r\n"
        "50,0,10,10,5,20,k2\r\n"
        "50,4,10,10,30,20,k3\r\n"
        "50,4,10,10,5,20\r\n");
  });
  EXPECT_TRUE(has_error(errors, {"line 3, column \"Avg (ns)\"", "\"n/a\" is not a number"}) ||
              has_error(errors, {"line 3, column Avg (ns)", "\"n/a\" is not a number"}))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 4, column Instances", "\"0\""})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 5", "min", "above max"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"line 6", "6 fields; the header has 7"})) << dump(errors);
}

// A median of 0 is no time (every rate over it infinite), and a kernel name with a control
// character (a NUL, a line break) would break the CSV export: both refused, in every format.
TEST(ImportNsys, AZeroMedianAndControlCharactersInANameAreRefused) {
  const auto errors = errors_of([] {
    read_nsys_cuda_gpu_kern_sum(std::string("Instances,Med (ns),Name\n4,0,k1\n4,10,\"k\n2\"\n") +
                                "4,10,k" + std::string(1, '\0') + "3\n");
  });
  EXPECT_TRUE(has_error(errors, {"line 2", "median 0", "more than 0"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"control characters"})) << dump(errors);
  EXPECT_EQ(errors.size(), 3u) << dump(errors);
  json j = seed_results();
  j["components"]["hip_topk"]["p50_us"] = 0;
  EXPECT_TRUE(has_error(errors_of([&] { read_rocm_profiler(j); }),
                        {"data.components.hip_topk: ", "median 0"}));
}

// --- the request -------------------------------------------------------------------------------

TEST(ImportRequest, RocmProfilerTakesDeviceAndDtypeFromItsConfig) {
  const auto req = parse_import(
      {{"format", "rocm_profiler"}, {"labels", {{"team", "moe"}}}, {"data", seed_results()}}, {});
  EXPECT_EQ(req.name, "rocm_profiler import");
  EXPECT_EQ(req.labels.at("team"), "moe");
  ASSERT_NE(req.target.model, nullptr);
  EXPECT_EQ(req.target.model->key, "MI300X");
  EXPECT_EQ(req.device_from, "config.gpu");
  EXPECT_EQ(req.target.roof_type, dtype::bf16);
  EXPECT_EQ(req.dtype_from, "config.dtype");
  EXPECT_EQ(req.config["num_experts"], 256);
  ASSERT_EQ(req.kernels.size(), 4u);

  const json spec = import_spec_json(req);
  EXPECT_EQ(spec["import"]["format"], "rocm_profiler");
  EXPECT_EQ(spec["import"]["device"]["model"], "MI300X");
  EXPECT_EQ(spec["import"]["device"]["datasheet"]["bf16_tflops"], 1307.4);
  EXPECT_EQ(spec["import"]["dtype"], "bf16");
  EXPECT_EQ(spec["import"]["kernels"], 4);
  EXPECT_EQ(spec["sweep"]["component"], json::parse("[0, 1, 2, 3]"));
}

TEST(ImportRequest, TheRequestWinsAndWorkFillsInFlopsAndBytes) {
  const auto req =
      parse_import({{"format", "nsys_cuda_gpu_kern_sum"},
                    {"name", "sgemm on H100"},
                    {"device", "h100"},
                    {"dtype", "f32"},
                    {"work", {{"ampere_sgemm_128x64_nn", {{"flops", 2e9}, {"bytes", 1.2e7}}}}},
                    {"data", k_nsys}},
                   {});
  EXPECT_EQ(req.target.model->key, "H100-SXM");
  EXPECT_EQ(req.target.device_name, "NVIDIA H100 SXM");
  EXPECT_EQ(req.dtype_from, "request");
  EXPECT_DOUBLE_EQ(*req.kernels[0].flops, 2e9);
  EXPECT_FALSE(req.kernels[1].flops);
  EXPECT_EQ(import_spec_json(req)["sweep"]["kernel"], json::parse("[0, 1]"));
  // A rocm_profiler results file sent as text works too.
  EXPECT_EQ(parse_import({{"format", "rocm_profiler"}, {"data", seed_results().dump()}}, {})
                .kernels.size(),
            4u);
}

TEST(ImportRequest, BadEnvelopesNameTheField) {
  auto errors = errors_of([] {
    parse_import({{"format", "perfetto"},
                  {"labels", {{"bad key!", "x"}}},
                  {"device", "Voodoo2"},
                  {"dtype", "f12"},
                  {"work", {{"k", {{"flops", -1}}}}},
                  {"colour", "red"}},
                 {});
  });
  EXPECT_TRUE(has_error(errors, {"format: ", "\"perfetto\" is not one of rocm_profiler"}))
      << dump(errors);
  EXPECT_TRUE(has_error(errors, {"labels.bad key!: "})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"device: ", "Voodoo2", "MI300X"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"dtype: ", "f12"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"work.k.flops: "})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"data: ", "required"})) << dump(errors);
  EXPECT_TRUE(has_error(errors, {"colour: ", "unknown field"})) << dump(errors);

  EXPECT_TRUE(has_error(errors_of([] { parse_import(json::array(), {}); }), {"must be an object"}));
  EXPECT_TRUE(has_error(errors_of([] {
                          parse_import({{"data", "x"}}, {});
                        }),
                        {"format: ", "required"}));
  EXPECT_TRUE(
      has_error(errors_of([] {
                  parse_import({{"format", "nsys_cuda_gpu_kern_sum"}, {"data", {{"a", 1}}}}, {});
                }),
                {"data: ", "CSV text as one string"}));
  EXPECT_TRUE(has_error(errors_of([] {
                          parse_import({{"format", "rocm_profiler"}, {"data", "{not json"}}, {});
                        }),
                        {"data: ", "not JSON"}));
  EXPECT_TRUE(has_error(errors_of([] {
                          parse_import({{"format", "nsys_cuda_gpu_kern_sum"},
                                        {"work", {{"no_such_kernel", {{"flops", 1}}}}},
                                        {"data", k_nsys}},
                                       {});
                        }),
                        {"work.no_such_kernel: ", "no kernel of this name"}));
  EXPECT_TRUE(
      has_error(errors_of([] {
                  parse_import({{"format", "rocprofv3_kernel_trace"}, {"data", k_trace}}, {1, 32});
                }),
                {"data: ", "2 kernels; the limit is 1"}));
}

// --- the analysis and the row -------------------------------------------------------------------

TEST(ImportedPoint, MetricsAgainstTheDatasheetAndHonestGaps) {
  const auto req = parse_import({{"format", "rocm_profiler"}, {"data", seed_results()}}, {});
  const auto topk =
      imported_point(req.kernels[0], 0, {{"component", 0}}, req.target, "rocm_profiler");
  ASSERT_TRUE(topk.metrics);
  EXPECT_DOUBLE_EQ(topk.metrics->tflops, 2048 / (9.8 * 1e6));
  EXPECT_DOUBLE_EQ(topk.metrics->gbps, 2816 / (9.8 * 1e3));
  EXPECT_EQ(topk.metrics->bound, "latency");  // a few kB: far below MI300X's launch latency
  const json row = to_json(topk);
  EXPECT_EQ(row["name"], "hip_topk");
  EXPECT_EQ(row["status"], "ok");
  EXPECT_DOUBLE_EQ(row["time_us"]["median"].get<double>(), 9.8);
  EXPECT_FALSE(row["time_us"].contains("ci95_low"));
  EXPECT_FALSE(row["time_us"].contains("p5"));
  EXPECT_TRUE(row["samples"].is_null());
  EXPECT_TRUE(row["converged"].is_null());
  EXPECT_TRUE(row["l2"].is_null());
  EXPECT_EQ(row["stop_reason"], "imported");
  EXPECT_EQ(row["metrics"]["roof_source"], "datasheet");
  EXPECT_EQ(row["environment"]["device"], "AMD Instinct MI300X");
  EXPECT_EQ(row["import"]["format"], "rocm_profiler");
  EXPECT_EQ(row["import"]["type"], "HIP");
  EXPECT_EQ(row["verification"]["status"], "skipped");

  // The full pipeline has no flops or bytes: no metrics, and the row says why.
  const json pipe =
      to_json(imported_point(req.kernels[3], 3, {{"component", 3}}, req.target, "rocm_profiler"));
  EXPECT_TRUE(pipe["metrics"].is_null());
  EXPECT_NE(pipe["import"]["notes"][0].get<std::string>().find("no metrics"), std::string::npos)
      << pipe.dump();

  // Without a device model: throughput yes, roof and bound no.
  import_target nowhere;
  const json bare = to_json(imported_point(req.kernels[0], 0, {{"component", 0}}, nowhere, "x"));
  EXPECT_TRUE(bare["metrics"].contains("tflops"));
  EXPECT_FALSE(bare["metrics"].contains("roof_pct"));
  EXPECT_FALSE(bare["metrics"].contains("bound"));
  EXPECT_TRUE(bare["environment"]["device"].is_null());
  EXPECT_NE(bare["import"]["notes"][0].get<std::string>().find("no roofline"), std::string::npos);

  // A trace's point has its calls and their statistics; three calls are too few for an interval
  // of the median, and its note says so.
  const auto trace = read_rocprofv3_kernel_trace(k_trace);
  const json t = to_json(imported_point(trace[0], 0, {{"kernel", 0}}, nowhere, "x"));
  EXPECT_EQ(t["samples"], 3);
  EXPECT_TRUE(t["time_us"].contains("p95"));
  EXPECT_FALSE(t["time_us"].contains("ci95_high"));
  EXPECT_DOUBLE_EQ(t["sampling_ms"].get<double>(), 0.039);
  EXPECT_TRUE(t["metrics"].is_null());
  ASSERT_EQ(t["import"]["notes"].size(), 2u) << t.dump();
  EXPECT_EQ(t["import"]["notes"][1],
            "no confidence interval: 3 calls are too few for a 95% interval of the median (it "
            "takes 6)");
  // Seven calls have their interval and no note about it.
  const auto longer = read_rocprofv3_kernel_trace(k_longer_trace());
  const json l = to_json(imported_point(longer[0], 0, {{"kernel", 0}}, nowhere, "x"));
  EXPECT_TRUE(l["time_us"].contains("ci95_high")) << l.dump();
  EXPECT_EQ(l["import"]["notes"].size(), 1u) << l.dump();

  // The CSV line carries the name in the name column, then simulated (false: measured) and no
  // kernel resources.
  const std::string line = csv_line(t, {"kernel"});
  EXPECT_EQ(line.rfind("0,0,ok,,13,", 0), 0u) << line;
  EXPECT_NE(line.find(",\"void gemm<float, 64>(float const*, float const*, float*, int, int, "
                      "int)\",false,,,,\r\n"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace kernelscan
