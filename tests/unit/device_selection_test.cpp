#include "server/device_selection.hpp"

#include <gtest/gtest.h>

#include "api/json.hpp"
#include "engine/opencl/opencl_errors.hpp"

namespace kernelscan {
namespace {

device_info device(engine_kind e, std::string type, std::string vendor, std::string pci) {
  device_info d;
  d.engine = e;
  d.type = std::move(type);
  d.vendor = std::move(vendor);
  d.pci_bus_id = std::move(pci);
  d.name = d.vendor + " " + d.type + " " + d.pci_bus_id;
  return d;
}

std::vector<std::string> names(const std::vector<device_info>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds)
    out.push_back(std::string(to_string(d.engine)) + ":" + d.name);
  return out;
}

const std::vector<device_info> k_machine = {
    device(engine_kind::hip, "gpu", "NVIDIA", "0000:41:00.0"),
    // The same GPU through NVIDIA's OpenCL driver (NVML's spelling of the address).
    device(engine_kind::opencl, "gpu", "NVIDIA", "00000000:41:00.0"),
    // Another NVIDIA GPU that only OpenCL sees.
    device(engine_kind::opencl, "gpu", "NVIDIA", "0000:81:00.0"),
    device(engine_kind::opencl, "cpu", "AMD", ""),
};

TEST(DeviceSelection, AutoTakesGpusOnceAndNoCpu) {
  EXPECT_EQ(
      names(select_devices("auto", k_machine)),
      (std::vector<std::string>{"hip:NVIDIA gpu 0000:41:00.0", "opencl:NVIDIA gpu 0000:81:00.0"}));
}

TEST(DeviceSelection, AllAddsTheCpuAndStillOwnsEachGpuOnce) {
  EXPECT_EQ(names(select_devices("all", k_machine)),
            (std::vector<std::string>{"hip:NVIDIA gpu 0000:41:00.0",
                                      "opencl:NVIDIA gpu 0000:81:00.0", "opencl:AMD cpu "}));
}

TEST(DeviceSelection, EachEngineAlone) {
  EXPECT_EQ(select_devices("hip", k_machine).size(), 1u);
  EXPECT_EQ(select_devices("opencl", k_machine).size(), 3u);  // every OpenCL device
  EXPECT_TRUE(select_devices("mock", k_machine).empty());
}

TEST(DeviceSelection, AnOpenClGpuWithoutAnAddressIsNeverOwnedTwice) {
  const std::vector<device_info> machine = {
      device(engine_kind::hip, "gpu", "AMD", "0000:03:00.0"),
      device(engine_kind::opencl, "gpu", "AMD", ""),    // cannot tell which: left to HIP
      device(engine_kind::opencl, "gpu", "Intel", ""),  // another vendor: its own GPU
  };
  EXPECT_EQ(names(select_devices("auto", machine)),
            (std::vector<std::string>{"hip:AMD gpu 0000:03:00.0", "opencl:Intel gpu "}));
}

TEST(OpenClErrors, TheSameStatusMeansWhatItsCallMeans) {
  using opencl::cl_phase;
  using opencl::classify_cl_status;
  constexpr int out_of_resources = -5;
  EXPECT_EQ(classify_cl_status(out_of_resources, cl_phase::enqueue), fault_kind::invalid_launch);
  EXPECT_EQ(classify_cl_status(out_of_resources, cl_phase::wait), fault_kind::device_lost);
  EXPECT_EQ(classify_cl_status(out_of_resources, cl_phase::allocate), fault_kind::out_of_memory);
  EXPECT_EQ(classify_cl_status(-4, cl_phase::wait), fault_kind::out_of_memory);
  EXPECT_EQ(classify_cl_status(-54, cl_phase::enqueue), fault_kind::invalid_launch);
  EXPECT_EQ(classify_cl_status(-36, cl_phase::enqueue), fault_kind::device_lost);
  EXPECT_EQ(classify_cl_status(-14, cl_phase::other), fault_kind::device_lost);
  EXPECT_EQ(classify_cl_status(-30, cl_phase::other), fault_kind::internal);
  EXPECT_EQ(opencl::cl_status_name(-5), "CL_OUT_OF_RESOURCES (-5)");
  EXPECT_EQ(opencl::cl_status_name(-9999), "OpenCL status -9999");
}

TEST(OpenClErrors, ABuildLogNamesTheSourceKernelClAndHintsAtTheOption) {
  const std::string pocl =
      "error: /root/.cache/pocl/kcache/tempfile_4MeQgo.cl:1:14: program scope variable must "
      "reside in constant address space\nDevice cpu failed to build the program";
  const std::string out = opencl::readable_build_log(pocl);
  EXPECT_EQ(out.rfind("error: kernel.cl:1:14: program scope variable", 0), 0u) << out;
  EXPECT_EQ(out.find("/root"), std::string::npos) << out;
  EXPECT_NE(out.find("add \"-cl-std=CL2.0\" to compile_options"), std::string::npos) << out;
  EXPECT_EQ(opencl::readable_build_log("/tmp/comgr-1a2b/input/CompileSource:3:5: error: x"),
            "kernel.cl:3:5: error: x");
  // Half arithmetic on a device without cl_khr_fp16, as PoCL on x86 says it.
  const std::string half = opencl::readable_build_log(
      "error: kernel.cl:3:21: declaring variable of type '__private half' is not allowed\n"
      "error: kernel.cl:3:48: casting to type 'half' is not allowed");
  EXPECT_NE(half.find("\nhint: this device has no cl_khr_fp16 (see its capabilities), so half is "
                      "a storage type only: read and write f16 buffers with vload_half/"
                      "vstore_half"),
            std::string::npos)
      << half;
  EXPECT_EQ(half.find("hint", half.find("hint") + 1), std::string::npos) << "one hint: " << half;
  const std::string wide = opencl::readable_build_log(
      "error: kernel.cl:2:5: use of type 'double' requires cl_khr_fp64 support");
  EXPECT_NE(wide.find("hint: this device has no cl_khr_fp64"), std::string::npos) << wide;
  // Other paths (a driver's own header in a note) are left as they are.
  const std::string note = "note: /usr/lib/pocl/include/_kernel.h:12:3: declared here";
  EXPECT_EQ(opencl::readable_build_log(note), note);
}

TEST(OpenClErrors, AHugeBuildLogIsRewrittenInOnePassAndCut) {
  // An #error directive's line of 1,000,000 path characters: a recursive matcher overflows the
  // stack on it.
  const std::string line = "error: kernel.cl:2:2: /" + std::string(1000000, 'a') + "\n";
  const std::string out = opencl::readable_build_log(line + line);
  EXPECT_LE(out.size(), k_compile_log_bytes + 200);
  EXPECT_EQ(out.rfind("error: kernel.cl:2:2: /aaaa", 0), 0u);
  EXPECT_NE(out.find("\n... (the log goes on for 1983664 bytes more; its first 16384 are shown)"),
            std::string::npos)
      << out.substr(out.size() - 200);
  // The temporary file is named kernel.cl wherever it is, its directory with it.
  EXPECT_EQ(opencl::readable_build_log("x /a/b /c/d/tempfile_x1.cl:1:2: y tempfile_z.cl: "
                                       "'/q/tempfile_w.cl' CompileSourceX /r/CompileSource:"),
            "x /a/b kernel.cl:1:2: y kernel.cl: 'kernel.cl' CompileSourceX kernel.cl:");
  // The half hint needs the whole word.
  EXPECT_EQ(opencl::readable_build_log("error: type 'mhalf' is not allowed").find("hint"),
            std::string::npos);
  EXPECT_NE(opencl::readable_build_log("error: type 'half4' is not allowed").find("hint"),
            std::string::npos);
}

TEST(CompileLogs, ALongLogKeepsItsFirstLinesAndSaysHowMuchIsCut) {
  std::string log;
  for (int i = 0; log.size() < 2 * 1024 * 1024; ++i)
    log += "error: kernel.cl:" + std::to_string(i) + ":1: use of undeclared identifier 'u'\n";
  const std::string out = bounded_compile_log(log);
  EXPECT_LT(out.size(), k_compile_log_bytes + 100);
  EXPECT_EQ(out.rfind("error: kernel.cl:0:1: use of undeclared identifier 'u'\n", 0), 0u);
  const auto last = out.rfind('\n');
  const std::string kept = out.substr(0, last);
  EXPECT_EQ(kept.back(), '\'') << "cut at a line's end: " << kept.substr(kept.size() - 80);
  EXPECT_EQ(out.substr(last + 1), "... (the log goes on for " + std::to_string(log.size() - last) +
                                      " bytes more; its first " + std::to_string(last) +
                                      " are shown)");
  EXPECT_EQ(bounded_compile_log("short"), "short");
}

TEST(CompileLogs, BytesThatAreNotUtf8AreWrittenAsClangWritesThem) {
  EXPECT_EQ(bounded_compile_log("caf\xc3\xa9 \xff\xfe x \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 <FF><FE> x <E2><82> <ED><A0><80> \xf0\x9f\x98\x80");
  // A result carrying it serialises: the worker's JSON encoder throws on invalid UTF-8.
  EXPECT_NO_THROW((void)json(bounded_compile_log("\x80\xc0\xaf")).dump());
}

TEST(OpenClErrors, VendorsAreNamedAsHipNamesThem) {
  EXPECT_EQ(opencl::normalise_vendor("NVIDIA Corporation"), "NVIDIA");
  EXPECT_EQ(opencl::normalise_vendor("Advanced Micro Devices, Inc."), "AMD");
  EXPECT_EQ(opencl::normalise_vendor("AuthenticAMD"), "AMD");
  EXPECT_EQ(opencl::normalise_vendor("Intel(R) Corporation"), "Intel");
  EXPECT_EQ(opencl::normalise_vendor("Imagination Technologies"), "Imagination Technologies");
}

}  // namespace
}  // namespace kernelscan
