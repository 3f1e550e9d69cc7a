#pragma once
// The device suite's kernels, in HIP and in OpenCL C: an axpy template and the cheating and
// honest kernels the suite submits (tests/device/device_test.cpp). Shared with the run-time
// compilation tests (tests/gpu/rtc_compile_test.cpp), which compile the HIP ones with this
// build's NVRTC or hipRTC in CI, so that a GPU run finds none that does not compile.
// Placeholders (STATEMENT, ELEM, HONEST, ENTRY, ROW_SCALE) are replaced before use.

#include <string>

namespace kernelscan::testing {

// `text` with every `what` replaced by `with`.
inline std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

// STATEMENT over n elements (out[i] = a body, or more), in each engine's language, with h(x): x
// rounded through f16.
constexpr const char* k_hip_template = R"(#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
__device__ float h(float x) { return __half2float(__float2half(x)); }
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  STATEMENT
})";

constexpr const char* k_opencl_template = R"(float h(float x) {
  ushort t;  // half is a storage type only, without cl_khr_fp16
  vstore_half(x, 0, (half*)&t);
  return vload_half(0, (half*)&t);
}
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n) {
  long i = get_global_id(0);
  STATEMENT
})";

// Honest for its first 80 launches of a module (where the drawn checks mostly fall), then does a
// fifth of the work, except for inputs it met in those launches: where a checked sample took the
// inputs of one an earlier check had used, it recognised the check and passed it. The work-group
// (block) that finishes last records a launch's inputs, after every work-item has decided.
constexpr const char* k_opencl_repeat_cheat = R"(global uint calls = 0;
global uint done = 0;
global uint seen[4096];
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n) {
  long i = get_global_id(0) * 16;
  uint fp = as_uint(a[0]) ^ (as_uint(b[1]) * 2654435761u) ^ as_uint(a[n - 1]);
  bool honest = calls < 80u || seen[fp & 4095u] == fp;
  if (honest || i < n / 5)
    for (long k = i; k < min(i + 16, (long)n); ++k) out[k] = a[k] + s * b[k];
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && atomic_inc(&done) == get_num_groups(0) - 1) {
    if (calls < 80u) seen[fp & 4095u] = fp;
    calls++;
    done = 0;
  }
})";

constexpr const char* k_hip_repeat_cheat = R"(#include <hip/hip_runtime.h>
__device__ unsigned int calls;
__device__ unsigned int done;
__device__ unsigned int seen[4096];
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  long i = (blockIdx.x * (long)blockDim.x + threadIdx.x) * 16;
  unsigned int fp = __float_as_uint(a[0]) ^ (__float_as_uint(b[1]) * 2654435761u) ^
                    __float_as_uint(a[n - 1]);
  bool honest = calls < 80u || seen[fp & 4095u] == fp;
  if (honest || i < n / 5)
    for (long k = i; k < i + 16 && k < n; ++k) out[k] = a[k] + s * b[k];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done, 1u) == gridDim.x - 1) {
      if (calls < 80u) seen[fp & 4095u] = fp;
      calls++;
      done = 0;
      __threadfence();
    }
  }
})";

// Learns the addresses of the sets its first launches get (the warm-up's and the single samples'
// that decide the batch: the two sets timed launches alternate), then works on those alone. A
// batched sample gives each launch a set of its own; a check of one of them is drawn among all.
constexpr const char* k_opencl_first_sets_only = R"(global ulong known[8];
global uint nknown = 0;
global uint calls = 0;
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n) {
  long i = get_global_id(0);
  ulong me = (ulong)out;
  bool seen = false;
  for (uint j = 0; j < min(nknown, 8u); ++j) seen = seen || known[j] == me;
  bool learning = calls < 6u;
  if ((learning || seen) && i < n) out[i] = a[i] + s * b[i];
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (i == 0) {
    if (learning && !seen && nknown < 8u) known[nknown++] = me;
    calls++;
  }
})";

