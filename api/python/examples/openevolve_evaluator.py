"""An OpenEvolve evaluator that scores candidate matmul kernels, in HIP or OpenCL, against a
kernelscan task.

OpenEvolve calls `evaluate(program_path)` with a file holding one candidate: HIP device code
defining `extern "C" __global__ void matmul(const float* a, const float* b, float* c, int N,
int M, int K)` (C = A x B, f32, row-major; see matmul_candidate.hip), or, in a `.cl` file,
OpenCL C defining `__kernel void matmul(__global const float* a, __global const float* b,
__global float* c, int N, int M, int K)` (see matmul_candidate.cl), measured by the daemon's
OpenCL engine on any OpenCL device (a GPU's driver, or PoCL on the CPU). The candidate may carry
one launch line, `// kernelscan: {"block": [...], "grid": [...], "shared_bytes": ...,
"compile_options": [...]}` (one line of JSON; no `shared_bytes` in OpenCL, whose kernels
declare their local memory), so that evolution can change its tiling; the task's default is
16 x 16 blocks over C, the grid counted in blocks (work-groups).

The candidate is submitted to an evaluation task defined on the daemon (`task_definition()`:
the kernel's arguments, its sizes and held-out sizes the candidate never sees, verification
against the built-in GEMM, the vendor library's GEMM of the same sizes as its fitness
baseline). The candidate sends only its source and launch settings; it cannot pick its sizes,
its tolerances or its reference. The daemon measures, verifies and scores it; `combined_score`
is the job's `summary.fitness.combined_score`, what evolution maximises. `evaluate` returns
OpenEvolve's `EvaluationResult` (metrics and text artifacts: why a score is 0, compiler errors,
per-size times and speedups) when OpenEvolve is importable, else the plain metrics dict.

Defining the task is the operator's step, done once: `python3 openevolve_evaluator.py
--define-task CANDIDATE.hip` (or `define_tasks()`) creates it and its one-size quick twin for
OpenEvolve's cascade (`NAME.quick`); with `--operator-token-file` it needs an operator's token.

A submission the daemon refuses for the candidate's own fields (its source, its launch line)
scores 0. Anything else (no such task, a retired one, an engine the daemon does not have)
raises `kernelscan_client.EvaluatorError`: no candidate is at fault, and OpenEvolve reports an
evaluator that raises rather than recording good programs as worthless.

On a daemon with only mock devices nothing is compiled or run: every point is unverified, so
every candidate scores 0, and the `simulated` artifact says so. Score candidates on a GPU.

Settings, from the environment:

    KERNELSCAN_SERVER        the daemon, default http://127.0.0.1:8080
    KERNELSCAN_TOKEN         its bearer token, if it was started with --token-file
    KERNELSCAN_TASK          the task to evaluate against, default matmul.f32 for a HIP
                             candidate and matmul.f32.opencl for an OpenCL one (or --task)
    KERNELSCAN_EVAL_LANGUAGE the candidates' language, hip or opencl; default: opencl for a
                             `.cl` file, else hip
    KERNELSCAN_EVAL_TIMEOUT  seconds to wait for one candidate's job, default 240; keep it below
                             OpenEvolve's evaluator.timeout (default 300), so that a slow job is
                             cancelled and scored 0 here rather than abandoned there
    KERNELSCAN_EVAL_ENGINE   the engine of a task defined here: for HIP auto (default: a GPU if
                             the daemon has one, else its mock), hip or mock; for OpenCL opencl
                             (default) or mock

For OpenEvolve's cascade evaluation, `evaluate_stage1` submits to the quick task (one small
size: a compile and correctness check) and `evaluate_stage2` to the task itself.

Run it by hand: `python3 openevolve_evaluator.py [--define-task] [--task NAME]
matmul_candidate.hip` (or `matmul_candidate.cl`) prints the metrics and artifacts.
"""

from __future__ import annotations

import argparse
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

LANGUAGES = ("hip", "opencl")
# The default task of each language's candidates.
TASKS = {"hip": "matmul.f32", "opencl": "matmul.f32.opencl"}
TASK = TASKS["hip"]
# The sizes each candidate is measured at: square and not, and N not a multiple of common tile
# sizes, so that a kernel that ignores edges fails verification. The held-out size is measured
# and scored too, but never shown to the candidate: a kernel tuned to the public sizes alone
# shows it there.
SWEEP = {"N": [1000, 2048], "M": [1024, 1536], "K": [1024]}
HELD_OUT = {"N": [1300], "M": [1100], "K": [768]}
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


SIGNATURES = {
    "hip": 'extern "C" __global__ void matmul(const float* a, const float* b, float* c, '
           "int N, int M, int K)` in HIP",
    "opencl": "__kernel void matmul(__global const float* a, __global const float* b, "
              "__global float* c, int N, int M, int K)` in OpenCL C",
}


def language_of(program_path: str | None = None) -> str:
    """The candidates' language: KERNELSCAN_EVAL_LANGUAGE, else opencl for a `.cl` file, else
    hip. A language the evaluator does not know is its own mistake: it raises EvaluatorError."""
    given = os.environ.get("KERNELSCAN_EVAL_LANGUAGE")
    if given:
        if given not in LANGUAGES:
            raise kernelscan_client.EvaluatorError(
                f"KERNELSCAN_EVAL_LANGUAGE is {given!r}, not one of {list(LANGUAGES)}"
            )
        return given
    if program_path and Path(program_path).suffix == ".cl":
        return "opencl"
    return "hip"


