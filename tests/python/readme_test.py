"""The README's shell examples, run as written against a real daemon.

Every command in README.md's fenced `sh`/`bash` blocks is either run here or listed in SKIPPED
with the reason; a command that is neither fails the test, so a new example cannot go
unchecked. Each command that runs must match exactly one entry of CHECKS, which says what its
answer must be (HTTP status, exit code, the shape the README shows). The README's own example
outputs (the result rows, the fitness summary, the reports of `kernelscan submit --wait` and
`kernelscan results`) are compared with what the commands print: exactly where the output is
deterministic, else by shape (the same lines, keys and words, numbers aside).

The blocks run in README order on one daemon with two mock MI300X devices, fresh, so job ids
come out as the README numbers them. What the test substitutes, and nothing else:

- `localhost:8080` is the daemon's address (a free port picked at start); `kernelscan` is the
  built binary, with KERNELSCAN_SERVER set to that address;
- `/jobs/1` and `kernelscan results 1` mean the job the same block submitted, else the
  README's first job (1);
- `<next_cursor from the previous page>` is the `next_cursor` of `GET /api/v1/jobs?limit=1`;
- `curl -N` (an event stream, which never ends) gets `--max-time 3`;
- the files the examples read are written to the working directory first: `job.json` (the
  spec of the README's first example, taken from the README), `results.json`,
  `kernel_trace.csv` and `kern_sum.csv` (samples of each import format: the trace is the one
  the README's import row and report come from), `matmul.cl` (the two kernels the
  `kernelscan bench` example measures), `axpy.hip` (the candidate `kernelscan evaluate`
  submits) and `token`;
- commands run in a temporary directory where `api/` is the repository's (the README's commands
  run from the repository root);
- the example under "Access and safety" runs against a second daemon started with
  `--token-file token`, and those in the section "The OpenCL engine" against a third started with
  `--engine opencl` (its job ids count from 1 again).

Every `curl` runs through a wrapper that also writes the HTTP status to stderr.

With --postgres every daemon runs on a PostgreSQL database of its own (daemon_process.py), so
the README holds on both stores.

Run: python3 -B tests/python/readme_test.py --binary build/server/kernelscan [--postgres] [-v]
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import daemon_process
from daemon_process import ROOT, Daemon, clean_env, main

README = ROOT / "README.md"

# Commands the test does not run, by how they start, and why.
SKIPPED = [
    ("deploy/run.sh", "installs packages and builds: the test runs the build it is given"),
    ("deploy/test.sh", "installs packages, builds and runs every test, this one included"),
    ("python openevolve-run.py", "needs OpenEvolve, which is not installed here"),
    ("build/tests/bench/", "a benchmark: minutes of load, run by hand"),
    ("node tests/browser/dashboard_test.mjs", "the dashboard benchmark: run by hand"),
    ("kernelscan serve", "starts a daemon: the test runs its own, with the same --engine"),
    ("sudo -u postgres", "creates a role and a database in the machine's PostgreSQL"),
    ("deploy/fleet.sh", "a PostgreSQL and 3 daemons on fixed ports: the fleet tests pick theirs"),
]

TOKEN = "readme-example-token-0123456789"

# The candidate `kernelscan evaluate` submits to the README's task: the source its curl sends.
AXPY_HIP = """\
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + s * b[i];
}
"""

# The kernels the `kernelscan bench` example measures: a naive and a tiled matmul in OpenCL C.
MATMUL_CL = """\
__kernel void matmul_naive(__global const float* A, __global const float* B, __global float* C,
                           int M, int N, int K) {
  int col = get_global_id(0), row = get_global_id(1);
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}