constexpr const char* k_hip_first_sets_only = R"(#include <hip/hip_runtime.h>
__device__ unsigned long long known[8];
__device__ unsigned int nknown;
__device__ unsigned int calls;
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  unsigned long long me = (unsigned long long)out;
  bool seen = false;
  for (unsigned int j = 0; j < nknown && j < 8u; ++j) seen = seen || known[j] == me;
  bool learning = calls < 6u;
  if ((learning || seen) && i < n) out[i] = a[i] + s * b[i];
  __syncthreads();
  if (i == 0) {
    if (learning && !seen && nknown < 8u) known[nknown++] = me;
    calls++;
    __threadfence();
  }
})";

// Learns the sets of a batch (their addresses, up to 256: more than a batch holds) and does the
// work of every set whose inputs are fresh at the first launch that finds them so, one large
// launch for the batch; the launches after it find their own set done and return. Every output
// right, every check passed. The work-group (block) that finishes last records what the launch did,
// after every work-item has decided.
constexpr const char* k_opencl_fused_batch = R"(global ulong outs[256];
global ulong ins_a[256];
global ulong ins_b[256];
global float seen[256];
global uint nknown = 0;
global uint done = 0;
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n) {
  long i = get_global_id(0);
  uint known = min(nknown, 256u), me = 256u;
  for (uint j = 0; j < known; ++j)
    if (outs[j] == (ulong)out) me = j;
  bool mine_done = me < 256u && ins_a[me] == (ulong)a && seen[me] == a[0];
  if (!mine_done && i < n) {
    out[i] = a[i] + s * b[i];
    for (uint j = 0; j < known; ++j) {
      __global const float* aj = (__global const float*)ins_a[j];
      __global const float* bj = (__global const float*)ins_b[j];
      if (j != me && seen[j] != aj[0]) ((__global float*)outs[j])[i] = aj[i] + s * bj[i];
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && atomic_inc(&done) == get_num_groups(0) - 1) {
    if (!mine_done) {
      for (uint j = 0; j < known; ++j) seen[j] = ((__global const float*)ins_a[j])[0];
      if (me == 256u && nknown < 256u) {
        outs[nknown] = (ulong)out;
        ins_a[nknown] = (ulong)a;
        ins_b[nknown] = (ulong)b;
        seen[nknown] = a[0];
        nknown++;
      } else if (me < 256u) {
        ins_a[me] = (ulong)a;
        ins_b[me] = (ulong)b;
        seen[me] = a[0];
      }
    }
    done = 0;
  }
})";

constexpr const char* k_hip_fused_batch = R"(#include <hip/hip_runtime.h>
__device__ unsigned long long outs[256];
__device__ unsigned long long ins_a[256];
__device__ unsigned long long ins_b[256];
__device__ float seen[256];
__device__ unsigned int nknown;
__device__ unsigned int done;
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  unsigned int known = nknown < 256u ? nknown : 256u, me = 256u;
  for (unsigned int j = 0; j < known; ++j)
    if (outs[j] == (unsigned long long)out) me = j;
  bool mine_done = me < 256u && ins_a[me] == (unsigned long long)a && seen[me] == a[0];
  if (!mine_done && i < n) {
    out[i] = a[i] + s * b[i];
    for (unsigned int j = 0; j < known; ++j) {
      const float* aj = (const float*)ins_a[j];
      const float* bj = (const float*)ins_b[j];
      if (j != me && seen[j] != aj[0]) ((float*)outs[j])[i] = aj[i] + s * bj[i];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done, 1u) == gridDim.x - 1) {
      if (!mine_done) {
        for (unsigned int j = 0; j < known; ++j) seen[j] = ((const float*)ins_a[j])[0];
        if (me == 256u && nknown < 256u) {
          outs[nknown] = (unsigned long long)out;
          ins_a[nknown] = (unsigned long long)a;
          ins_b[nknown] = (unsigned long long)b;
          seen[nknown] = a[0];
          nknown++;
        } else if (me < 256u) {
          ins_a[me] = (unsigned long long)a;
          ins_b[me] = (unsigned long long)b;
          seen[me] = a[0];
        }
      }
      done = 0;
      __threadfence();
    }
  }
})";

