"""An OpenEvolve evaluator that scores candidate HIP matmul kernels with kernelscan.

OpenEvolve calls `evaluate(program_path)` with a file holding one candidate: HIP device code
defining `extern "C" __global__ void matmul(const float* a, const float* b, float* c, int N,
int M, int K)` (C = A x B, f32, row-major; see matmul_candidate.hip). The candidate may carry
one launch line, `// kernelscan: {"block": [...], "grid": [...], "shared_bytes": ...,
"compile_options": [...]}` (one line of JSON), so that evolution can change its tiling; the
default is 16 x 16 blocks over C.

The kernel is submitted as a kernelscan `custom` job over a sweep of sizes, checked against
the built-in GEMM as its reference, and compared with the vendor library's GEMM (rocBLAS or
cuBLAS) of the same sizes as its fitness baseline. The daemon measures, verifies and scores it;
this file only builds the job. `evaluate` returns OpenEvolve's `EvaluationResult` (metrics and
text artifacts: why a score is 0, compiler errors, per-size times and speedups) when OpenEvolve
is importable, else the plain metrics dict; `combined_score` is what evolution maximises.

A spec the daemon refuses for the candidate's own fields (its source, its launch line) scores
0. One refused for any other field (a mistake in this file's template, or an engine the daemon
does not have) raises `kernelscan_client.EvaluatorError`: no candidate is at fault, and
OpenEvolve reports an evaluator that raises rather than recording good programs as worthless.

On a daemon with only mock devices nothing is compiled or run: every point is unverified, so
every candidate scores 0, and the `simulated` artifact says so. Score candidates on a GPU.

Settings, from the environment:

    KERNELSCAN_SERVER        the daemon, default http://127.0.0.1:8080
    KERNELSCAN_TOKEN         its bearer token, if it was started with --token-file
    KERNELSCAN_EVAL_TIMEOUT  seconds to wait for one candidate's job, default 240; keep it below
                             OpenEvolve's evaluator.timeout (default 300), so that a slow job is
                             cancelled and scored 0 here rather than abandoned there
    KERNELSCAN_EVAL_ENGINE   auto (default: a GPU if the daemon has one, else its mock), hip
                             or mock

For OpenEvolve's cascade evaluation, `evaluate_stage1` runs one small size only (a quick
correctness and compile check) and `evaluate_stage2` the whole sweep.

Run it by hand: `python3 openevolve_evaluator.py matmul_candidate.hip` prints the metrics and
artifacts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path

try:
    import kernelscan_client
except ImportError:  # run from a checkout: the client is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import kernelscan_client

# The sizes each candidate is measured at: square and not, and N not a multiple of common tile
# sizes, so that a kernel that ignores edges fails verification.
SWEEP = {"N": [1000, 2048], "M": [1024, 1536], "K": [1024]}
QUICK_SWEEP = {"N": [250], "M": [256], "K": [128]}

ENTRY = "matmul"
ARGS = [
    {"name": "a", "type": "f32*", "count": "N*K", "init": "random"},
    {"name": "b", "type": "f32*", "count": "K*M", "init": "random"},
    {"name": "c", "type": "f32*", "count": "N*M", "output": True},
    {"name": "N", "type": "i32", "value": "N"},
    {"name": "M", "type": "i32", "value": "M"},
    {"name": "K", "type": "i32", "value": "K"},
]
GEMM = {"op": "gemm", "m": "N", "n": "M", "k": "K", "dtype": "f32"}
LAUNCH = {"block": [16, 16, 1], "grid": ["cdiv(M, 16)", "cdiv(N, 16)", 1]}
LAUNCH_KEYS = {"block", "grid", "shared_bytes", "compile_options"}
# The spec's fields the candidate writes. The daemon refusing any other field is this file's
# fault (or the daemon's: an engine it does not have), not the candidate's: that raises
# kernelscan_client.EvaluatorError instead of scoring every candidate 0.
CANDIDATE_FIELDS = ("kernel.source",) + tuple(f"kernel.{key}" for key in sorted(LAUNCH_KEYS))

_LAUNCH_LINE = re.compile(r"^\s*//\s*kernelscan:(.*)$", re.MULTILINE)


class CandidateError(ValueError):
    """The candidate file cannot be made into a job (the candidate's fault: it scores 0)."""


def launch_of(source: str) -> dict:
    """The launch settings: LAUNCH, updated by the candidate's `// kernelscan: {...}` line."""
    lines = _LAUNCH_LINE.findall(source)
    if len(lines) > 1:
        raise CandidateError("more than one `// kernelscan:` launch line")
    launch = dict(LAUNCH)
    if lines:
        try:
            given = json.loads(lines[0])
        except ValueError as e:
            raise CandidateError(f"the `// kernelscan:` line is not JSON: {e}") from None
        if not isinstance(given, dict):
            raise CandidateError("the `// kernelscan:` line must hold a JSON object")
        unknown = sorted(set(given) - LAUNCH_KEYS)
        if unknown:
            raise CandidateError(
                f"the `// kernelscan:` line has unknown keys {unknown} "
                f"(allowed: {sorted(LAUNCH_KEYS)})"
            )
        launch.update(given)
    return launch


def build_spec(source: str, sweep: dict | None = None, program: str = "") -> dict:
    """The kernelscan job for one candidate."""
    if not source.strip():
        raise CandidateError("the candidate file is empty")
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    return {
        "name": f"openevolve {program or 'candidate'}",
        "labels": {"client": "openevolve", "source_sha256": digest},
        "engine": os.environ.get("KERNELSCAN_EVAL_ENGINE") or "auto",
        "kernel": {
            "op": "custom",
            "language": "hip",
            "source": source,
            "entry": ENTRY,
            **launch_of(source),
            "args": ARGS,
            "flops": "2*N*M*K",
            "bytes": "4*(N*K + K*M + N*M)",
            "reference": {**GEMM, "a": "a", "b": "b", "c": "c"},
        },
        "sweep": sweep or SWEEP,
        "verify": {"trials": 2},
        "fitness": {"baseline": GEMM, "correctness_weight": 0.5},
    }


def _result(evaluation: kernelscan_client.Evaluation):
    try:
        from openevolve.evaluation_result import EvaluationResult
    except ImportError:
        return evaluation.metrics
    return EvaluationResult(metrics=evaluation.metrics, artifacts=evaluation.artifacts)


def evaluate_detailed(program_path: str, sweep: dict | None = None) -> kernelscan_client.Evaluation:
    """Scores the candidate in `program_path`: metrics and artifacts (see kernelscan_client)."""
    path = Path(program_path)
    try:
        spec = build_spec(path.read_text(encoding="utf-8"), sweep, path.name)
    except (OSError, UnicodeDecodeError, CandidateError) as e:
        metrics = kernelscan_client.zero_metrics()
        return kernelscan_client.Evaluation(metrics, {"error": f"the candidate: {e}"})
    timeout_s = float(os.environ.get("KERNELSCAN_EVAL_TIMEOUT") or 240)
    return kernelscan_client.Client().evaluate_detailed(
        spec, timeout_s, candidate_fields=CANDIDATE_FIELDS
    )


def evaluate(program_path: str):
    """OpenEvolve's entry point."""
    return _result(evaluate_detailed(program_path))


def evaluate_stage1(program_path: str):
    """Cascade stage 1: one small size."""
    return _result(evaluate_detailed(program_path, QUICK_SWEEP))


def evaluate_stage2(program_path: str):
    """Cascade stage 2: the whole sweep."""
    return evaluate(program_path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} CANDIDATE.hip")
    try:
        result = evaluate_detailed(sys.argv[1])
    except kernelscan_client.KernelscanError as e:
        sys.exit(f"{sys.argv[0]}: {e}")
    print(json.dumps(result.metrics, indent=2))
    for key, text in result.artifacts.items():
        print(f"--- {key}\n{text}")