#define TILE 16
__kernel void matmul_tiled(__global const float* restrict A, __global const float* restrict B,
                           __global float* restrict C, int M, int N, int K) {
  __local float As[TILE][TILE];
  __local float Bs[TILE][TILE];
  int tx = get_local_id(0), ty = get_local_id(1);
  int col = get_group_id(0) * TILE + tx, row = get_group_id(1) * TILE + ty;
  float acc = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
    int ak = t * TILE + tx, bk = t * TILE + ty;
    As[ty][tx] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
    Bs[ty][tx] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
"""

# The samples the import examples read (tests/support/import_samples.hpp has the same data).
SEED_RESULTS = {
    "config": {"M": 4, "K": 8, "S": 1, "num_experts": 256, "total_experts": 257,
               "unit_size": 64, "gpu": "AMD Instinct MI300X", "dtype": "torch.bfloat16"},
    "components": {
        "hip_topk": {"type": "HIP", "mean_us": 9.87, "std_us": 0.41, "min_us": 9.21,
                     "max_us": 14.08, "p50_us": 9.8, "p95_us": 10.52, "p99_us": 11.93,
                     "bytes_transferred": 2816, "flops_estimated": 2048},
        "triton_append": {"type": "Triton", "mean_us": 6.12, "std_us": 0.22, "min_us": 5.8,
                          "max_us": 8.4, "p50_us": 6.08, "p95_us": 6.44, "p99_us": 7.1,
                          "bytes_transferred": 544, "flops_estimated": 0},
        "ck_sorting": {"type": "CK", "mean_us": 14.3, "std_us": 0.9, "min_us": 13.1,
                       "max_us": 21.7, "p50_us": 14.1, "p95_us": 15.6, "p99_us": 18.2,
                       "bytes_transferred": 199124, "flops_estimated": 288},
    },
    "full_pipeline": {"mean_us": 31.2, "std_us": 1.3, "min_us": 29.4, "max_us": 40.9,
                      "p50_us": 30.9, "p95_us": 33.5, "p99_us": 36.0},
}
GEMM_NAME = "void gemm<float, 64>(float const*, float const*, float*, int, int, int)"
KERNEL_TRACE = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id",'
    '"Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size",'
    '"Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X",'
    '"Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"\r\n'
    '"KERNEL_DISPATCH","Agent 4",1,0,74441,1,33,"__amd_rocclr_fillBufferAligned",119662,'
    "1614963487781917,1614963487785917,0,0,12,4,48,256,1,1,256,1,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,2,18,"{GEMM_NAME}",120,'
    "1614963488155186,1614963488167186,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,3,18,"{GEMM_NAME}",121,'
    "1614963488170000,1614963488184000,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,4,18,"{GEMM_NAME}",122,'
    "1614963488190000,1614963488203000,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,5,18,"{GEMM_NAME}",123,'
    "1614963488210000,1614963488223000,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,6,18,"{GEMM_NAME}",124,'
    "1614963488228000,1614963488240000,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,7,18,"{GEMM_NAME}",125,'
    "1614963488245000,1614963488259000,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
    f'"KERNEL_DISPATCH","Agent 4",1,0,74441,8,18,"{GEMM_NAME}",126,'
    "1614963488264000,1614963488277000,1024,0,64,0,32,256,1,1,16384,64,1\r\n"
)
KERN_SUM = (
    "Generating SQLite file report.sqlite from report.nsys-rep\n"
    "\n"
    " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n"
    "\n"
    '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
    '"StdDev (ns)","Name"\n'
    '"91.2","182400","4","45600.0","45500.0","45000","46400","600.0","ampere_sgemm_128x64_nn"\n'
    '"8.8","17600","4","4400.0","4400.0","4300","4500","80.0","void reduce<float, 256>(float*, '
    'int)"\n'
)


# ---------------------------------------------------------------------------- the README


@dataclass
class Command:
    line: int  # where it starts in README.md
    text: str  # as written, continuation lines joined by newlines

    def __str__(self) -> str:
        return f"README.md:{self.line}: {self.text.splitlines()[0]}"


@dataclass
class Block:
    line: int
    lang: str
    text: str
    before: str  # the README text since the previous block, to find a block by what says it


def blocks(readme: str) -> list[Block]:
    """Every fenced block (indented ones too), with the text that precedes it."""
    out: list[Block] = []
    lines = readme.splitlines()
    i, last_end = 0, 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        body, j = [], i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        out.append(Block(i + 1, lang, "\n".join(body), "\n".join(lines[last_end:i])))
        i = last_end = j + 1
    return out


def commands(block: Block) -> list[Command]:
    """The block's commands: lines joined while a quote is open or a line ends in `\\` or `|`;
    comment lines dropped."""
    out: list[Command] = []
    pending: list[str] = []
    start = 0
    for n, raw in enumerate(block.text.splitlines()):
        if not pending and (not raw.strip() or raw.strip().startswith("#")):
            continue
        if not pending:
            start = block.line + 1 + n
        pending.append(raw.strip() if not pending else raw)
        text = "\n".join(pending)
        try:
            words = shlex.split(text, comments=True)
        except ValueError:  # a quote still open
            continue
        if words and words[-1] in ("\\", "|") or text.rstrip().endswith(("\\", "|")):
            continue
        out.append(Command(start, text))
        pending = []
    assert not pending, f"README.md:{start}: a command never ends: {pending}"
    return out


def block_after(readme_blocks: list[Block], says: str) -> Block:
    """The block right after the README text `says`."""
    found = [b for b in readme_blocks if says in b.before]
    assert len(found) == 1, f"{len(found)} blocks follow {says!r} in README.md"
    return found[0]


# ---------------------------------------------------------------------------- comparisons


def shape(value: Any, path: str = "") -> dict[str, str]:
    """{path: kind} of every leaf and container, numbers all one kind."""
    kinds: dict[str, str] = {}
    if isinstance(value, dict):
        kinds[path or "."] = "object"
        for k, v in value.items():
            kinds.update(shape(v, f"{path}.{k}"))
    elif isinstance(value, list):
        kinds[path or "."] = "array"
        for i, v in enumerate(value):
            kinds.update(shape(v, f"{path}[{i}]"))
    elif isinstance(value, bool):
        kinds[path] = "boolean"
    elif isinstance(value, (int, float)):
        kinds[path] = "number"
    elif value is None:
        kinds[path] = "null"
    else:
        kinds[path] = "string"
    return kinds


def words(value: Any, path: str = "") -> dict[str, Any]:
    """{path: value} of every leaf that is not a number: what a README example must get
    right whatever the noise."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(words(v, f"{path}.{k}"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(words(v, f"{path}[{i}]"))
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        out[path] = value
    return out


def text_shape(text: str) -> list[list[str]]:
    """Each line's words with every word holding a digit as `#`: a report's layout without its
    measurements."""
    return [["#" if re.search(r"\d", w) else w for w in line.split()] for line in
            text.strip("\n").splitlines()]


def measured_like(t: unittest.TestCase, got: str, shown: str, what: str) -> None:
    """`got` has `shown`'s layout and words, and its figures within 3% of those shown (the mock's
    noise is seeded per job, so medians differ slightly; a confidence interval's half width,
    `±...`, is left out: it varies by tens of percent)."""
    t.assertEqual(text_shape(got), text_shape(shown), what)
    for got_line, shown_line in zip(got.strip("\n").splitlines(), shown.strip("\n").splitlines()):
        for g, w in zip(got_line.split(), shown_line.split()):
            if w.startswith("±") or not re.search(r"\d", w):
                continue
            gm = re.fullmatch(r"(\d+(?:\.\d+)?)(%|x|:|,)?", g)
            wm = re.fullmatch(r"(\d+(?:\.\d+)?)(%|x|:|,)?", w)
            if not gm or not wm:
                continue
            a, b = float(gm.group(1)), float(wm.group(1))
            t.assertLessEqual(abs(a - b), 0.03 * max(abs(b), 1e-9),
                              f"{what}: {g} where the README shows {w} in\n{got_line}")


# ---------------------------------------------------------------------------- running


@dataclass
class Run:
    command: Command
    ran: str  # the command after substitution
    exit_code: int
    stdout: str
    stderr: str
    statuses: list[int] = field(default_factory=list)  # HTTP statuses curl saw, in order

    def json(self) -> Any:
        return json.loads(self.stdout)

    def describe(self) -> str:
        return (f"{self.command}\nran: {self.ran}\nexit {self.exit_code}, HTTP {self.statuses}"
                f"\n--- stdout\n{self.stdout[:3000]}\n--- stderr\n{self.stderr[:2000]}")


class ReadmeExamplesTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls) -> None:
        for tool in ("curl", "jq"):
            if not shutil.which(tool):
                raise RuntimeError(f"{tool} is not installed (deploy/common.sh installs it): the "
                                   "README's examples use it")
        cls.readme = README.read_text()
        cls.blocks = blocks(cls.readme)
        cls.work = Path(tempfile.mkdtemp(prefix="kernelscan-readme-"))
        bin_dir = cls.work / "bin"
        bin_dir.mkdir()
        (bin_dir / "kernelscan").symlink_to(Path(daemon_process.BINARY).resolve())
        (cls.work / "api").symlink_to(ROOT / "api")  # commands run from the repository root
        wrapper = bin_dir / "curl"
        wrapper.write_text("#!/bin/sh\nexec " + shlex.quote(shutil.which("curl")) +
                           " -w '%{stderr}readme-test-http-status %{http_code}\\n' \"$@\"\n")
        wrapper.chmod(0o755)
        cls.daemon = Daemon(mock_devices=2)
        (cls.work / "token").write_text(TOKEN + "\n")
        cls.token_daemon = Daemon("--token-file", str(cls.work / "token"))
        cls.opencl_daemon = Daemon(engine="opencl")
        try:
            cls.daemon.start()
            cls.token_daemon.start()
            cls.opencl_daemon.start()
        except BaseException:
            cls.tearDownClass()
            raise
        cls.env = clean_env(KERNELSCAN_SERVER=cls.daemon.url,
                            PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.stop()
        cls.token_daemon.stop()
        cls.opencl_daemon.stop()
        shutil.rmtree(cls.work, ignore_errors=True)

    def write_files(self, first_spec: str) -> None:
        (self.work / "job.json").write_text(first_spec)
        (self.work / "results.json").write_text(json.dumps(SEED_RESULTS))
        (self.work / "kernel_trace.csv").write_text(KERNEL_TRACE, newline="")
        (self.work / "kern_sum.csv").write_text(KERN_SUM)
        (self.work / "matmul.cl").write_text(MATMUL_CL)
        (self.work / "axpy.hip").write_text(AXPY_HIP)

    def run_command(self, command: Command, text: str, daemon: Daemon) -> Run:
        text = text.replace("localhost:8080", f"127.0.0.1:{daemon.port}")
        done = subprocess.run(["bash", "-c", text], cwd=self.work, env=self.env, text=True,
                              capture_output=True, timeout=180)
        statuses = [int(s) for s in
                    re.findall(r"^readme-test-http-status (\d+)$", done.stderr, re.MULTILINE)]
        stderr = re.sub(r"^readme-test-http-status \d+\n", "", done.stderr, flags=re.MULTILINE)
        return Run(command, text, done.returncode, done.stdout, stderr, statuses)

    examples_ran = False

    def test_0_the_contract_is_valid_yaml(self) -> None:
        """api/openapi.yaml, which the README points to, parses (a ': ' in a plain scalar does
        not), names no key twice in one mapping (YAML keeps the last silently: a property whose
        name line was lost takes its neighbour's type), and every object schema's required
        members are among its properties."""
        import yaml  # python3-yaml (deploy/common.sh)

        class StrictLoader(yaml.SafeLoader):
            pass

        def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
            keys = [loader.construct_object(k, deep=deep) for k, _ in node.value]
            twice = sorted({str(k) for k in keys if keys.count(k) > 1})
            if twice:
                raise yaml.constructor.ConstructorError(
                    None, None, f"keys {twice} twice in one mapping", node.start_mark)
            return yaml.SafeLoader.construct_mapping(loader, node, deep)

        StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
        contract = yaml.load((ROOT / "api" / "openapi.yaml").read_text(), Loader=StrictLoader)
        self.assertIn("/api/v1/jobs", contract["paths"])

        missing: list[str] = []

        def walk(node: object, where: str) -> None:
            if isinstance(node, dict):
                required, properties = node.get("required"), node.get("properties")
                if isinstance(required, list) and isinstance(properties, dict):
                    missing.extend(f"{where}: {name}" for name in required
                                   if name not in properties)
                for key, value in node.items():
                    walk(value, f"{where}/{key}")
            elif isinstance(node, list):
                for i, value in enumerate(node):
                    walk(value, f"{where}[{i}]")

        walk(contract, "")
        self.assertEqual(missing, [], "required members that are not properties")

    def test_0_the_daemons_run_on_the_store_this_run_asked_for(self) -> None:
        for daemon in (self.daemon, self.token_daemon, self.opencl_daemon):
            self.assertIn(daemon_process.store_log_line(), daemon.log())

    def test_1_every_shell_example_works_as_the_readme_says(self) -> None:
        self.run_examples()

    def run_examples(self) -> None:
        """Runs every example once per daemon (the outputs test needs the jobs they create)."""
        if ReadmeExamplesTest.examples_ran:
            return
        ReadmeExamplesTest.examples_ran = True
        shell = [b for b in self.blocks if b.lang in ("sh", "bash")]
        self.assertGreater(len(shell), 5)
        first_spec = None
        skipped, ran = [], []
        first_job: int | None = None
        section = ""  # the README section ("## ...") a block is in
        for block in self.blocks:
            headings = re.findall(r"^## (.+)$", block.before, re.MULTILINE)
            section = headings[-1] if headings else section
            if block.lang not in ("sh", "bash"):
                continue
            block_job: int | None = None
            opencl = section == "The OpenCL engine"
            for command in commands(block):
                reason = next((why for start, why in SKIPPED if command.text.startswith(start)),
                              None)
                if reason is not None:
                    skipped.append(f"{command}  ({reason})")
                    continue
                matching = [c for c in CHECKS if re.search(c.pattern, command.text)]
                if len(matching) != 1:
                    with self.subTest(example=str(command)):
                        self.fail(f"matches {len(matching)} checks: each example needs exactly "
                                  "one entry in CHECKS (tests/python/readme_test.py)")
                    continue
                check = matching[0]
                if first_spec is None:
                    m = re.search(r"-d '(\{.*\})'", command.text, re.DOTALL)
                    self.assertIsNotNone(m, f"{command}: the first example submits a spec")
                    first_spec = m.group(1)
                    self.write_files(first_spec)
                job = block_job or first_job or 1
                text = re.sub(r"/jobs/1(?=[/?'\"\s]|$)", f"/jobs/{job}", command.text)
                text = re.sub(r"^kernelscan results 1\b", f"kernelscan results {job}", text)
                if "<next_cursor from the previous page>" in text:
                    cursor = self.daemon.get_json("/api/v1/jobs?limit=1")["next_cursor"]
                    self.assertIsNotNone(cursor, "no second page to follow")
                    text = text.replace("<next_cursor from the previous page>", cursor)
                text = text.replace("curl -N ", "curl -N --max-time 3 ")
                daemon = (self.opencl_daemon if opencl else
                          self.token_daemon if "Authorization: Bearer" in text else self.daemon)
                run = self.run_command(command, text, daemon)
                ran.append(str(command))
                with self.subTest(example=str(command)):
                    check.verify(self, run)
                submitted = check.submits(run)
                if submitted is not None and daemon is not self.token_daemon:
                    block_job = submitted
                if submitted is not None and daemon is self.daemon:
                    first_job = first_job or submitted
        print(f"\nran {len(ran)} README examples; did not run {len(skipped)}:")
        for s in skipped:
            print("  " + s)
        self.assertGreaterEqual(len(ran), 25)

    # The README's shown outputs against what the commands print (after the examples ran, the
    # jobs they show exist: 1 the gemm sweep, 3 the kernel trace import).

    def test_2_shown_outputs_match_what_the_code_prints(self) -> None:
        self.run_examples()
        # A gemm result row: the same members, and the same words.
        shown = json.loads(block_after(self.blocks, "A result row (numbers shortened").text)
        row = self.daemon.get_json("/api/v1/jobs/1/results")["results"][0]
        self.assertEqual(sorted(shape(shown)), sorted(shape(row)))
        self.assertEqual(words(shown), words(row))
        # The import row: every member and, rounded as shown, every number.
        shown = json.loads(block_after(self.blocks, "A row from the trace").text)
        row = self.daemon.get_json("/api/v1/jobs/3/results")["results"][0]
        self.assertEqual(shape(shown), shape(row))
        self.assertEqual(words(shown), words(row))
        for path, value in _numbers(shown).items():
            # As rounded in the README: within half a unit of its last digit.
            text = repr(value)
            decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
            self.assertAlmostEqual(_numbers(row)[path], value, delta=0.5 * 10**-decimals + 1e-12,
                                   msg=path)
        # The import report, exactly.
        shown = block_after(self.blocks, "and `kernelscan results 3`").text
        report = subprocess.run(["kernelscan", "results", "3"], env=self.env, text=True,
                                capture_output=True, timeout=60)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertEqual(report.stdout.strip("\n"), shown.strip("\n"))
        # The report of the job `kernelscan submit job.json --wait` created (6, as the README
        # says): its layout, words and figures.
        shown = block_after(self.blocks, "`kernelscan submit job.json --wait` with the gemm").text
        report = subprocess.run(["kernelscan", "results", "6"], env=self.env, text=True,
                                capture_output=True, timeout=60)
        measured_like(self, report.stdout, shown.split("\n\n", 1)[1], "kernelscan results 6")


def _numbers(value: Any, path: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(_numbers(v, f"{path}.{k}"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(_numbers(v, f"{path}[{i}]"))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[path] = float(value)
    return out


# ---------------------------------------------------------------------------- what each example
# must answer


@dataclass
class Check:
    pattern: str  # a regular expression that finds the example
    verify: Callable[[unittest.TestCase, Run], None]
    # The id of the job the example created, for the examples after it in its block.
    submits: Callable[[Run], int | None] = lambda run: None


def _http(t: unittest.TestCase, run: Run, *statuses: int) -> None:
    t.assertEqual(run.statuses, list(statuses), run.describe())


def _ok_json(t: unittest.TestCase, run: Run, status: int = 200) -> Any:
    _http(t, run, status)
    t.assertEqual(run.exit_code, 0, run.describe())
    try:
        return run.json()
    except ValueError:
        t.fail("not JSON: " + run.describe())


def _job_id(run: Run) -> int | None:
    try:
        return int(run.json()["id"])
    except (ValueError, KeyError, TypeError):
        return None


def _cli_job_id(run: Run) -> int | None:
    m = re.match(r"job (\d+) ", run.stdout)
    return int(m.group(1)) if m else None


def _submitted_gemm(t: unittest.TestCase, run: Run) -> None:
    job = _ok_json(t, run, 201)
    t.assertEqual((job["name"], job["status"], job["op"]), ("f16 gemm", "queued", "gemm"))
    t.assertEqual(job["progress"], {"done": 0, "total": 12, "ok": 0, "failed": 0})
    t.assertEqual(job["spec"]["timing"]["warmup"], 3, "the spec with every default filled in")


def _waited(t: unittest.TestCase, run: Run) -> None:
    job = _ok_json(t, run)
    t.assertEqual(job["status"], "succeeded", run.describe())
    t.assertEqual(job["progress"], {"done": 12, "total": 12, "ok": 12, "failed": 0})
    best = job["summary"]["best"]
    t.assertEqual(set(best), {"index", "params", "median_us"})
    t.assertEqual(set(best["params"]), {"M", "N"})


def _results(t: unittest.TestCase, run: Run) -> None:
    page = _ok_json(t, run)
    t.assertEqual(set(page), {"job_id", "status", "progress", "results"})
    t.assertEqual([r["index"] for r in page["results"]], list(range(12)))


def _csv(t: unittest.TestCase, run: Run) -> None:
    _http(t, run, 200)
    lines = run.stdout.splitlines()
    t.assertTrue(lines[0].startswith("M,N,index,status,"), lines[0])
    t.assertEqual(len(lines), 13, run.describe())


def _jsonl_page(t: unittest.TestCase, run: Run) -> None:
    _http(t, run, 200)
    t.assertEqual(run.stdout, "", "a 12-point job has no rows from offset 100")


def _fields(t: unittest.TestCase, run: Run) -> None:
    rows = _ok_json(t, run)["results"]
    t.assertEqual(len(rows), 12)
    for row in rows:
        t.assertEqual(set(row), {"index", "params", "time_us", "metrics"})
        t.assertEqual(set(row["time_us"]), {"median"})
        t.assertEqual(set(row["metrics"]), {"tflops"})


def _import(fmt: str, kernels: int) -> Callable[[unittest.TestCase, Run], None]:
    def verify(t: unittest.TestCase, run: Run) -> None:
        job = _ok_json(t, run, 201)
        t.assertEqual((job["status"], job["op"], job["engine"], job["device"]),
                      ("succeeded", "import", "import", None), run.describe())
        t.assertEqual(job["spec"]["import"]["format"], fmt)
        t.assertEqual(job["progress"]["done"], kernels)
        t.assertEqual(job["progress"]["total"], kernels)
        t.assertIsNotNone(job["summary"]["best"])
    return verify


def _listed(t: unittest.TestCase, run: Run) -> None:
    page = _ok_json(t, run)
    t.assertEqual(set(page), {"jobs", "next_cursor"})
    for job in page["jobs"]:
        t.assertNotIn("spec", job)


def _next_page(t: unittest.TestCase, run: Run) -> None:
    page = _ok_json(t, run)
    t.assertEqual(set(page), {"jobs", "next_cursor"})
    t.assertTrue(page["jobs"], "the page after the newest job lists the older ones")


def _cancel_finished(t: unittest.TestCase, run: Run) -> None:
    _http(t, run, 409)
    t.assertEqual(run.json(), {"error": {"type": "job_finished", "message": "job 1 already "
                                         "succeeded", "job_id": 1, "job_status": "succeeded"}})


def _deleted(t: unittest.TestCase, run: Run) -> None:
    _http(t, run, 204)
    t.assertEqual(run.stdout, "", run.describe())
    url = f"{ReadmeExamplesTest.daemon.url}/api/v1/jobs/2"
    with t.assertRaises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(url, timeout=60)
    t.assertEqual(gone.exception.code, 404)


def _devices(t: unittest.TestCase, run: Run) -> None:
    devices = _ok_json(t, run)["devices"]
    t.assertEqual(len(devices), 2)
    for d in devices:
        t.assertEqual(d["engine"], "mock")
        t.assertIn("datasheet", d)
        t.assertIn("measured", d)


def _text(status: int, contains: str) -> Callable[[unittest.TestCase, Run], None]:
    def verify(t: unittest.TestCase, run: Run) -> None:
        _http(t, run, status)
        t.assertIn(contains, run.stdout, run.describe())
    return verify


def _fitness_summary(t: unittest.TestCase, run: Run) -> None:
    # The README shows the answer in the comment after the command.
    _http(t, run, 200)
    got = json.loads(run.stdout)
    block = block_after(ReadmeExamplesTest.blocks, "every flag raised.").text
    comment = " ".join(line.lstrip("# ") for line in block.splitlines() if line.startswith("#"))
    shown = json.loads(comment[comment.index("{"):])
    t.assertEqual(shape(got), shape(shown))
    t.assertEqual(words(got), words(shown))


def _cli_submit_wait(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    shown = block_after(ReadmeExamplesTest.blocks,
                        "`kernelscan submit job.json --wait` with the gemm").text
    measured_like(t, run.stdout, shown, run.describe())


def _cli(exit_code: int, pattern: str) -> Callable[[unittest.TestCase, Run], None]:
    def verify(t: unittest.TestCase, run: Run) -> None:
        t.assertEqual(run.exit_code, exit_code, run.describe())
        t.assertRegex(run.stdout, pattern, run.describe())
    return verify


def _cli_jobs(t: unittest.TestCase, run: Run) -> None:
    # The jobs the two submits before it created may still be queued or running (served from
    # the result cache, but after the answer): none, or a table of such jobs only.
    t.assertEqual(run.exit_code, 0, run.describe())
    if run.stdout == "no jobs\n":
        return
    lines = run.stdout.splitlines()
    t.assertEqual(lines[0].split(), ["id", "status", "progress", "device", "name", "labels", "age"])
    for line in lines[1:]:
        t.assertIn(line.split()[1], ("queued", "running"), run.describe())
        t.assertIn("team=perf", line, run.describe())


def _cli_csv(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    job = _cli_job_id_from_text(run.ran)
    url = f"{ReadmeExamplesTest.daemon.url}/api/v1/jobs/{job}/results?format=csv"
    with urllib.request.urlopen(url, timeout=60) as answer:
        t.assertEqual(Path(ReadmeExamplesTest.work, "job1.csv").read_bytes(), answer.read())


def _cli_job_id_from_text(text: str) -> int:
    return int(re.search(r"kernelscan results (\d+)", text).group(1))


def _cli_json(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    page = run.json()
    t.assertEqual(len(page["results"]), 12)


def _cli_cancel(t: unittest.TestCase, run: Run) -> None:
    # Job 7 came from the result cache: finished (409), or still queued or running.
    if run.exit_code == 1:
        t.assertIn("kernelscan: job 7: job_finished (HTTP 409)", run.stderr, run.describe())
    else:
        t.assertEqual(run.exit_code, 0, run.describe())
        t.assertRegex(run.stdout, r"^job 7 (cancelled|cancelling: .*)\n$", run.describe())


def _cli_delete(t: unittest.TestCase, run: Run) -> None:
    # Job 7, cancelled above, has ended by now: its mock point ended in milliseconds, while the
    # roofline measured since took longer.
    t.assertEqual(run.exit_code, 0, run.describe())
    t.assertEqual(run.stdout, "job 7 deleted\n", run.describe())


def _cli_delete_filtered(t: unittest.TestCase, run: Run) -> None:
    # Nothing failed a week ago on a daemon started minutes ago: the dry run lists nothing.
    t.assertEqual(run.exit_code, 0, run.describe())
    t.assertEqual(run.stdout, "no job that ended matches\n", run.describe())


def _cli_devices(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    lines = run.stdout.splitlines()
    t.assertEqual(lines[0].split(), ["index", "engine", "type", "device", "state", "job",
                                     "points"])
    t.assertEqual(len(lines), 3, run.describe())
    for line in lines[1:]:
        t.assertIn("AMD Instinct MI300X (mock)", line, run.describe())


def _cli_roofline(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    lines = run.stdout.splitlines()
    t.assertRegex(lines[0], r"^device 0 \(node [^)]+\): roofline measured at \d{4}-\d\d-\d\dT",
                  run.describe())
    t.assertEqual(lines[1].split(), ["ceiling", "value", "unit"], run.describe())
    t.assertEqual([line.split()[0] for line in lines[2:9]],
                  ["bandwidth", "f64", "f32", "f16", "bf16", "vector", "i8"], run.describe())
    t.assertTrue(lines[9].startswith("method: simulated (mock engine)"), run.describe())


def _cli_compare(t: unittest.TestCase, run: Run) -> None:
    # Job 6 was answered from job 1's results: the same medians at every point.
    t.assertEqual(run.exit_code, 0, run.describe())
    t.assertTrue(run.stdout.startswith("baseline  job 1\njoined on M, N\n"), run.describe())
    t.assertIn("job 6: 1.00x the speed of job 1 (geometric mean over 12 points): 0 faster, "
               "0 slower, 12 the same", run.stdout, run.describe())


def _cli_compare_gate(t: unittest.TestCase, run: Run) -> None:
    # The same medians: no regression.
    t.assertEqual(run.exit_code, 0, run.describe())
    t.assertTrue(run.stdout.endswith("\nno regression past --max-slowdown 5%\n"), run.describe())


def _cli_bench(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    t.assertRegex(run.stdout, r"^job \d+ queued: \"matmul.cl: matmul_naive, matmul_tiled\", "
                  r"custom, 6 points", run.describe())
    t.assertRegex(run.stdout, r"\njob \d+ \"matmul.cl: matmul_naive, matmul_tiled\": succeeded\n",
                  run.describe())
    t.assertIn("kernel  2 variants: matmul_naive, matmul_tiled; baseline matmul_naive\n"
               "device  0: AMD Instinct MI300X (mock)\npoints  6 of 6 measured: 6 ok, 0 failed\n",
               run.stdout, run.describe())
    for n in (128, 256, 512):  # a table per point, a row per kernel
        table = run.stdout.split(f"\nN={n}\n", 1)[1].split("\n\n", 1)[0]
        t.assertRegex(table, r"\n  matmul_naive  ok  ", run.describe())
        t.assertRegex(table, r"\n  matmul_tiled  ok  ", run.describe())
    t.assertRegex(run.stdout, r"\noverall matmul_(naive|tiled): ", run.describe())


def _evaluator(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    metrics = json.loads(run.stdout[: run.stdout.index("\n}") + 2])
    t.assertEqual(metrics["combined_score"], 0.0, "the mock verifies nothing: 0")
    # The task's four public sizes and its held-out one.
    t.assertEqual((metrics["points"], metrics["ok_points"]), (5.0, 5.0))
    t.assertIn("--- simulated\nsimulated: the mock engine measured this job", run.stdout)


def _task_created(t: unittest.TestCase, run: Run) -> None:
    task = _ok_json(t, run, 201)
    t.assertEqual((task["name"], task["status"]), ("axpy", "active"), run.describe())
    t.assertEqual(task["held_out"], {"N": [3000000]}, "the operator sees the held-out sizes")


def _task_read(t: unittest.TestCase, run: Run) -> None:
    task = _ok_json(t, run)
    t.assertEqual(task["sweep"], {"N": [1048576, 16777216]})
    t.assertEqual((task["public_points"], task["held_out_points"]), (2, 1))
    t.assertEqual(task["verify"]["atol"], 1e-4, "f32's default tolerance, stated")
    t.assertEqual(task["submissions"]["per_agent"], 100, "the bound on each agent's submissions")


def _task_submitted(t: unittest.TestCase, run: Run) -> None:
    job = _ok_json(t, run, 201)
    t.assertEqual((job["task"], job["labels"]["task"]), ("axpy", "axpy"), run.describe())
    t.assertEqual(job["progress"]["total"], 3, "two public sizes and a held-out one")
    t.assertEqual(job["spec"]["kernel"]["block"], [128, 1, 1])
    t.assertEqual(job["spec"]["verify"]["trials"], 3, "the task's, not the candidate's")


def _cli_tasks(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    lines = run.stdout.splitlines()
    t.assertEqual(lines[0].split(), ["name", "status", "language", "points", "target",
                                     "submissions", "description"], run.describe())
    t.assertRegex(lines[1], r"^axpy\s+active\s+hip\s+2 \+ 1 held out\s+50 µs\s+1 of 100 in 24 h"
                  r"|^axpy\s+active\s+hip\s+2 \+ 1 held out\s+50 µs\s+100 in 24 h", run.describe())


def _cli_task(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 0, run.describe())
    for line in ("task         axpy: active\n",
                 "             out       f32*  N elements, output (compared with the reference's)\n",
                 "             s         f32   = 3\n",
                 "sizes        N: 1048576, 16777216\n",
                 # This daemon has no tokens: everyone is an operator and sees the held-out sizes.
                 "held out     N: 3000000 (shown to an operator only)\n",
                 "reference    stream triad f32\n",
                 "verify       3 trials, atol 0.0001, rtol 0.0001\n",
                 "fitness      target 50 µs, correctness weight 0.5\n",
                 "submissions  100 per agent in 24 h: 1 used, 99 remaining\n"):
        t.assertIn(line, run.stdout, run.describe())


def _cli_evaluate(t: unittest.TestCase, run: Run) -> None:
    # The mock devices verify nothing: measured at its three sizes, scored 0, exit 1.
    t.assertEqual(run.exit_code, 1, run.describe())
    t.assertRegex(run.stdout, r"^job \d+ queued: \"axpy candidate\", custom, 3 points", run.describe())
    t.assertIn("\nscore   0 (correct at 0 of 3 points; ", run.stdout, run.describe())
    t.assertIn("points  3 of 3 measured: 3 ok, 0 failed, 1 held out (not shown)\n"
               if "held out (not shown)" in run.stdout else "points  3 of 3 measured: 3 ok",
               run.stdout, run.describe())


def _task_score(t: unittest.TestCase, run: Run) -> None:
    _http(t, run, 200)
    t.assertEqual(float(run.stdout), 0.0, "the mock verifies nothing: 0 " + run.describe())


def _opencl_results(t: unittest.TestCase, run: Run) -> None:
    rows = _ok_json(t, run)["results"]
    t.assertEqual(len(rows), 2)
    for row in rows:
        t.assertEqual(row["verification"]["status"], "passed", row)
        # A point beyond PoCL's stored bandwidth is judged by one measured again for it.
        t.assertIn(row["metrics"]["roof_source"], ("measured", "measured_again"), row)
        t.assertGreater(row["time_us"]["median"], 0, row)


def _opencl_capabilities(t: unittest.TestCase, run: Run) -> None:
    _http(t, run, 200)
    caps = json.loads(run.stdout)
    t.assertEqual(sorted(caps), ["fp16", "fp64", "gemm_builtin_dtypes", "gemm_library",
                                 "gemm_library_dtypes"], run.describe())
    t.assertEqual(caps["gemm_library"], "CLBlast", run.describe())
    t.assertEqual("f16" in caps["gemm_library_dtypes"], caps["fp16"], run.describe())
    t.assertIn("f32", caps["gemm_builtin_dtypes"], run.describe())


def _f16_library_gemm(t: unittest.TestCase, run: Run) -> None:
    # The README shows PoCL on an x86 CPU, which has no half arithmetic; a device that has it
    # runs the job.
    if run.statuses == [201]:
        return
    error = _ok_json(t, run, 422)["error"]
    t.assertEqual(error["details"][0]["field"], "kernel.dtype", run.describe())
    t.assertIn("CLBlast there has no f16 GEMM (the device lacks cl_khr_fp16). Use impl "
               "\"builtin\"", error["details"][0]["message"], run.describe())


def _events(t: unittest.TestCase, run: Run) -> None:
    t.assertEqual(run.exit_code, 28, "curl --max-time ends the stream: " + run.describe())
    t.assertEqual(run.statuses, [200], run.describe())
    t.assertRegex(run.stdout, r"event: ready\ndata: \{\"last_event_id\":\d+\}\n")


CHECKS = [
    Check(r"^curl -s -X POST localhost:8080/api/v1/jobs -H 'Content-Type: application/json' "
          r"-d '\{\n  \"name\": \"f16 gemm\"", _submitted_gemm, _job_id),
    Check(r"^curl -s 'localhost:8080/api/v1/jobs/1\?wait=60'\s+#", _waited),
    Check(r"^curl -s 'localhost:8080/api/v1/jobs/1/results'", _results),
    Check(r"format=csv'$", _csv),
    Check(r"format=jsonl&offset=100&limit=50'$", _jsonl_page),
    Check(r"\?fields=index,params,time_us.median,metrics.tflops'$", _fields),
    Check(r"format: \"rocm_profiler\"", _import("rocm_profiler", 4), _job_id),
    Check(r"format: \"rocprofv3_kernel_trace\"", _import("rocprofv3_kernel_trace", 2), _job_id),
    Check(r"format: \"nsys_cuda_gpu_kern_sum\"", _import("nsys_cuda_gpu_kern_sum", 2), _job_id),
    Check(r"jobs\?status=running,queued&label.team=perf&limit=20'$", _listed),
    Check(r"cursor=<next_cursor from the previous page>'$", _next_page),
    Check(r"^curl -s -X POST localhost:8080/api/v1/jobs/1/cancel$", _cancel_finished),
    Check(r"^curl -s -X DELETE localhost:8080/api/v1/jobs/2\s+#", _deleted),
    Check(r"^curl -s localhost:8080/api/v1/devices$", _devices),
    Check(r"^curl -s localhost:8080/healthz", _text(200, '{"status":"ok"}')),
    Check(r"^curl -s localhost:8080/readyz", _text(200, '"status":"ready"')),
    Check(r"^curl -s localhost:8080/metrics", _text(200, "kernelscan_queue_depth ")),
    Check(r"(?s)-d '\{\n  \"kernel\": \{\"op\": \"gemm\", \"m\": \"N\".*\"target_us\": 500\}\}'$",
          lambda t, run: t.assertEqual(_ok_json(t, run, 201)["op"], "gemm"), _job_id),
    Check(r"\?wait=60' \| jq -c .summary.fitness$", _fitness_summary),
    Check(r"^kernelscan submit job.json --wait", _cli_submit_wait, _cli_job_id),
    Check(r"^kernelscan submit - < job.json",
          _cli(0, r"^job \d+ queued: \"f16 gemm\", gemm, 12 points, device any, priority 0\n$")),
    Check(r"^kernelscan submit job.json --idempotency-key nightly-42",
          _cli(0, r"^job \d+ queued: \"f16 gemm\", gemm, 12 points, device any, priority 0\n$")),
    Check(r"^kernelscan jobs --status queued,running --label team=perf --limit 50", _cli_jobs),
    Check(r"^kernelscan results 1\s+#", _cli(0, r"^job \d+ \"f16 gemm\": succeeded\n")),
    Check(r"^kernelscan results 1 --format csv > job1.csv", _cli_csv),
    Check(r"^kernelscan results 1 --format json\s+#", _cli_json),
    Check(r"^kernelscan cancel 7\s+#", _cli_cancel),
    Check(r"^kernelscan devices\s+#", _cli_devices),
    Check(r"^kernelscan roofline 0 --wait\s+#", _cli_roofline),
    Check(r"^kernelscan compare 1 6 --base 1\s+#", _cli_compare),
    Check(r"^kernelscan compare 1 6 --max-slowdown 5\s+#", _cli_compare_gate),
    Check(r"^kernelscan rerun 1\s+#",
          _cli(0, r"^job \d+ queued: \"f16 gemm\", gemm, 12 points, device any, priority 0\n$")),
    Check(r"^kernelscan delete 7\s+#", _cli_delete),
    Check(r"^kernelscan delete --status failed --older-than-days 7 --dry-run", _cli_delete_filtered),
    Check(r"^kernelscan bench matmul.cl matmul_naive matmul_tiled", _cli_bench),
    Check(r"^python3 api/python/examples/openevolve_evaluator.py", _evaluator),
    Check(r"^curl -s -X POST localhost:8080/api/v1/tasks -d", _task_created),
    Check(r"^curl -s localhost:8080/api/v1/tasks/axpy\s+#", _task_read),
    Check(r"/api/v1/tasks/axpy/submissions", _task_submitted, _job_id),
    Check(r"\?wait=60' \| jq \.summary\.fitness\.combined_score$", _task_score),
    Check(r"^kernelscan tasks\s+#", _cli_tasks),
    Check(r"^kernelscan tasks axpy\s+#", _cli_task),
    Check(r"^kernelscan evaluate axpy axpy.hip", _cli_evaluate),
    Check(r"Authorization: Bearer \$\(cat token\)\" -d @job.json$",
          lambda t, run: t.assertEqual(_ok_json(t, run, 201)["name"], "f16 gemm")),
    Check(r"^curl -N localhost:8080/api/v1/events$", _events),
    Check(r"(?s)\"engine\": \"opencl\",\n  \"kernel\": \{\"op\": \"custom\", \"language\": \"opencl\"",
          lambda t, run: t.assertEqual(_ok_json(t, run, 201)["engine"], "opencl"), _job_id),
    Check(r"\?wait=60' \| jq -r .status\s+#", _text(200, "succeeded")),
    Check(r"^curl -s localhost:8080/api/v1/devices/0 \| jq -c .capabilities$",
          _opencl_capabilities),
    Check(r"^curl -s -X POST localhost:8080/api/v1/jobs -d '\{\"engine\": \"opencl\", "
          r"\"kernel\": \{\"op\": \"gemm\"", _f16_library_gemm, _job_id),
    Check(r"results\?fields=params,time_us.median,verification.status,metrics.gbps,"
          r"metrics.roof_source'$", _opencl_results),
]


if __name__ == "__main__":
    main()