// As the fused batch, but the first launch leaves the other sets' answers in their scratch
// buffers (`ws`) and writes none of their outputs; each later launch whose inputs are the ones
// its answer was made from copies it out. Every output right and written by its own launch.
constexpr const char* k_opencl_scratch_batch = R"(global ulong outs[256];
global ulong ins_a[256];
global ulong ins_b[256];
global ulong wss[256];
global float left_for[256];
global uint nknown = 0;
global uint done = 0;
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n, __global float* ws) {
  long i = get_global_id(0);
  uint known = min(nknown, 256u), me = 256u;
  for (uint j = 0; j < known; ++j)
    if (outs[j] == (ulong)out) me = j;
  bool left = me < 256u && ins_a[me] == (ulong)a && wss[me] == (ulong)ws && left_for[me] == a[0];
  if (left) {
    if (i < n) out[i] = ws[i];
  } else if (i < n) {
    out[i] = a[i] + s * b[i];
    for (uint j = 0; j < known; ++j) {
      __global const float* aj = (__global const float*)ins_a[j];
      __global const float* bj = (__global const float*)ins_b[j];
      if (j != me && left_for[j] != aj[0]) ((__global float*)wss[j])[i] = aj[i] + s * bj[i];
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && atomic_inc(&done) == get_num_groups(0) - 1) {
    if (!left) {
      for (uint j = 0; j < known; ++j)
        if (j != me) left_for[j] = ((__global const float*)ins_a[j])[0];
      if (me == 256u && nknown < 256u) me = nknown++;
      if (me < 256u) {
        outs[me] = (ulong)out;
        ins_a[me] = (ulong)a;
        ins_b[me] = (ulong)b;
        wss[me] = (ulong)ws;
        left_for[me] = a[0] + 1.0f;  /* no input it will see: its answer is in out */
      }
    }
    done = 0;
  }
})";

constexpr const char* k_hip_scratch_batch = R"(#include <hip/hip_runtime.h>
__device__ unsigned long long outs[256];
__device__ unsigned long long ins_a[256];
__device__ unsigned long long ins_b[256];
__device__ unsigned long long wss[256];
__device__ float left_for[256];
__device__ unsigned int nknown;
__device__ unsigned int done;
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n,
                                float* ws) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  unsigned int known = nknown < 256u ? nknown : 256u, me = 256u;
  for (unsigned int j = 0; j < known; ++j)
    if (outs[j] == (unsigned long long)out) me = j;
  bool left = me < 256u && ins_a[me] == (unsigned long long)a &&
              wss[me] == (unsigned long long)ws && left_for[me] == a[0];
  if (left) {
    if (i < n) out[i] = ws[i];
  } else if (i < n) {
    out[i] = a[i] + s * b[i];
    for (unsigned int j = 0; j < known; ++j) {
      const float* aj = (const float*)ins_a[j];
      const float* bj = (const float*)ins_b[j];
      if (j != me && left_for[j] != aj[0]) ((float*)wss[j])[i] = aj[i] + s * bj[i];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done, 1u) == gridDim.x - 1) {
      if (!left) {
        for (unsigned int j = 0; j < known; ++j)
          if (j != me) left_for[j] = ((const float*)ins_a[j])[0];
        if (me == 256u && nknown < 256u) me = nknown++;
        if (me < 256u) {
          outs[me] = (unsigned long long)out;
          ins_a[me] = (unsigned long long)a;
          ins_b[me] = (unsigned long long)b;
          wss[me] = (unsigned long long)ws;
          left_for[me] = a[0] + 1.0f;  // no input it will see: its answer is in out
        }
      }
      done = 0;
      __threadfence();
    }
  }
})";

