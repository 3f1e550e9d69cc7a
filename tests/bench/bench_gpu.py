#!/usr/bin/env python3
"""GPU benchmark of the GPU engine on NVIDIA, on one GPU, in one run. It starts the daemon on a
free loopback port with --engine hip and prints:

  (a) the daemon's median of a custom kernel against a minimal raw event-timing loop of the same
      source, and the daemon's STREAM triad and library GEMM against PyTorch running the same
      op -- target: within 2%. Each pair is measured alike: cold against cold (the caches
      flushed before every sample as the daemon does, by reading a buffer as large as its flush,
      untimed), hot against hot, and a point the daemon batched (k launches per sample, the time
      divided) against the same k launches between one event pair, queued behind a kernel that
      holds the stream as the daemon's does (so that both time the kernels back to back rather
      than Python's launch rate), and also replayed as a CUDA graph. The raw loop
      compiles the source with NVRTC and times it with CUDA events through ctypes over the
      driver API (no CuPy); PyTorch's ops are timed with its CUDA events, and cold ones also
      with triton.testing.do_bench, which flushes the cache by writing before each repetition;
  (b) the wall time the daemon's sampling took to converge at 0.5% noise for a ~5 us kernel
      -- target: <= 0.3 s;
  (c) the library f16 GEMM 8192^3 as % of the datasheet peak (target >= 70% on H100/H200) and
      the STREAM triad as % of the datasheet bandwidth (target >= 80%);
  (d) a custom triad against itself as the point's baseline, hot (batched) and cold: the
      speedup the daemon gives a kernel over an identical one -- target: 1.00 within 2%.

Usage: python3 tests/bench/bench_gpu.py --binary build-cuda/server/kernelscan
Needs the CUDA driver (libcuda.so.1) and an NVRTC (the bundle's beside --binary, a CUDA toolkit
or PyTorch's wheels); PyTorch and Triton are optional: a comparison whose peer is missing says
so. With --engine mock it runs the daemon's half on mock devices (a check of the script itself).
"""

import argparse
import ctypes
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

TRIAD_SOURCE = r"""
extern "C" __global__ void triad(float* a, const float* b, const float* c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
"""

# The daemon's cold flush: a read of the flush buffer (zeros), leaving clean lines, so no
# write-back of the flush lands in the timed sample. The sink is never written.
FLUSH_SOURCE = r"""
extern "C" __global__ void flush_read(const unsigned long long* p, long long n,
                                      unsigned long long* sink) {
  unsigned long long acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    acc ^= p[i];
  if (acc == 0x9e3779b97f4a7c15ull) sink[0] = acc;
}
"""

# Holds the stream until the host has queued a sample's launches, as the daemon's blocking
# kernel does (nvbench's blocking_kernel): the events then time the kernels, not the launch rate.
# It gives up after about ten seconds at 2 GHz.
HOLD_SOURCE = r"""
extern "C" __global__ void hold(volatile int* flag) {
  const long long start = clock64();
  while (*flag == 0 && clock64() - start < 20000000000LL) {}
}
"""

SAMPLES = 200  # timed samples of each peer measurement; the median is reported


