// `kernelscan bench`: kernel signatures read from source, and the job spec built from flags.
#include <gtest/gtest.h>

#include "server/cli_bench.hpp"

namespace kernelscan {
namespace {

const char* const k_cuda = R"j(
#include <cuda_fp16.h>
// a comment naming matmul_tiled(int x) that is no declaration
template <int TILE>
__device__ float helper(const float* p) { return p[0]; }

__global__ void __launch_bounds__(256) matmul_naive(const float* __restrict__ A,
    const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  /* body */
}

extern "C" __global__ void matmul_tiled(float const* A, const float* B, float* C, int M, int N,
                                        int K) {}
__global__ void scale(__half* x, float alpha, size_t n) {}
__global__ void no_const(float* x, float* y, int n) {}
__global__ void no_const_reference(float* in, float* out, int count) {}
template <typename T> __global__ void generic(const T* in, T* out, unsigned int n) {}
void matmul_host(float* A);
)j";

const char* const k_opencl = R"j(
__kernel void axpy(__global float* out, __global const float* x, __constant float* y,
                   __local float* tile, float a, int n) {}
kernel void plain(global float *out, int n) {}
)j";

TEST(KernelSignature, ReadsTypesQualifiersAndNames) {
  const auto p = kernel_signature(k_cuda, "matmul_naive", "KERNEL");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].name, "A");
  EXPECT_EQ(p[0].type, "float");
  EXPECT_TRUE(p[0].pointer);
  EXPECT_TRUE(p[0].is_const);
  EXPECT_EQ(p[2].name, "C");
  EXPECT_FALSE(p[2].is_const);
  EXPECT_EQ(p[5].name, "K");
  EXPECT_FALSE(p[5].pointer);
  EXPECT_EQ(p[5].type, "int");

  const auto t = kernel_signature(k_cuda, "matmul_tiled", "KERNEL");  // `float const*`
  ASSERT_EQ(t.size(), 6u);
  EXPECT_TRUE(t[0].is_const);
  const auto s = kernel_signature(k_cuda, "scale", "KERNEL");
  EXPECT_EQ(s[0].type, "__half");
  EXPECT_EQ(s[2].type, "size_t");
  const auto g = kernel_signature(k_cuda, "generic", "KERNEL");
  EXPECT_EQ(g[0].type, "T");
  EXPECT_EQ(g[2].type, "unsigned int");
}

// A kernel kept under `#if 0` (an older version of the same name) is not the one compiled.
TEST(KernelSignature, SkipsWhatIfZeroLeavesOut) {
  const char* const src = R"j(
#if 0
__global__ void step(double* x, int n) {}
#  if defined(OLD)
__global__ void other(int n) {}
#  else
__global__ void step(short* x) {}
#  endif
#elif defined(FAST)
__global__ void fast(float* x) {}
#endif
#if 1
__global__ void step(float* x, float a, int n) {}
#else
__global__ void kept_out(int n) {}
#endif
#ifdef USE_HALF /* a macro: read as it stands */
__global__ void half_step(__half* x, int n) {}
#endif
#  if   0  // spaced and commented
__global__ void spaced(int n) {}
#endif
)j";
  const auto p = kernel_signature(src, "step", "KERNEL");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].type, "float");
  EXPECT_EQ(p[2].name, "n");
  EXPECT_EQ(kernel_signature(src, "fast", "KERNEL").size(), 1u);       // #elif: unknown, read
  EXPECT_EQ(kernel_signature(src, "half_step", "KERNEL").size(), 2u);  // #ifdef: read
  for (const char* out : {"other", "kept_out", "spaced"}) {
    EXPECT_THROW(kernel_signature(src, out, "KERNEL"), bench_error) << out;
  }
}