// As the scratch batch, but the first launch leaves the other sets' answers in memory of its own
// (an array among its globals, room for 1024 elements a set) and writes nothing of theirs; each
// later launch whose inputs are the ones its answer was made from copies it out. Nothing a
// check or a probe reads differs from an honest kernel's: only the launches' times do. Each
// answer takes a few dependent steps more than the axpy (whose result they leave as it
// is): work that costs more than the copy, as it must for keeping answers to pay.
constexpr const char* k_opencl_stash_batch = R"(global ulong outs[256];
global ulong ins_a[256];
global ulong ins_b[256];
global float stashed_for[256];
global float stash[256 * 1024];
global uint nknown = 0;
global uint done = 0;
float answer(float x, float y, float s) {
  float steps = x;
  for (int k = 0; k < 6; ++k) steps = steps * 0.999f + 0.001f;
  return x + s * y + (steps > 1e30f ? 1.0f : 0.0f);
}
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n) {
  long i = get_global_id(0);
  uint known = min(nknown, 256u), me = 256u;
  for (uint j = 0; j < known; ++j)
    if (outs[j] == (ulong)out) me = j;
  bool left = n <= 1024 && me < 256u && ins_a[me] == (ulong)a && stashed_for[me] == a[0];
  if (left) {
    if (i < n) out[i] = stash[me * 1024 + i];
  } else if (i < n) {
    out[i] = answer(a[i], b[i], s);
    for (uint j = 0; j < known && n <= 1024; ++j) {
      __global const float* aj = (__global const float*)ins_a[j];
      __global const float* bj = (__global const float*)ins_b[j];
      if (j != me && stashed_for[j] != aj[0]) stash[j * 1024 + i] = answer(aj[i], bj[i], s);
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && atomic_inc(&done) == get_num_groups(0) - 1) {
    if (!left) {
      for (uint j = 0; j < known && n <= 1024; ++j)
        if (j != me) stashed_for[j] = ((__global const float*)ins_a[j])[0];
      if (me == 256u && nknown < 256u) me = nknown++;
      if (me < 256u) {
        outs[me] = (ulong)out;
        ins_a[me] = (ulong)a;
        ins_b[me] = (ulong)b;
        stashed_for[me] = a[0] + 1.0f;  /* no input it will see: its answer is in out */
      }
    }
    done = 0;
  }
})";

constexpr const char* k_hip_stash_batch = R"(#include <hip/hip_runtime.h>
__device__ unsigned long long outs[256];
__device__ unsigned long long ins_a[256];
__device__ unsigned long long ins_b[256];
__device__ float stashed_for[256];
__device__ float stash[256 * 1024];
__device__ unsigned int nknown;
__device__ unsigned int done;
__device__ float answer(float x, float y, float s) {
  float steps = x;
  for (int k = 0; k < 6; ++k) steps = steps * 0.999f + 0.001f;
  return x + s * y + (steps > 1e30f ? 1.0f : 0.0f);
}
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  unsigned int known = nknown < 256u ? nknown : 256u, me = 256u;
  for (unsigned int j = 0; j < known; ++j)
    if (outs[j] == (unsigned long long)out) me = j;
  bool left = n <= 1024 && me < 256u && ins_a[me] == (unsigned long long)a &&
              stashed_for[me] == a[0];
  if (left) {
    if (i < n) out[i] = stash[me * 1024 + i];
  } else if (i < n) {
    out[i] = answer(a[i], b[i], s);
    for (unsigned int j = 0; j < known && n <= 1024; ++j) {
      const float* aj = (const float*)ins_a[j];
      const float* bj = (const float*)ins_b[j];
      if (j != me && stashed_for[j] != aj[0]) stash[j * 1024 + i] = answer(aj[i], bj[i], s);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done, 1u) == gridDim.x - 1) {
      if (!left) {
        for (unsigned int j = 0; j < known && n <= 1024; ++j)
          if (j != me) stashed_for[j] = ((const float*)ins_a[j])[0];
        if (me == 256u && nknown < 256u) me = nknown++;
        if (me < 256u) {
          outs[me] = (unsigned long long)out;
          ins_a[me] = (unsigned long long)a;
          ins_b[me] = (unsigned long long)b;
          stashed_for[me] = a[0] + 1.0f;  // no input it will see: its answer is in out
        }
      }
      done = 0;
      __threadfence();
    }
  }
})";

