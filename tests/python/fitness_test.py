"""Fitness scores through the Python client, against a real daemon with mock devices: the
`fitness` fields of result rows and of the job summary, `Client.evaluate` on them, anti-cheat
flags, the result cache, and the example OpenEvolve evaluator end to end.

These follow the fitness contract (job spec `fitness: {baseline, target_us,
correctness_weight}` and `cache`, `mock.speedup`, per-row and summary `fitness`, cache hits);
a daemon without fitness scoring fails them (it refuses the `fitness` field).

With --postgres the daemon runs on a PostgreSQL database of its own (daemon_process.py).

Run: python3 -B tests/python/fitness_test.py --binary build/server/kernelscan [--postgres] [-v]
[TEST ...]
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from unittest import mock

from daemon_process import ROOT, DaemonTestCase, main, store_log_line

import kernelscan_client
from kernelscan_client import Client, KernelscanError

sys.path.insert(0, str(ROOT / "api" / "python" / "examples"))
import openevolve_evaluator as example  # noqa: E402

# Sizes at 10-25% of the mock MI300X's f16 roof, so that a 2x faster candidate is still
# physically possible; BIG_GEMM runs at ~78%, so that 50x is not.
GEMM = {"op": "gemm", "m": "M", "n": "N", "k": 1024, "dtype": "f16"}
BIG_GEMM = {"op": "gemm", "m": 4096, "n": 4096, "k": 4096, "dtype": "f16"}
ROW_FITNESS = {"correct", "speedup", "speedup_ci95", "baseline_us", "latency_score",
               "combined_score"}
SUMMARY_FITNESS = {"correct", "points", "ok_points", "correct_points", "speedup",
                   "latency_score", "combined_score", "withheld", "confirmed", "flags",
                   "simulated"}


def gemm_job(speedup: float, **extra) -> dict:
    """Two GEMM sizes, the candidate simulated `speedup` times faster than the baseline, and a
    simulated verification that passes (the mock runs no device code: without one no point
    would be correct)."""
    return {
        "kernel": GEMM,
        "sweep": {"M": [512, 1024], "N": [1024]},
        "fitness": {"baseline": GEMM, "target_us": 50},
        "mock": {"speedup": speedup, "output": "correct"},
        "seed": 7,
        **extra,
    }


class FitnessTest(DaemonTestCase):
    def setUp(self) -> None:
        self.client = Client(self.daemon.url, token="")

    def evaluated(self, spec: dict) -> kernelscan_client.Evaluation:
        """evaluate_detailed on a job that must have run and succeeded."""
        ev = self.client.evaluate_detailed(spec, timeout_s=120)
        self.assertIsNotNone(ev.job, ev.artifacts)
        self.assertEqual(ev.job["status"], "succeeded", ev.artifacts)
        return ev

    def test_the_daemon_runs_on_the_store_this_run_asked_for(self) -> None:
        # --postgres: on a PostgreSQL database of its own; else SQLite.
        self.assertIn(store_log_line(), self.daemon.log())

    def test_rows_and_summary_carry_fitness(self) -> None:
        job = self.client.wait(self.client.submit(gemm_job(1.5, cache=False)), timeout_s=120)
        self.assertEqual(job["status"], "succeeded", job)
        rows = self.client.results(job)
        self.assertEqual(len(rows), 2)
        for row in rows:
            f = row["fitness"]
            self.assertEqual(set(f), ROW_FITNESS, f)
            self.assertIs(f["correct"], True)
            self.assertGreater(f["speedup"], 1.2)
            self.assertLess(f["speedup"], 1.9)
            low, high = f["speedup_ci95"]
            self.assertLessEqual(low, f["speedup"])
            self.assertLessEqual(f["speedup"], high)
            self.assertGreater(f["baseline_us"], row["time_us"]["median"])
            self.assertGreater(f["combined_score"], 0)
            self.assertEqual(row["flags"], [])

        summary = job["summary"]["fitness"]
        self.assertEqual(set(summary), SUMMARY_FITNESS, summary)
        self.assertIs(summary["correct"], True)
        self.assertIs(summary["simulated"], True)
        for row in rows:
            self.assertIs(row["simulated"], True)
        self.assertEqual((summary["points"], summary["ok_points"]), (2, 2))
        self.assertEqual(summary["flags"], [])
        geomean = math.sqrt(rows[0]["fitness"]["speedup"] * rows[1]["fitness"]["speedup"])
        self.assertAlmostEqual(summary["speedup"], geomean, delta=1e-6 * geomean)
        # The job's score is the geometric mean of its points' scores.
        scores = math.sqrt(rows[0]["fitness"]["combined_score"] *
                           rows[1]["fitness"]["combined_score"])
        self.assertAlmostEqual(summary["combined_score"], scores, delta=1e-9)
        self.assertEqual(summary["correct_points"], 2)
        self.assertIs(summary["withheld"], False)

    def test_evaluate_reports_the_daemons_scores(self) -> None:
        ev = self.evaluated(gemm_job(2.0, cache=False))
        summary = ev.job["summary"]["fitness"]
        self.assertEqual(ev.metrics["combined_score"], summary["combined_score"])
        self.assertGreater(ev.metrics["combined_score"], 0)
        self.assertEqual(ev.metrics["correct"], 1.0)
        self.assertGreater(ev.metrics["speedup"], 1.6)
        self.assertLess(ev.metrics["speedup"], 2.5)
        self.assertEqual(ev.metrics["latency_score"], summary["latency_score"])
        self.assertEqual((ev.metrics["points"], ev.metrics["ok_points"]), (2.0, 2.0))
        self.assertEqual(json.loads(ev.artifacts["fitness"]), summary)
        self.assertNotIn("missing", ev.artifacts)
        self.assertNotIn("error", ev.artifacts)
        self.assertRegex(ev.artifacts["points"], r"point 0 \(M=512, N=1024\): ok, median "
                                                 r"[0-9.]+ us, speedup [0-9.]+x \[")
        self.assertIn("the mock engine measured this job", ev.artifacts["simulated"])

    def test_an_unverified_point_never_scores(self) -> None:
        spec = gemm_job(2.0, cache=False)
        del spec["mock"]["output"]  # the mock verifies nothing
        ev = self.evaluated(spec)
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertEqual(ev.metrics["correct"], 0.0)
        self.assertGreater(ev.metrics["median_us"], 0)  # the times are still reported
        for row in ev.rows:
            self.assertEqual(row["verification"]["status"], "skipped")
            self.assertIs(row["fitness"]["correct"], False)
        self.assertIn("not verified (the mock engine cannot run device code)",
                      ev.artifacts["points"])
        self.assertIn("never correct", ev.artifacts["simulated"])

    def test_an_impossible_speedup_is_flagged_and_scores_zero(self) -> None:
        spec = gemm_job(50.0, cache=False, kernel=BIG_GEMM, sweep={})
        spec["fitness"]["baseline"] = BIG_GEMM
        ev = self.evaluated(spec)
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertIn("faster_than_roofline", ev.artifacts["flags"])
        self.assertIn("faster_than_roofline", ev.job["summary"]["fitness"]["flags"])
        for row in ev.rows:
            self.assertIn("faster_than_roofline", row["flags"])
            self.assertEqual(row["fitness"]["combined_score"], 0)
        self.assertIn("flags: faster_than_roofline", ev.artifacts["points"])

    def test_a_repeated_job_is_served_from_the_cache(self) -> None:
        spec = gemm_job(1.25)
        spec["labels"] = {"suite": "cache"}
        first = self.evaluated(spec)
        second = self.evaluated(spec)
        self.assertNotEqual(first.job["id"], second.job["id"])
        for row in second.rows:
            self.assertEqual(row["cache"], {"hit": True, "job_id": first.job["id"]})
        self.assertEqual(
            second.artifacts["cache"],
            f"2 of 2 points served from the result cache (measured by job {first.job['id']})",
        )
        self.assertEqual(second.metrics["combined_score"], first.metrics["combined_score"])

        third = self.evaluated(dict(spec, cache=False))
        self.assertNotIn("cache", third.artifacts)
        for row in third.rows:
            self.assertFalse((row.get("cache") or {}).get("hit", False), row)

    def test_bad_fitness_fields_are_the_evaluators_fault_not_the_candidates(self) -> None:
        for fitness, field in (({"baseline": GEMM, "correctness_weight": 2},
                                "fitness.correctness_weight"),
                               ({"baseline": GEMM, "target_us": 0}, "fitness.target_us"),
                               ({"baseline": {"op": "gemm"}}, "fitness.baseline.m")):
            spec = dict(gemm_job(1.0), fitness=fitness)
            with self.assertRaises(KernelscanError) as caught:
                self.client.submit(spec)
            self.assertEqual(caught.exception.type, "invalid_spec")
            self.assertIn(field, dict(caught.exception.field_errors), caught.exception)
            # The fields outside the candidate's (the kernel, by default) are the template's.
            with self.assertRaises(kernelscan_client.EvaluatorError) as harness:
                self.client.evaluate_detailed(spec, timeout_s=10)
            self.assertIn(field + ": ", harness.exception.message)
            self.assertEqual(harness.exception.status, 422)
            ev = self.client.evaluate_detailed(spec, timeout_s=10,
                                               raise_on_infrastructure_error=False)
            self.assertEqual(ev.metrics, kernelscan_client.zero_metrics())
            self.assertTrue(ev.artifacts["error"].startswith("evaluator: "), ev.artifacts)
            # When the whole spec is the candidate's, it scores 0 with the field errors.
            ev = self.client.evaluate_detailed(spec, timeout_s=10, candidate_fields=None)
            self.assertEqual(ev.metrics, kernelscan_client.zero_metrics())
            self.assertIn(field + ": ", ev.artifacts["spec_errors"])

    def test_a_bad_kernel_is_the_candidates_fault(self) -> None:
        spec = gemm_job(1.0)
        spec["kernel"] = dict(GEMM, dtype="f17")
        ev = self.client.evaluate_detailed(spec, timeout_s=10)
        self.assertEqual(ev.metrics, kernelscan_client.zero_metrics())
        self.assertIn("kernel.dtype: ", ev.artifacts["spec_errors"])

    def test_an_engine_the_daemon_does_not_have_is_not_the_candidates_fault(self) -> None:
        spec = dict(gemm_job(1.0), engine="hip")
        with self.assertRaises(kernelscan_client.EvaluatorError) as caught:
            self.client.evaluate_detailed(spec, timeout_s=10)
        self.assertIn("engine: no live node has a HIP device", caught.exception.message)

    def example_env(self, **extra: str):
        return mock.patch.dict(os.environ, {"KERNELSCAN_SERVER": self.daemon.url,
                                            "KERNELSCAN_TOKEN": "",
                                            "KERNELSCAN_EVAL_TIMEOUT": "120", **extra})

    def test_example_evaluator_end_to_end(self) -> None:
        candidate = str(ROOT / "api" / "python" / "examples" / "matmul_candidate.hip")
        with self.example_env():
            tasks = example.define_tasks()
            self.assertEqual([t["name"] for t in tasks], ["matmul.f32", "matmul.f32.quick"])
            self.assertEqual(len(example.define_tasks()), 2)  # defined already: left as is
            detailed = example.evaluate_detailed(candidate)
            metrics = example.evaluate(candidate)
            quick = example.evaluate_stage1(candidate)
        self.assertIsNotNone(detailed.job, detailed.artifacts)
        self.assertEqual(detailed.job["status"], "succeeded", detailed.artifacts)
        self.assertEqual(detailed.job["labels"]["client"], "openevolve")
        self.assertEqual(detailed.job["task"], "matmul.f32")
        if not isinstance(metrics, dict):  # OpenEvolve is installed: an EvaluationResult
            metrics, quick = metrics.metrics, quick.metrics
        self.assertEqual(set(metrics), set(kernelscan_client.METRIC_KEYS))
        # The mock compiles and runs nothing: the candidate is measured by a model, verified
        # by no one, and so scores 0, which the artifacts explain in words.
        self.assertEqual(metrics["combined_score"], 0.0, metrics)
        self.assertEqual(metrics["combined_score"],
                         detailed.job["summary"]["fitness"]["combined_score"])
        self.assertEqual(metrics["correct"], 0.0)
        self.assertGreater(metrics["speedup"], 0)
        self.assertGreater(metrics["median_us"], 0)
        # Four public sizes and the held-out one.
        self.assertEqual((metrics["points"], metrics["ok_points"]), (5.0, 5.0))
        self.assertEqual((quick["points"], quick["ok_points"]), (1.0, 1.0))
        self.assertIn("neither compiled nor run", detailed.artifacts["simulated"])
        self.assertIn("not verified", detailed.artifacts["points"])

    def test_example_evaluator_blames_itself_not_the_candidate(self) -> None:
        candidate = str(ROOT / "api" / "python" / "examples" / "matmul_candidate.hip")
        # A task that is not defined ...
        with self.example_env(KERNELSCAN_TASK="never.defined"):
            with self.assertRaises(kernelscan_client.EvaluatorError) as missing:
                example.evaluate(candidate)
        self.assertIn("no task \"never.defined\"", missing.exception.message)
        # ... a typo in the task (a sweep parameter nothing uses), refused when it is defined ...
        with self.example_env(KERNELSCAN_TASK="typo"), mock.patch.object(
                example, "SWEEP", dict(example.SWEEP, Q=[1, 2])):
            with self.assertRaises(kernelscan_client.KernelscanError) as typo:
                example.define_tasks()
        self.assertTrue(any(f == "sweep.Q" and m.startswith("no field uses Q")
                            for f, m in typo.exception.field_errors), typo.exception.details)
        # ... or an engine this daemon does not have, refused when it is defined too.
        with self.example_env(KERNELSCAN_TASK="on.hip", KERNELSCAN_EVAL_ENGINE="hip"):
            with self.assertRaises(kernelscan_client.KernelscanError) as engine:
                example.define_tasks()
            with self.assertRaises(kernelscan_client.EvaluatorError) as undefined:
                example.evaluate(candidate)
        self.assertTrue(any(f == "engine" and "HIP device" in m
                            for f, m in engine.exception.field_errors), engine.exception.details)
        self.assertIn("no task \"on.hip\"", undefined.exception.message)
        # A candidate whose own launch line is wrong still scores 0.
        source = re.sub(r"^// kernelscan:.*$", '// kernelscan: {"block": [16, 16, 8]}',
                        Path(candidate).read_text(), count=1, flags=re.MULTILINE)
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "candidate.hip"
            bad.write_text(source)
            with self.example_env():
                example.define_tasks()
                ev = example.evaluate_detailed(str(bad))
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertIn("block: ", ev.artifacts["spec_errors"])

if __name__ == "__main__":
    main()