class Daemon:
    def __init__(self, binary, engine):
        self.dir = tempfile.mkdtemp(prefix="kernelscan-bench-gpu-")
        port_file = Path(self.dir, "port")
        self.log = open(Path(self.dir, "daemon.log"), "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(Path(self.dir, "data")),
             "--port-file", str(port_file), "--engine", engine, "--log-level", "info"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while not port_file.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit("the daemon did not start:\n" + self.read_log())
            time.sleep(0.05)
        self.base = "http://127.0.0.1:" + port_file.read_text().strip()
        while self.call("GET", "/readyz", raw=True) != 200:
            time.sleep(0.1)

    def read_log(self):
        return Path(self.dir, "daemon.log").read_text(errors="replace")

    def call(self, method, path, body=None, raw=False):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.status if raw else json.loads(r.read())
        except urllib.error.HTTPError as e:
            if raw:
                return e.code
            raise SystemExit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")

    def run(self, spec):
        """Submits a job, waits for it, returns (job, rows, wall seconds)."""
        started = time.perf_counter()
        job = self.call("POST", "/api/v1/jobs", spec)
        jid = job["id"]
        while job["status"] in ("queued", "running"):
            job = self.call("GET", f"/api/v1/jobs/{jid}?wait=30")
        wall = time.perf_counter() - started
        rows = self.call("GET", f"/api/v1/jobs/{jid}/results")["results"]
        if job["status"] != "succeeded":
            raise SystemExit(f"job {jid} {job['status']}: {json.dumps(job)}\n{json.dumps(rows)}")
        return job, rows, wall

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def pct(a, b):
    return 100.0 * (a - b) / b


class CudaError(RuntimeError):
    pass


def load_nvrtc(binary):
    """NVRTC: the daemon's own (a bundle's lib/ beside --binary), else the toolkit's, else a
    Python wheel's (as PyTorch brings it)."""
    here = Path(binary).resolve().parent
    candidates = sorted(glob.glob(str(here / "lib" / "libnvrtc.so.*")))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates += sorted(glob.glob(f"{home}/lib64/libnvrtc.so.*"))
            candidates += sorted(glob.glob(f"{home}/lib/libnvrtc.so.*"))
    for site in sys.path:
        candidates += sorted(glob.glob(f"{site}/nvidia/*/lib/libnvrtc.so.*"))
    candidates += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for c in candidates:
        try:
            lib = ctypes.CDLL(c)
        except OSError:
            continue
        # NVRTC opens its builtins by name when it first compiles; this process has no RPATH to
        # a bundle's lib/, so the copy beside the library is loaded first (and then found loaded).
        for builtins in sorted(glob.glob(str(Path(c).parent / "libnvrtc-builtins.so.*"))):
            try:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        return lib, c
    raise CudaError("no NVRTC found (a CUDA toolkit, or pip's nvidia-cuda-nvrtc)")


class Cuda:
    """The CUDA driver API and NVRTC through ctypes: compile a source, launch it, time it with
    events on the legacy default stream -- a minimal harness, as a user would write one. It uses
    the device's primary context, the one PyTorch uses, so their work is ordered on one stream."""

    def __init__(self, binary):
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"no CUDA driver: {e}")
        self.nvrtc, self.nvrtc_path = load_nvrtc(binary)
        self.cu.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
        self.check(self.cu.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device),
                   "cuDevicePrimaryCtxRetain")
        self.check(self.cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(major), 75, self.device), "major")
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.device), "minor")
        self.arch = f"sm_{major.value}{minor.value}"
        self.cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.cu.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t,
                                            ctypes.c_void_p]
        self.cu.cuEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.cu.cuEventSynchronize.argtypes = [ctypes.c_void_p]
        self.cu.cuEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p,
                                               ctypes.c_void_p]
        self.cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                                ctypes.c_char_p]
        self.cu.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        self.cu.cuStreamBeginCapture_v2.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.cu.cuStreamEndCapture.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        self.cu.cuGraphInstantiateWithFlags.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                                        ctypes.c_void_p, ctypes.c_ulonglong]
        self.cu.cuGraphLaunch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.cu.cuStreamDestroy_v2.argtypes = [ctypes.c_void_p]
        self.cu.cuMemHostAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                           ctypes.c_uint]
        self.cu.cuMemHostGetDevicePointer_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64),
                                                         ctypes.c_void_p, ctypes.c_uint]
        self.start, self.stop = self.event(), self.event()
        self.flush_fn = self.hold_fn = None  # compiled when first needed

    def check(self, rc, what):
        if rc != 0:
            text = ctypes.c_char_p()
            self.cu.cuGetErrorString(rc, ctypes.byref(text))
            raise CudaError(f"{what}: error {rc} ({(text.value or b'?').decode()})")

    def nvrtc_check(self, rc, what):
        if rc != 0:
            raise CudaError(f"{what}: {self.nvrtc.nvrtcGetErrorString(rc).decode()}")

    def compile(self, source, name):
        prog = ctypes.c_void_p()
        self.nvrtc_check(self.nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(),
                                                       b"raw.cu", 0, None, None), "create")
        opts = (ctypes.c_char_p * 2)(f"-arch={self.arch}".encode(), b"-std=c++17")
        rc = self.nvrtc.nvrtcCompileProgram(prog, 2, opts)
        if rc != 0:
            size = ctypes.c_size_t()
            self.nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            self.nvrtc.nvrtcGetProgramLog(prog, log)
            raise CudaError("NVRTC: " + log.value.decode(errors="replace"))
        size = ctypes.c_size_t()
        self.nvrtc_check(self.nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "cubin size")
        cubin = ctypes.create_string_buffer(size.value)
        self.nvrtc_check(self.nvrtc.nvrtcGetCUBIN(prog, cubin), "cubin")
        self.nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(function), module, name.encode()),
                   "cuModuleGetFunction")
        return function

    def alloc(self, nbytes):
        ptr = ctypes.c_uint64()
        self.check(self.cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), "cuMemAlloc")
        return ptr.value

    def free(self, ptr):
        self.cu.cuMemFree_v2(ptr)

    def memset(self, ptr, value, nbytes):
        self.check(self.cu.cuMemsetD8Async(ptr, value & 0xFF, nbytes, None), "cuMemsetD8Async")

    def launch(self, function, grid, block, args, stream=None):
        params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        self.check(self.cu.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, params,
                                          None), "cuLaunchKernel")

    def flush(self, flush, flush_bytes):
        """The daemon's cold flush: flush_bytes of `flush` read, untimed."""
        if self.flush_fn is None:
            self.flush_fn = self.compile(FLUSH_SOURCE, "flush_read")
            self.sink = self.alloc(8)
        words = flush_bytes // 8
        args = [ctypes.c_uint64(flush), ctypes.c_longlong(words), ctypes.c_uint64(self.sink)]
        self.launch(self.flush_fn, max(1, min((words + 255) // 256, 8192)), 256, args)

    def graph(self, enqueue):
        """A CUDA graph of what enqueue(stream) launches, captured on a stream of its own; its
        replay launches them back to back, as the daemon's held stream does (a Python loop of
        launches measures the launch rate instead, for kernels of a few microseconds)."""
        stream, graph, exec_ = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.cu.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
        self.check(self.cu.cuStreamBeginCapture_v2(stream, 1), "cuStreamBeginCapture")
        enqueue(stream)
        self.check(self.cu.cuStreamEndCapture(stream, ctypes.byref(graph)), "cuStreamEndCapture")
        self.check(self.cu.cuGraphInstantiateWithFlags(ctypes.byref(exec_), graph,
                                                       ctypes.c_ulonglong(0)),
                   "cuGraphInstantiate")
        self.check(self.cu.cuStreamDestroy_v2(stream), "cuStreamDestroy")
        return exec_

    def held(self, enqueue):
        """enqueue() on the legacy stream behind a kernel that holds it until the host has
        queued everything; the events recorded in enqueue() time the kernels back to back."""
        if self.hold_fn is None:
            self.hold_fn = self.compile(HOLD_SOURCE, "hold")
            host, device = ctypes.c_void_p(), ctypes.c_uint64()
            self.check(self.cu.cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(4), 2),
                       "cuMemHostAlloc")  # CU_MEMHOSTALLOC_DEVICEMAP
            self.check(self.cu.cuMemHostGetDevicePointer_v2(ctypes.byref(device), host, 0),
                       "cuMemHostGetDevicePointer")
            self.hold_flag = ctypes.c_int.from_address(host.value)
            self.hold_args = [ctypes.c_uint64(device.value)]
        self.hold_flag.value = 0
        self.launch(self.hold_fn, 1, 1, self.hold_args)
        enqueue()
        self.hold_flag.value = 1

    def replay(self, exec_):
        self.check(self.cu.cuGraphLaunch(exec_, None), "cuGraphLaunch")

    def event(self):
        ev = ctypes.c_void_p()
        self.check(self.cu.cuEventCreate(ctypes.byref(ev), 0), "cuEventCreate")
        return ev

    def sync(self):
        self.check(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")

    def time_us(self, run, cold, batch, flush, flush_bytes, samples=SAMPLES, warmup=10,
                batched=None, hold=False):
        """Median µs per launch of `run`: `batch` launches between one event pair per sample
        (`batched`, where given, enqueues them all at once: a graph's replay; `hold`: the stream
        held while they are queued); cold: the flush buffer read first (untimed), as the
        daemon's cold samples do."""
        for _ in range(warmup):
            run()
        self.sync()
        times = []

        def sample():
            self.check(self.cu.cuEventRecord(self.start, None), "cuEventRecord")
            if batched:
                batched()
            else:
                for _ in range(batch):
                    run()
            self.check(self.cu.cuEventRecord(self.stop, None), "cuEventRecord")

        for i in range(samples):
            if cold:
                self.flush(flush, flush_bytes)
            if hold:
                self.held(sample)
            else:
                sample()
            self.check(self.cu.cuEventSynchronize(self.stop), "cuEventSynchronize")
            ms = ctypes.c_float()
            self.check(self.cu.cuEventElapsedTime(ctypes.byref(ms), self.start, self.stop),
                       "cuEventElapsedTime")
            times.append(ms.value * 1000.0 / batch)
        return statistics.median(times)


def raw_triad_us(cuda, n, cold, batch, flush, flush_bytes):
    """The triad source compiled by NVRTC and timed by the plainest loop."""
    triad = cuda.compile(TRIAD_SOURCE, "triad")
    a, b, c = (cuda.alloc(4 * n) for _ in range(3))
    try:
        for p in (b, c):
            cuda.memset(p, 0x3C, 4 * n)  # ~0.0117 as floats: finite inputs
        args = [ctypes.c_uint64(a), ctypes.c_uint64(b), ctypes.c_uint64(c), ctypes.c_float(3.0),
                ctypes.c_int(n)]
        grid = (n + 255) // 256
        run = lambda: cuda.launch(triad, grid, 256, args)
        held = cuda.time_us(run, cold, batch, flush, flush_bytes, hold=True)
        if batch == 1:
            return held, None
        graph = cuda.graph(lambda st: [cuda.launch(triad, grid, 256, args, st)
                                       for _ in range(batch)])
        replayed = cuda.time_us(run, cold, batch, flush, flush_bytes,
                                batched=lambda: cuda.replay(graph))
        return held, replayed
    finally:
        for p in (a, b, c):
            cuda.free(p)


def torch_us(cuda, fn, cold, batch, flush, flush_bytes):
    """A PyTorch op timed as the daemon timed its peer point: CUDA events around `batch` calls
    (PyTorch's current stream is the legacy default stream the events are recorded on), and for
    a cold point also Triton's do_bench, which flushes before each repetition."""
    ours = cuda.time_us(fn, cold, batch, flush, flush_bytes)
    if not cold:
        return ours, "events"
    try:
        from triton.testing import do_bench
        triton = do_bench(fn, warmup=100, rep=500, return_mode="median") * 1000.0
        return ours, f"events; triton do_bench {triton:.2f} us"
    except ImportError:
        return ours, "events; Triton missing"


def custom_triad(n, l2, noise=0.005):
    return {"name": f"bench triad {n}",
            "kernel": {"op": "custom", "source": TRIAD_SOURCE, "entry": "triad",
                       "block": [256, 1, 1], "grid": ["ceil(N/256)", 1, 1],
                       "args": [{"name": "a", "type": "f32*", "count": "N", "output": True},
                                {"name": "b", "type": "f32*", "count": "N"},
                                {"name": "c", "type": "f32*", "count": "N"},
                                {"name": "s", "type": "f32", "value": 3},
                                {"name": "n", "type": "i32", "value": "N"}],
                       "flops": "2*N", "bytes": "12*N"},
            "sweep": {"N": [n]}, "cache": False,
            "timing": {"l2": l2, "target_rel_noise": noise}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--engine", default="hip", choices=["hip", "mock"])
    args = ap.parse_args()
    d = Daemon(args.binary, args.engine)
    try:
        devices = d.call("GET", "/api/v1/devices")["devices"]
        gpu = devices[0]
        sheet = gpu.get("datasheet") or {}
        print(f"device: {gpu['name']} ({gpu['arch']}, {gpu['driver']}), engine {gpu['engine']}")
        # The daemon's cold flush: twice the caches, at least 64 MiB.
        flush_bytes = max(2 * (gpu.get("l2_bytes", 0) + gpu.get("llc_bytes", 0)), 64 << 20)

        cuda = flush = None
        if args.engine == "mock":
            print("raw loop and PyTorch peers: none against simulated timings")
        else:
            try:
                cuda = Cuda(args.binary)
                flush = cuda.alloc(flush_bytes)
                print(f"raw loop: NVRTC {cuda.nvrtc_path}, {cuda.arch}")
            except CudaError as e:
                print(f"raw loop and PyTorch peers: {e}")

        print("\n(a) the daemon against a raw event loop of the same source and against PyTorch,"
              " measured alike")
        for n, l2 in ((1 << 24, "cold"), (1 << 24, "hot"), (1 << 20, "hot")):
            _, rows, _ = d.run(custom_triad(n, l2))
            ours, batch = rows[0]["time_us"]["median"], rows[0]["batch"]
            t = rows[0]["time_us"]
            line = (f"  triad N=2^{n.bit_length() - 1} {l2:4}: daemon {ours:9.2f} us "
                    f"(batch {batch}, p5-p95 {t['p5']:.2f}-{t['p95']:.2f}, {rows[0]['samples']} samples)")
            if cuda:
                raw, replayed = raw_triad_us(cuda, n, l2 == "cold", batch, flush, flush_bytes)
                line += (f", raw loop {raw:9.2f} us (batch {batch}, held stream), difference "
                         f"{pct(ours, raw):+6.2f}% (target within 2%)")
                if replayed is not None:
                    line += (f"; the raw batch as a CUDA graph {replayed:.2f} us "
                             f"({pct(ours, replayed):+.2f}%)")
            print(line)
        try:
            import torch
            if not cuda:
                raise ImportError("no CUDA for the peer loop")
            n = 1 << 26
            a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
            for l2 in ("cold", "hot"):
                _, rows, _ = d.run({"kernel": {"op": "stream", "variant": "triad", "n": n},
                                    "sweep": {}, "cache": False, "timing": {"l2": l2}})
                ours, batch = rows[0]["time_us"]["median"], rows[0]["batch"]
                peer, how = torch_us(cuda, lambda: torch.add(b, c, alpha=3.0, out=a),
                                     l2 == "cold", batch, flush, flush_bytes)
                print(f"  stream triad 2^26 {l2:4}: daemon {ours:.2f} us (batch {batch}), PyTorch "
                      f"add(alpha) {peer:.2f} us ({how}), difference {pct(ours, peer):+.2f}% "
                      f"(different kernels)")
            m = 4096
            x, y = (torch.rand(m, m, device="cuda", dtype=torch.float16) for _ in range(2))
            for l2 in ("cold", "hot"):
                _, rows, _ = d.run({"kernel": {"op": "gemm", "m": m, "n": m, "k": m,
                                               "dtype": "f16", "impl": "library"},
                                    "sweep": {}, "cache": False, "timing": {"l2": l2}})
                ours, batch = rows[0]["time_us"]["median"], rows[0]["batch"]
                peer, how = torch_us(cuda, lambda: torch.matmul(x, y), l2 == "cold", batch,
                                     flush, flush_bytes)
                print(f"  gemm f16 4096^3 library {l2:4}: daemon {ours:.2f} us (batch {batch}), "
                      f"torch.matmul {peer:.2f} us ({how}), difference {pct(ours, peer):+.2f}% "
                      f"(target within 2%)")
        except ImportError as e:
            print(f"  no PyTorch comparison: {e}")

        print("\n(b) time to converge at 0.5% noise, a ~5 us kernel (hot)")
        for n in (1 << 18, 1 << 19):
            _, rows, wall = d.run(custom_triad(n, "hot"))
            r = rows[0]
            print(f"  triad N=2^{n.bit_length() - 1}: median {r['time_us']['median']:.2f} us, "
                  f"sampling {r['sampling_ms'] / 1000:.3f} s (target <= 0.3 s), {r['samples']} "
                  f"samples x batch {r['batch']}, rel noise {r['time_us']['rel_noise'] * 100:.3f}%, "
                  f"converged {r['converged']}; whole job {wall:.2f} s")

        print("\n(c) ceilings against the datasheet")
        _, rows, _ = d.run({"kernel": {"op": "gemm", "m": 8192, "n": 8192, "k": 8192,
                                       "dtype": "f16", "impl": "library"},
                            "sweep": {}, "cache": False, "verify": {"trials": 1}})
        tf = rows[0]["metrics"]["tflops"]
        peak = sheet.get("f16_tflops", 0)
        print(f"  library f16 gemm 8192^3 (cold): {tf:.1f} TFLOP/s"
              + (f" = {100 * tf / peak:.1f}% of the datasheet's {peak} (target >= 70%)" if peak else ""))
        _, rows, _ = d.run({"kernel": {"op": "stream", "variant": "triad", "n": 1 << 28},
                            "sweep": {}, "cache": False})
        bw = rows[0]["metrics"]["gbps"]
        peak_bw = sheet.get("bandwidth_gbps", 0)
        print(f"  stream triad 2^28 f32 (cold): {bw:.0f} GB/s"
              + (f" = {100 * bw / peak_bw:.1f}% of the datasheet's {peak_bw} (target >= 80%)" if peak_bw else ""))
        measured = gpu.get("measured")
        if measured:
            print(f"  the device's measured roofline: {json.dumps(measured)}")

        print("\n(d) the triad against itself as the point's baseline (fitness.baseline), timed "
              "alike -- target: speedup 1.00 within 2%")
        for n, l2 in ((1 << 20, "hot"), (1 << 18, "hot"), (1 << 24, "cold")):
            spec = custom_triad(n, l2)
            kernel = spec["kernel"]
            spec["fitness"] = {"baseline": dict(kernel)}
            kernel["reference"] = {k: kernel[k] for k in ("op", "source", "entry", "block", "grid")}
            _, rows, _ = d.run(spec)
            r = rows[0]
            f = r.get("fitness") or {}
            speedup = f.get("speedup")
            print(f"  triad N=2^{n.bit_length() - 1} {l2:4}: candidate {r['time_us']['median']:.2f} us, "
                  f"baseline {f.get('baseline_us') or 0:.2f} us, batch {r['batch']}, speedup "
                  + (f"{speedup:.3f} ({100 * (speedup - 1):+.2f}%)" if speedup else "none"))
    finally:
        d.stop()
        if os.environ.get("KEEP_LOG"):
            print(d.read_log())


if __name__ == "__main__":
    sys.exit(main())
