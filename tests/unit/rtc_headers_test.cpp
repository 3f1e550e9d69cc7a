// Where run-time compilation finds the headers kernels include, against installs laid out in a
// temp folder as CUDA toolkits, CUDA's Python wheels, ROCm and Debian lay them out.
#include "engine/hip/rtc_headers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

namespace kernelscan::gpu {
namespace {

namespace fs = std::filesystem;

class RtcHeaders : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    m_root = fs::temp_directory_path() / ("kernelscan-rtc-headers-" + std::to_string(rd()));
    fs::create_directories(m_root);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }

  // Creates `rel` (and its folders) under the temp root; returns its full path.
  std::string touch(const std::string& rel) {
    const fs::path p = m_root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "// " << rel << "\n";
    return p.string();
  }
  std::string at(const std::string& rel) const { return (m_root / rel).string(); }

  // A search that sees only `env` of the environment, and the given libraries and defaults.
  header_search search(std::map<std::string, std::string> env, std::vector<std::string> libraries,
                       std::vector<std::string> defaults) const {
    header_search s;
    s.env = [env](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    s.libraries = std::move(libraries);
    s.defaults = std::move(defaults);
    return s;
  }

  // A CUDA 13 toolkit: headers in include/, libcu++ in include/cccl/, libraries in lib64/.
  std::string toolkit(const std::string& rel) {
    touch(rel + "/include/cuda_fp16.h");
    touch(rel + "/include/cccl/cuda/std/type_traits");
    return touch(rel + "/lib64/libnvrtc.so.13");
  }

  fs::path m_root;
};

TEST_F(RtcHeaders, TheLoadedLibrarysHeadersWinThenCudaHomeThenTheDefaults) {
  const std::string lib = toolkit("cuda-13.0");
  toolkit("cuda-12.8");
  toolkit("default-cuda");
  const std::string bare = at("bare/lib/libnvrtc.so.13");  // an NVRTC without headers beside it
  const std::vector<std::string> cuda13{at("cuda-13.0/include"), at("cuda-13.0/include/cccl")};
  const std::vector<std::string> cuda12{at("cuda-12.8/include"), at("cuda-12.8/include/cccl")};

  // The headers of the toolkit whose NVRTC is loaded, whatever the environment says: headers of
  // another CUDA version need not compile with this NVRTC.
  auto found = find_cuda_headers(
      search({{"CUDA_HOME", at("cuda-12.8")}}, {lib}, {at("default-cuda/include")}));
  EXPECT_EQ(found.dirs, cuda13);
  EXPECT_EQ(found.from, "beside " + lib);

  // Nothing beside the library: $CUDA_HOME, then $CUDA_PATH.
  found = find_cuda_headers(search({{"CUDA_HOME", at("cuda-12.8")}}, {bare}, {}));
  EXPECT_EQ(found.dirs, cuda12);
  EXPECT_EQ(found.from, "$CUDA_HOME");
  found = find_cuda_headers(
      search({{"CUDA_PATH", at("cuda-13.0")}, {"CUDA_HOME", at("nowhere")}}, {bare}, {}));
  EXPECT_EQ(found.dirs, cuda13);
  EXPECT_EQ(found.from, "$CUDA_PATH");

  // Then the first default that is an install.
  found = find_cuda_headers(
      search({{"CUDA_HOME", at("nowhere")}}, {bare}, {at("missing"), at("default-cuda/include")}));
  EXPECT_EQ(found.dirs, (std::vector<std::string>{at("default-cuda/include"),
                                                  at("default-cuda/include/cccl")}));
  EXPECT_EQ(found.from, "the default " + at("default-cuda/include"));

  // None anywhere.
  found = find_cuda_headers(search({}, {bare}, {at("missing")}));
  EXPECT_TRUE(found.dirs.empty());
  EXPECT_TRUE(found.from.empty());
}

TEST_F(RtcHeaders, ACuda12ToolkitHasNoCcclFolder) {
  touch("cuda-12.4/include/cuda_fp16.h");
  touch("cuda-12.4/include/cuda/std/type_traits");
  const auto found = find_cuda_headers(search(
      {}, {touch("cuda-12.4/targets/x86_64-linux/lib/libnvrtc.so.12")}, {at("cuda-12.4/include")}));
  EXPECT_EQ(found.dirs, std::vector<std::string>{at("cuda-12.4/include")});
}

TEST_F(RtcHeaders, Cuda12WheelsSplitTheirHeadersByPart) {
  // pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12 (PyTorch's).
  const std::string lib = touch("site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  touch("site-packages/nvidia/cuda_nvrtc/include/nvrtc.h");
  touch("site-packages/nvidia/cuda_runtime/include/cuda_fp16.h");
  touch("site-packages/nvidia/cuda_cccl/include/cuda/std/type_traits");
  touch("site-packages/nvidia/cublas/lib/libcublas.so.12");  // no include folder
  const auto found = find_cuda_headers(search({}, {lib}, {}));
  EXPECT_EQ(found.dirs,
            (std::vector<std::string>{at("site-packages/nvidia/cuda_cccl/include"),
                                      at("site-packages/nvidia/cuda_nvrtc/include"),
                                      at("site-packages/nvidia/cuda_runtime/include")}));
  EXPECT_NE(found.from.find("Python wheels"), std::string::npos) << found.from;
}

TEST_F(RtcHeaders, Cuda13WheelsShareOneFolder) {
  const std::string lib = touch("site-packages/nvidia/cu13/lib/libnvrtc.so.13");
  touch("site-packages/nvidia/cu13/include/cuda_fp16.h");
  touch("site-packages/nvidia/cu13/include/cccl/cuda/std/type_traits");
  const auto found = find_cuda_headers(search({}, {lib}, {}));
  EXPECT_EQ(found.dirs, (std::vector<std::string>{at("site-packages/nvidia/cu13/include"),
                                                  at("site-packages/nvidia/cu13/include/cccl")}));
  EXPECT_EQ(found.from, "beside " + lib);
}

TEST_F(RtcHeaders, AMultiarchLibraryFindsItsPrefixHeaders) {
  // Debian's nvidia-cuda-toolkit: /usr/lib/x86_64-linux-gnu/libnvrtc.so, /usr/include/cuda_fp16.h.
  touch("usr/include/cuda_fp16.h");
  const auto found =
      find_cuda_headers(search({}, {touch("usr/lib/x86_64-linux-gnu/libnvrtc.so.12")}, {}));
  EXPECT_EQ(found.dirs, std::vector<std::string>{at("usr/include")});
}

TEST_F(RtcHeaders, TheLoadedHipRtcsHeadersWinThenRocmPathAndSystemFoldersAreNotHandedOver) {
  touch("rocm-7.0.1/include/hip/hip_runtime.h");
  touch("rocm-7.0.1/include/hip/hip_bf16.h");
  const std::string hiprtc = touch("rocm-7.0.1/lib/libhiprtc.so.7");
  touch("rocm-6.4.0/include/hip/hip_runtime.h");
  touch("usr/include/hip/hip_runtime.h");
  const std::string debian = touch("usr/lib/x86_64-linux-gnu/libamdhip64.so.5");

  // The headers beside the loaded hipRTC first; ROCM_PATH, then HIP_PATH, where none are.
  auto found = find_rocm_headers(
      search({{"ROCM_PATH", at("rocm-6.4.0")}}, {hiprtc}, {at("rocm-6.4.0/include")}));
  EXPECT_EQ(found.dirs, std::vector<std::string>{at("rocm-7.0.1/include")});
  EXPECT_EQ(found.from, "beside " + hiprtc);
  const std::string bare = at("bare/lib/libhiprtc.so.7");
  found = find_rocm_headers(search({{"ROCM_PATH", at("rocm-6.4.0")}}, {bare}, {}));
  EXPECT_EQ(found.dirs, std::vector<std::string>{at("rocm-6.4.0/include")});
  EXPECT_EQ(found.from, "$ROCM_PATH");
  found = find_rocm_headers(search({{"HIP_PATH", at("rocm-6.4.0")}}, {bare}, {}));
  EXPECT_EQ(found.from, "$HIP_PATH");
  found = find_rocm_headers(search({}, {bare, ""}, {at("missing"), at("rocm-7.0.1/include")}));
  EXPECT_EQ(found.dirs, std::vector<std::string>{at("rocm-7.0.1/include")});

  // Debian's layout: the headers are found, and are the compiler's system folder here.
  header_search s = search({}, {debian}, {});
  s.system_dirs = {at("usr/include")};
  found = find_rocm_headers(s);
  EXPECT_TRUE(found.dirs.empty());
  EXPECT_NE(found.from.find("which the compiler searches already"), std::string::npos)
      << found.from;
  s.system_dirs = {};
  EXPECT_EQ(find_rocm_headers(s).dirs, std::vector<std::string>{at("usr/include")});

  // A folder without HIP's headers is no ROCm install.
  touch("empty/lib/libamdhip64.so");
  EXPECT_TRUE(find_rocm_headers(search({}, {at("empty/lib/libamdhip64.so")}, {})).dirs.empty());
}

TEST_F(RtcHeaders, TheDefaultsAreTheUsualInstalls) {
  const header_search cuda = cuda_header_search({"/x/lib64/libnvrtc.so.13"}, "/build/include");
  EXPECT_EQ(cuda.libraries, std::vector<std::string>{"/x/lib64/libnvrtc.so.13"});
  EXPECT_EQ(cuda.defaults, (std::vector<std::string>{"/usr/local/cuda/include", "/build/include"}));
  EXPECT_EQ(cuda_header_search({}, "").defaults,
            std::vector<std::string>{"/usr/local/cuda/include"});
  EXPECT_EQ(rocm_header_search({}).defaults,
            (std::vector<std::string>{"/opt/rocm/include", "/usr/include"}));
}

TEST(RtcLoadedLibrary, NamesTheFileOfALoadedLibrary) {
  const std::string libc = loaded_library("libc.so");
  EXPECT_EQ(libc.front(), '/') << libc;
  EXPECT_NE(libc.find("/libc.so"), std::string::npos) << libc;
  EXPECT_TRUE(fs::exists(libc)) << libc;
  EXPECT_EQ(loaded_library("libkernelscan-no-such-library.so"), "");
}

}  // namespace
}  // namespace kernelscan::gpu