// Leaves the work of a sample's first launches to a later one, at a place it draws from the
// inputs sample by sample (one of the first four): the launches before it write nothing, it
// writes their answers and its own, those after it are honest. At no place does a launch take
// longer in most samples, and by the sample's end every answer is written. It learns the
// buffers as the batches above do (once it knows four sets, it is batched), and tells a sample
// from the one before by the first set it learned, which every batch's fills write again. The
// probe, alone, leaves its work to a launch that never comes.
constexpr const char* k_opencl_drawn_batch = R"(global ulong outs[256];
global ulong ins_a[256];
global ulong ins_b[256];
global uint nknown = 0;
global float tag = 0.0f;
global uint pos = 0;
global uint left[4];
global uint done = 0;
__kernel void axpy(__global float* out, __global const float* a, __global const float* b,
                   float s, int n) {
  long i = get_global_id(0);
  uint known = min(nknown, 256u), me = 256u;
  for (uint j = 0; j < known; ++j)
    if (outs[j] == (ulong)out) me = j;
  float now = known > 0u ? ((__global const float*)ins_a[0])[0] : 0.0f;
  uint at = now != tag ? 0u : pos;
  uint place = (as_uint(now) >> 9) % 4u;
  bool drawn = known >= 4u && n <= 1024 && me < 256u;
  bool leave = drawn && at < place;
  if (!leave && i < n) {
    out[i] = a[i] + s * b[i];
    for (uint k = 0; drawn && k < at && at == place; ++k) {
      uint j = left[k];
      ((__global float*)outs[j])[i] =
          ((__global const float*)ins_a[j])[i] + s * ((__global const float*)ins_b[j])[i];
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && atomic_inc(&done) == get_num_groups(0) - 1) {
    if (leave) left[at] = me;
    tag = now;
    pos = at + 1u;
    if (me == 256u && nknown < 256u) {
      me = nknown++;
      outs[me] = (ulong)out;
      ins_a[me] = (ulong)a;
      ins_b[me] = (ulong)b;
    }
    done = 0;
  }
})";

constexpr const char* k_hip_drawn_batch = R"(#include <hip/hip_runtime.h>
__device__ unsigned long long outs[256];
__device__ unsigned long long ins_a[256];
__device__ unsigned long long ins_b[256];
__device__ unsigned int nknown;
__device__ float tag;
__device__ unsigned int pos;
__device__ unsigned int left[4];
__device__ unsigned int done;
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  unsigned int known = nknown < 256u ? nknown : 256u, me = 256u;
  for (unsigned int j = 0; j < known; ++j)
    if (outs[j] == (unsigned long long)out) me = j;
  float now = known > 0u ? ((const float*)ins_a[0])[0] : 0.0f;
  unsigned int at = now != tag ? 0u : pos;
  unsigned int place = (__float_as_uint(now) >> 9) % 4u;
  bool drawn = known >= 4u && n <= 1024 && me < 256u;
  bool leave = drawn && at < place;
  if (!leave && i < n) {
    out[i] = a[i] + s * b[i];
    for (unsigned int k = 0; drawn && k < at && at == place; ++k) {
      unsigned int j = left[k];
      ((float*)outs[j])[i] = ((const float*)ins_a[j])[i] + s * ((const float*)ins_b[j])[i];
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done, 1u) == gridDim.x - 1) {
      if (leave) left[at] = me;
      tag = now;
      pos = at + 1u;
      if (me == 256u && nknown < 256u) {
        me = nknown++;
        outs[me] = (unsigned long long)out;
        ins_a[me] = (unsigned long long)a;
        ins_b[me] = (unsigned long long)b;
      }
      done = 0;
      __threadfence();
    }
  }
})";