TEST(KernelSignature, ReadsOpenClAddressSpaces) {
  const auto p = kernel_signature(k_opencl, "axpy", "KERNEL");
  ASSERT_EQ(p.size(), 6u);
  EXPECT_FALSE(p[0].is_const);
  EXPECT_TRUE(p[1].is_const);
  EXPECT_TRUE(p[2].is_const);  // __constant: read only
  EXPECT_TRUE(p[3].local);
  EXPECT_EQ(p[4].type, "float");
  const auto q = kernel_signature(k_opencl, "plain", "KERNEL");
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].name, "out");
  EXPECT_TRUE(q[0].pointer);
}

TEST(KernelSignature, NamesAKernelThatIsNotThere) {
  for (const char* name : {"missing", "matmul_host", "helper", "matmul"}) {
    try {
      kernel_signature(k_cuda, name, "KERNEL");
      ADD_FAILURE() << name;
    } catch (const bench_error& e) {
      EXPECT_EQ(e.flag(), "KERNEL");
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

bench_options matmul_options() {
  bench_options o;
  o.file = "dir/matmul.cu";
  o.entries = {"matmul_naive", "matmul_tiled"};
  o.sweeps = {"N=128..2048:x2", "M=N", "K=2*M"};
  o.sizes = {"A=M*K", "B=K*N", "C=M*N"};
  o.blocks = {"16,16", "matmul_tiled=32,8"};
  o.grids = {"cdiv(N,16),cdiv(M,16)"};
  o.flops = "2*M*N*K";
  return o;
}

TEST(BenchSpec, BuildsOneJobWithAVariantPerKernel) {
  bench_options o = matmul_options();
  o.baseline = "matmul_naive";
  o.labels = {"team=perf"};
  o.l2 = "hot";
  const json spec = bench_spec(o, k_cuda);
  EXPECT_EQ(spec["name"], "matmul.cu: matmul_naive, matmul_tiled");
  const json& k = spec["kernel"];
  EXPECT_EQ(k["op"], "custom");
  EXPECT_EQ(k["language"], "cuda");
  bench_options upper = matmul_options();
  upper.file = "kernels/MATMUL.CU";
  EXPECT_EQ(bench_spec(upper, k_cuda)["kernel"]["language"], "cuda");
  EXPECT_EQ(k["source"], k_cuda);
  EXPECT_EQ(k["entry"], "matmul_naive");
  EXPECT_EQ(k["block"], json::parse("[16, 16, 1]"));
  EXPECT_EQ(k["grid"], json::parse(R"j(["cdiv(N,16)", "cdiv(N,16)", 1])j"));
  EXPECT_EQ(k["flops"], "2*N*N*(2*N)");
  const json args = json::parse(R"j([
    {"name": "A", "type": "f32*", "count": "N*(2*N)"
},
    {"name": "B", "type": "f32*", "count": "(2*N)*N"},
    {"name": "C", "type": "f32*", "count": "N*N", "output": true},
    {"name": "M", "type": "i32", "value": "N"},
    {"name": "N", "type": "i32", "value": "N"},
    {"name": "K", "type": "i32", "value": "(2*N)"}])j");
  EXPECT_EQ(k["args"], args);
  EXPECT_EQ(spec["variants"], json::parse(R"j([{"name": "matmul_naive", "entry": "matmul_naive"},
    {"name": "matmul_tiled", "entry": "matmul_tiled", "block": [32, 8, 1]}])j"));
  EXPECT_EQ(spec["baseline"], "matmul_naive");
  EXPECT_EQ(spec["sweep"], json::parse(R"j({"N": {"from": 128, "to": 2048, "mul": 2}})j"));
  EXPECT_EQ(spec["labels"], json::parse(R"j({"team": "perf"})j"));
  EXPECT_EQ(spec["timing"], json::parse(R"j({"l2": "hot"})j"));
}

TEST(BenchSpec, OneKernelHasNoVariantsAndSweepsTakeEveryForm) {
  bench_options o;
  o.file = "k.cl";
  o.entries = {"axpy"};
  o.sweeps = {"n=1,2,4", "step=0..64:+16", "one=7"};
  o.sizes = {"n*step*one", "tile=64"};
  o.values = {"a=2.5"};
  o.blocks = {"64"};
  o.grids = {"cdiv(n,64)"};
  o.engine = "opencl";
  o.device = "gpu-07/3";
  o.reference =
      R"j({"op": "stream", "variant": "triad", "n": "n", "a": "out", "b": "x", "c": "y"})j";
  json spec = bench_spec(o, k_opencl);
  EXPECT_FALSE(spec.contains("variants"));
  EXPECT_EQ(spec["engine"], "opencl");
  EXPECT_EQ(spec["device"], json::parse(R"j({"node": "gpu-07", "index": 3})j"));
  EXPECT_EQ(spec["sweep"]["n"], json::parse("[1, 2, 4]"));
  EXPECT_EQ(spec["sweep"]["step"], json::parse(R"j({"from": 0, "to": 64, "step": 16})j"));
  EXPECT_EQ(spec["sweep"]["one"], json::parse("[7]"));
  const json& args = spec["kernel"]["args"];
  EXPECT_EQ(args[0], json::parse(R"j({"name": "out", "type": "f32*", "count": "n*step*one",
                                     "output": true})j"));
  EXPECT_EQ(args[3], json::parse(R"j({"name": "tile", "type": "f32*", "count": 64,
                                     "local": true})j"));
  EXPECT_EQ(args[4], json::parse(R"j({"name": "a", "type": "f32", "value": 2.5})j"));
  EXPECT_EQ(args[5], json::parse(R"j({"name": "n", "type": "i32", "value": "n"})j"));
  EXPECT_EQ(spec["kernel"]["reference"]["op"], "stream");

  // Local memory is per work-group: the --size for every buffer leaves it alone.
  o.sizes = {"n*step*one"};
  try {
    spec = bench_spec(o, k_opencl);
    ADD_FAILURE() << "the local buffer took the global buffers' size";
  } catch (const bench_error& e) {
    EXPECT_EQ(e.flag(), "--size");
    EXPECT_NE(std::string(e.what()).find("needed for local buffer tile of axpy (--size tile="),
              std::string::npos)
        << e.what();
  }
}

TEST(BenchSpec, AReferenceKernelOfTheFileAndOutputsByName) {
  bench_options o;
  o.file = "k.cu";
  o.entries = {"no_const"};
  o.sweeps = {"n=1024"};
  o.sizes = {"n"};
  o.outputs = {"y"};
  o.blocks = {"256"};
  o.grids = {"cdiv(n,256)"};
  o.reference = "no_const_reference";  // the same parameter types, under other names
  const json spec = bench_spec(o, k_cuda);
  EXPECT_FALSE(spec["kernel"]["args"][0].contains("output"));
  EXPECT_TRUE(spec["kernel"]["args"][1]["output"]);

  o.outputs = {"x"};
  o.scratch = {"y"};  // a workspace: neither output nor input
  const json ws = bench_spec(o, k_cuda);
  EXPECT_TRUE(ws["kernel"]["args"][0]["output"]);
  EXPECT_EQ(ws["kernel"]["args"][1], json::parse(R"j({"name": "y", "type": "f32*", "count": "n",
                                                      "scratch": true})j"));
  o.scratch = {"x"};
  EXPECT_THROW(bench_spec(o, k_cuda), bench_error);
  EXPECT_EQ(spec["kernel"]["reference"],
            json({{"op", "custom"},
                  {"language", "cuda"},
                  {"source", k_cuda},
                  {"entry", "no_const_reference"},
                  {"block", json::parse("[256, 1, 1]")},
                  {"grid", json::parse(R"j(["cdiv(n,256)", 1, 1])j")}}));
}

// A buffer read and written in place starts with random data: as the unwritten NaN an output
// starts as, the reference would answer NaN, which any output of NaN matches. A kernel's only
// buffer is one by default; --inout names others.
TEST(BenchSpec, ABufferWrittenInPlaceStartsWithData) {
  bench_options o;
  o.file = "k.cu";
  o.entries = {"scale"};
  o.sweeps = {"n=1024"};
  o.sizes = {"n"};
  o.values = {"alpha=2"};
  o.blocks = {"256"};
  o.grids = {"cdiv(n,256)"};
  const json only = bench_spec(o, k_cuda);
  EXPECT_TRUE(only["kernel"]["args"][0]["output"]);
  EXPECT_EQ(only["kernel"]["args"][0]["init"], "random");

  o.entries = {"no_const"};
  o.values = {};
  o.outputs = {"y"};
  const json out = bench_spec(o, k_cuda);
  EXPECT_FALSE(out["kernel"]["args"][1].contains("init")) << "a plain output starts unwritten";
  o.outputs = {};
  o.inouts = {"y"};
  const json inout = bench_spec(o, k_cuda);
  EXPECT_TRUE(inout["kernel"]["args"][1]["output"]);
  EXPECT_EQ(inout["kernel"]["args"][1]["init"], "random");
  EXPECT_FALSE(inout["kernel"]["args"][0].contains("output"));
  o.inouts = {"z"};
  try {
    (void)bench_spec(o, k_cuda);
    ADD_FAILURE() << "an --inout that is no buffer was taken";
  } catch (const bench_error& e) {
    EXPECT_EQ(e.flag(), "--inout");
  }
}

TEST(BenchSpec, TemplateTypesTakeDtype) {
  bench_options o;
  o.file = "k.hip";
  o.entries = {"generic"};
  o.sweeps = {"n=16"};
  o.sizes = {"n"};
  o.blocks = {"64"};
  o.grids = {"1"};
  o.dtype = "f16";
  const json spec = bench_spec(o, k_cuda);
  EXPECT_EQ(spec["kernel"]["language"], "hip");
  EXPECT_EQ(spec["kernel"]["args"][0]["type"], "f16*");
  EXPECT_EQ(spec["kernel"]["args"][2]["type"], "u32");
}

// Every mistake names the flag at fault.
TEST(BenchSpec, ErrorsNameTheFlag) {
  struct bad {
    std::function<void(bench_options&)> change;
    std::string flag;
    std::string says;
  };
  const std::vector<bad> cases{
      {[](bench_options& o) { o.entries = {}; }, "KERNEL", "name the kernel"},
      {[](bench_options& o) {
         o.entries = {"matmul_naive", "matmul_naive"};
       },
       "KERNEL", "named twice"},
      {[](bench_options& o) { o.entries = {"nope"}; }, "KERNEL", "nope is not a kernel"},
      {[](bench_options& o) { o.file = "matmul.txt"; }, "--language", "not .cu, .hip or .cl"},
      {[](bench_options& o) { o.sweeps = {"M=N"}; }, "--sweep", "at least one parameter"},
      {[](bench_options& o) { o.sweeps.push_back("N=1,2"); }, "--sweep", "N is given twice"},
      {[](bench_options& o) { o.sweeps = {"N=1..x"}; }, "--sweep", "FROM..TO"},
      {[](bench_options& o) { o.sweeps = {"N"}; }, "--sweep", "expected NAME="},
      {[](bench_options& o) {
         o.sweeps = {"N=8", "M=K", "K=M"};
       },
       "--sweep", "in a circle"},
      {[](bench_options& o) { o.sizes = {"A=M*K"}; }, "--size", "needed for buffer B"},
      {[](bench_options& o) { o.sizes.push_back("Z=4"); }, "--size", "Z is not a pointer"},
      {[](bench_options& o) { o.outputs = {"Q"}; }, "--output", "Q is not a pointer"},
      {[](bench_options& o) { o.blocks = {}; }, "--block", "needed for matmul_naive"},
      {[](bench_options& o) { o.blocks = {"1,2,3,4"}; }, "--block", "at most three"},
      {[](bench_options& o) { o.grids = {"other=1"}; }, "--grid", "\"other\" is not one of"},
      {[](bench_options& o) { o.baseline = "fast"; }, "--baseline", "fast is not one of"},
      {[](bench_options& o) { o.entries = {"matmul_naive"}, o.baseline = "matmul_naive"; },
       "--baseline", "two or more"},
      {[](bench_options& o) { o.entries = {"no_const"}, o.sizes = {"N"}; }, "--output",
       "no pointer of no_const"},
      {[](bench_options& o) { o.entries = {"generic"}; }, "--dtype", "\"T\""},
      {[](bench_options& o) { o.entries = {"scale"}, o.sizes = {"N"}; }, "--value", "alpha"},
      {[](bench_options& o) { o.reference = "{nope"; }, "--reference", "not a JSON object"},
      {[](bench_options& o) { o.reference = "missing"; }, "--reference", "missing is not a"},
      {[](bench_options& o) { o.reference = "no_const"; }, "--reference",
       "no_const takes (float* x, float* y, int n) but matmul_naive takes (float* A, float* B, "
       "float* C, int M, int N, int K)"},
      {[](bench_options& o) { o.device = "gpu-07"; }, "--device", "NODE/INDEX"},
      {[](bench_options& o) { o.labels = {"nolabel"}; }, "--label", "KEY=VALUE"},
      {[](bench_options& o) { o.values = {"=3"}; }, "--value", "PARAMETER=VALUE"},
      {[](bench_options& o) { o.values = {"alpha=2"}; }, "--value",
       "alpha is not a scalar parameter of matmul_naive"},
      {[](bench_options& o) { o.values = {"A=2"}; }, "--value", "A is not a scalar parameter"},
      {[](bench_options& o) {
         o.values = {"K=64", "K=128"};
       },
       "--value", "K is given twice"},
      {[](bench_options& o) { o.values = {"N=64"}; }, "--value", "N is a sweep parameter"},
      {[](bench_options& o) { o.values = {"K=64"}; }, "--value", "K is a sweep parameter"},
  };
  for (const auto& c : cases) {
    bench_options o = matmul_options();
    o.blocks = {"16,16"};
    c.change(o);
    try {
      bench_spec(o, k_cuda);
      ADD_FAILURE() << "accepted; expected " << c.flag << ": " << c.says;
    } catch (const bench_error& e) {
      EXPECT_EQ(e.flag(), c.flag) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos)
          << e.what() << "\nexpected: " << c.says;
    }
  }
}

TEST(BenchJobFile, SourceFilesAreReadIn) {
  const json spec = json::parse(R"j({"kernel": {"op": "custom", "source_file": "a.cu",
      "reference": {"op": "custom", "source_file": "ref.cu"}},
      "variants": [{"name": "x", "source_file": "b.cu"}, {"name": "y"}]})j");
  const json out =
      resolve_job_file(spec, [](const std::string& path) { return "// text of " + path; });
  EXPECT_EQ(out["kernel"]["source"], "// text of a.cu");
  EXPECT_FALSE(out["kernel"].contains("source_file"));
  EXPECT_EQ(out["kernel"]["reference"]["source"], "// text of ref.cu");
  EXPECT_EQ(out["variants"][0]["source"], "// text of b.cu");
  EXPECT_FALSE(out["variants"][1].contains("source"));

  try {
    resolve_job_file(json::parse(R"j({"kernel": {"source": "x", "source_file": "a.cu"}})j"),
                     [](const std::string&) { return std::string(); });
    ADD_FAILURE();
  } catch (const bench_error& e) {
    EXPECT_EQ(e.flag(), "kernel.source_file");
  }
  try {
    resolve_job_file(json::parse(R"j({"variants": [{"source_file": 3}]})j"),
                     [](const std::string&) { return std::string(); });
    ADD_FAILURE();
  } catch (const bench_error& e) {
    EXPECT_EQ(e.flag(), "variants[0].source_file");
  }
}

}  // namespace
}  // namespace kernelscan