def task_name(language: str = "hip") -> str:
    """The task candidates are submitted to: KERNELSCAN_TASK, else the language's in TASKS."""
    return os.environ.get("KERNELSCAN_TASK") or TASKS[language]


def quick_task_name(name: str) -> str:
    """The one-size twin of task `name`, for the cascade's first stage."""
    return name + ".quick"


def task_definition(name: str | None = None, quick: bool = False,
                    language: str = "hip") -> dict:
    """The task an operator defines for these candidates (POST /api/v1/tasks), in `language`
    (hip or opencl)."""
    name = name or task_name(language)
    default_engine = "auto" if language == "hip" else "opencl"
    task = {
        "name": quick_task_name(name) if quick else name,
        "description": "C = A x B, f32, row-major: A is N x K, B is K x M, C is N x M. Write "
                       f"`{SIGNATURES[language]}.",
        "engine": os.environ.get("KERNELSCAN_EVAL_ENGINE") or default_engine,
        "kernel": {
            "language": language,
            "entry": ENTRY,
            **LAUNCH,
            "args": ARGS,
            "flops": "2*N*M*K",
            "bytes": "4*(N*K + K*M + N*M)",
            "reference": {**GEMM, "a": "a", "b": "b", "c": "c"},
        },
        "sweep": QUICK_SWEEP if quick else SWEEP,
        "verify": {"trials": 2},
        "fitness": {"baseline": GEMM, "correctness_weight": 0.5},
    }
    if not quick:
        task["held_out"] = HELD_OUT
    return task


def define_tasks(client: kernelscan_client.Client | None = None,
                 name: str | None = None, language: str = "hip") -> list[dict]:
    """Defines the task of `language`'s candidates and its quick twin on the daemon (the
    operator's step); a task that exists already is left as it is. Returns both as the daemon
    has them."""
    client = client or kernelscan_client.Client()
    out = []
    for quick in (False, True):
        definition = task_definition(name, quick, language)
        try:
            out.append(client.create_task(definition))
        except kernelscan_client.KernelscanError as e:
            if e.type != "task_exists":
                raise
            out.append(client.task(definition["name"]))
    return out


def submission(source: str, program: str = "") -> dict:
    """What a candidate sends to the task: its launch settings, a name and labels (the source
    goes beside them)."""
    if not source.strip():
        raise CandidateError("the candidate file is empty")
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    return {
        "entry": ENTRY,
        **launch_of(source),
        "job_name": f"openevolve {program or 'candidate'}",
        "labels": {"client": "openevolve", "source_sha256": digest},
    }


def _result(evaluation: kernelscan_client.Evaluation):
    try:
        from openevolve.evaluation_result import EvaluationResult
    except ImportError:
        return evaluation.metrics
    return EvaluationResult(metrics=evaluation.metrics, artifacts=evaluation.artifacts)


def evaluate_detailed(program_path: str, task: str | None = None) -> kernelscan_client.Evaluation:
    """Scores the candidate in `program_path` against `task` (default task_name()): metrics and
    artifacts (see kernelscan_client)."""
    path = Path(program_path)
    language = language_of(program_path)
    try:
        source = path.read_text(encoding="utf-8")
        launch = submission(source, path.name)
    except (OSError, UnicodeDecodeError, CandidateError) as e:
        metrics = kernelscan_client.zero_metrics()
        return kernelscan_client.Evaluation(metrics, {"error": f"the candidate: {e}"})
    timeout_s = float(os.environ.get("KERNELSCAN_EVAL_TIMEOUT") or 240)
    return kernelscan_client.Client().evaluate_task_detailed(
        task or task_name(language), source, timeout_s, **launch
    )


def evaluate(program_path: str):
    """OpenEvolve's entry point."""
    return _result(evaluate_detailed(program_path))


def evaluate_stage1(program_path: str):
    """Cascade stage 1: one small size (the quick task)."""
    quick = quick_task_name(task_name(language_of(program_path)))
    return _result(evaluate_detailed(program_path, quick))


def evaluate_stage2(program_path: str):
    """Cascade stage 2: the whole sweep."""
    return evaluate(program_path)


def main() -> None:
    parser = argparse.ArgumentParser(description="Scores one candidate against a kernelscan task.")
    parser.add_argument("candidate", help="the candidate's HIP file, or OpenCL `.cl` file")
    parser.add_argument("--task", help="the task (default: KERNELSCAN_TASK, else "
                                       f"{TASKS['hip']}, or {TASKS['opencl']} for a `.cl` file)")
    parser.add_argument("--define-task", action="store_true",
                        help="define the task and its quick twin first (the operator's step)")
    args = parser.parse_args()
    try:
        if args.define_task:
            define_tasks(name=args.task, language=language_of(args.candidate))
        result = evaluate_detailed(args.candidate, args.task)
    except kernelscan_client.KernelscanError as e:
        sys.exit(f"{sys.argv[0]}: {e}")
    print(json.dumps(result.metrics, indent=2))
    for key, text in result.artifacts.items():
        print(f"--- {key}\n{text}")


if __name__ == "__main__":
    main()