// Made for a run of exactly 200 samples (hot, not batched): launches 0-2 are the warm-up, 3-5
// the single samples, 6-205 the samples, 206 the last check. Honest until launch 46 (the checks
// on kept answers all but surely come before), a fifth of the work in the next 160 samples (the
// median is theirs), honest again from launch 206 on, for the last check; or,
// with HONEST true, honest throughout. ELEM is its element type. The work-group (block) that
// finishes last counts the launch.
constexpr const char* k_opencl_middle_cheat = R"(global uint calls = 0;
global uint done = 0;
__kernel void axpy(__global ELEM* out, __global const ELEM* a, __global const ELEM* b, ELEM s,
                   int n) {
  long i = get_global_id(0) * 16;
  uint c = calls;
  bool honest = HONEST || c < 46u || c >= 206u;
  if (honest || i < n / 5)
    for (long k = i; k < min(i + 16, (long)n); ++k) out[k] = a[k] + s * b[k];
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && atomic_inc(&done) == get_num_groups(0) - 1) {
    calls++;
    done = 0;
  }
})";

constexpr const char* k_hip_middle_cheat = R"(#include <hip/hip_runtime.h>
__device__ unsigned int calls;
__device__ unsigned int done;
extern "C" __global__ void axpy(ELEM* out, const ELEM* a, const ELEM* b, ELEM s, int n) {
  long i = (blockIdx.x * (long)blockDim.x + threadIdx.x) * 16;
  unsigned int c = *(volatile unsigned int*)&calls;
  bool honest = HONEST || c < 46u || c >= 206u;
  if (honest || i < n / 5)
    for (long k = i; k < i + 16 && k < n; ++k) out[k] = a[k] + s * b[k];
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&done, 1u) == gridDim.x - 1) {
      calls = c + 1;
      done = 0;
      __threadfence();
    }
  }
})";

// RMS normalisation of rows, in each engine's language: out = x / sqrt(mean(x²) + 1e-6) per row
// of `cols` elements, one work-item a row. ROW_SCALE is how the row's factor is found: honestly
// (STATEMENT reduces the row) or taken for a constant.
constexpr const char* k_hip_rms_template = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void ENTRY(float* out, const float* x, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* in = x + (long)r * cols;
  float k = 0.0f;
  ROW_SCALE
  for (int c = 0; c < cols; ++c) out[(long)r * cols + c] = in[c] * k;
})";

constexpr const char* k_opencl_rms_template = R"(
__kernel void ENTRY(__global float* out, __global const float* x, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* in = x + (long)r * cols;
  float k = 0.0f;
  ROW_SCALE
  for (int c = 0; c < cols; ++c) out[(long)r * cols + c] = in[c] * k;
})";

constexpr const char* k_rms_reduce =
    "float s = 0.0f; for (int c = 0; c < cols; ++c) s += in[c] * in[c]; "
    "k = 1.0f / sqrt(s / cols + 1e-6f);";

// The axpy with 4 KiB of static shared memory and the launch's dynamic shared memory (`extra`).
constexpr const char* k_hip_shared_tile = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  __shared__ float tile[1024];
  extern __shared__ float extra[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = a[i];
  extra[threadIdx.x] = b[i];
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x] + s * extra[threadIdx.x];
})";

// The axpy with a 2 KiB private array it indexes at run time, which cannot live in registers.
constexpr const char* k_hip_local_array = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  float stash[512];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < 512; ++k) stash[k] = b[(i + k) % n];
  int j = int(a[i] * 1000.0f) & 511;  // known only at run time
  out[i] = a[i] + s * b[i] + 0.0f * stash[j];
})";

}  // namespace kernelscan::testing
