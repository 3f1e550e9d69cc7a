"""The Python client (api/python/kernelscan_client.py) against real daemons on free loopback
ports: every call, its errors, the long-poll back-off, tokens, and `evaluate` on jobs that
succeed, fail, time out or are refused. The fitness scores themselves are in fitness_test.py.

Run: python3 -B tests/python/client_test.py --binary build/server/kernelscan [-v] [TEST ...]
"""

from __future__ import annotations

import http.server
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path
from unittest import mock

import daemon_process
from daemon_process import ROOT, Daemon, DaemonTestCase, closed_port, main, stream_sweep

import kernelscan_client
from kernelscan_client import (
    Client,
    JobTimeout,
    KernelscanConnectionError,
    KernelscanError,
    RooflineTimeout,
    group_by_point,
)

sys.path.insert(0, str(ROOT / "api" / "python" / "examples"))
import openevolve_evaluator as example  # noqa: E402

BAD_SPEC = {
    "kernel": {"op": "stream", "n": "N", "dtype": "f17"},
    "sweep": {"N": [1]},
    "timing": {"min_sample": 3},
}


class ClientTest(DaemonTestCase):
    def setUp(self) -> None:
        self.client = Client(self.daemon.url, token="")

    def test_the_daemon_runs_on_the_store_this_run_asked_for(self) -> None:
        # --postgres: every daemon on a PostgreSQL database of its own; else SQLite.
        expected = "store: PostgreSQL at" if daemon_process.POSTGRES else "store: SQLite in"
        self.assertIn(expected, self.daemon.log())
        # Device routes name the device's node (here the only one).
        devices = self.client.devices()
        node = devices[0]["node"]
        with urllib.request.urlopen(f"{self.daemon.url}/api/v1/devices/0?node={node}") as r:
            self.assertEqual(json.loads(r.read())["node"], node)

    def test_submit_wait_and_results(self) -> None:
        spec = stream_sweep(4)
        spec["name"] = "four sizes"
        job = self.client.submit(spec)
        self.assertEqual(job["status"], "queued")
        self.assertEqual(job["name"], "four sizes")
        self.assertEqual(job["spec"]["sweep"]["N"], [4096, 8192, 12288, 16384])

        ended = self.client.wait(job, timeout_s=60)
        self.assertEqual(ended["status"], "succeeded", ended)
        self.assertEqual(ended["progress"]["done"], 4)
        self.assertEqual(self.client.job(job["id"])["status"], "succeeded")

        rows = self.client.results(job["id"])
        self.assertEqual([r["index"] for r in rows], [0, 1, 2, 3])
        self.assertEqual([r["params"]["N"] for r in rows], [4096, 8192, 12288, 16384])
        for r in rows:
            self.assertEqual(r["status"], "ok")
            self.assertGreater(r["time_us"]["median"], 0)
        # The same rows as the API's own JSON format.
        page = self.daemon.get_json(f"/api/v1/jobs/{job['id']}/results")
        self.assertEqual(rows, page["results"])

    def test_variants_submit_and_group_by_point(self) -> None:
        spec = {
            "kernel": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f16"},
            "variants": [
                {"name": "library"},
                {"name": "builtin", "impl": "builtin"},
            ],
            "baseline": "builtin",
            "sweep": {"N": [1024, 4096]},
        }
        job = self.client.wait(self.client.submit(spec), timeout_s=60)
        self.assertEqual(job["status"], "succeeded")
        self.assertEqual(job["progress"]["total"], 4)
        self.assertEqual(job["summary"]["variants"]["best"], "library")
        rows = self.client.results(job)
        self.assertEqual([r["variant"] for r in rows], ["library", "builtin"] * 2)
        points = group_by_point(rows)
        self.assertEqual([p["params"] for p in points], [{"N": 1024}, {"N": 4096}])
        for p in points:
            self.assertEqual(list(p["variants"]), ["library", "builtin"])
            self.assertEqual(p["fastest"], "library")
            over = p["variants"]["library"]["comparison"]["over_baseline"]
            self.assertEqual(over["variant"], "builtin")
            self.assertGreater(over["speedup"], 1)
            self.assertLessEqual(over["ci95"][0], over["speedup"])
        # A variant refused names its field.
        spec["variants"][1]["impl"] = "fastest"
        with self.assertRaises(KernelscanError) as caught:
            self.client.submit(spec)
        self.assertIn("variants[1].impl", [f for f, _ in caught.exception.field_errors])

    def test_results_stream_a_large_job_whole(self) -> None:
        job = self.client.wait(self.client.submit(stream_sweep(3000, step=64)), timeout_s=120)
        self.assertEqual(job["status"], "succeeded", job)
        count = 0
        rows = []
        for count, row in enumerate(self.client.iter_results(job), start=1):
            self.assertEqual(row["index"], count - 1)
            rows.append(row)
        self.assertEqual(count, 3000)
        # They came gzipped, and are the rows a client that does not take gzip reads.
        url = f"{self.client.server}/api/v1/jobs/{job['id']}/results?format=jsonl"
        zipped = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(zipped) as r:
            self.assertEqual(r.headers.get("Content-Encoding"), "gzip")
        with urllib.request.urlopen(url) as r:
            self.assertIsNone(r.headers.get("Content-Encoding"))
            plain = [json.loads(line) for line in r if line.strip()]
        self.assertEqual(rows, plain)

    def test_jobs_filters_and_follows_cursors(self) -> None:
        ids = []
        for i in range(3):
            spec = stream_sweep(1)
            spec["labels"] = {"suite": "jobs-filter", "n": str(i)}
            ids.append(self.client.submit(spec)["id"])
        for i in ids:
            self.client.wait(i, timeout_s=60)

        listed = self.client.jobs(labels={"suite": "jobs-filter"})
        self.assertEqual([j["id"] for j in listed], ids[::-1])  # newest first
        self.assertNotIn("spec", listed[0])
        self.assertEqual(
            [j["id"] for j in self.client.jobs(labels={"suite": "jobs-filter", "n": "1"})],
            [ids[1]],
        )
        self.assertEqual(len(self.client.jobs(labels={"suite": "jobs-filter"}, limit=2)), 2)
        self.assertEqual(
            self.client.jobs(status=["queued", "running"], labels={"suite": "jobs-filter"}), []
        )
        self.assertEqual(
            len(self.client.jobs(status="succeeded,failed", labels={"suite": "jobs-filter"})), 3
        )
        # Pages of two: every job is still found, across cursors.
        with mock.patch.object(kernelscan_client, "_JOBS_PAGE", 2):
            self.assertEqual(
                [j["id"] for j in self.client.jobs(labels={"suite": "jobs-filter"})], ids[::-1]
            )
        with self.assertRaises(ValueError):
            self.client.jobs(limit=0)
        with self.assertRaises(KernelscanError) as caught:
            self.client.jobs(status="sleeping")
        self.assertEqual((caught.exception.status, caught.exception.type),
                         (400, "invalid_parameter"))

    def test_an_operator_confirms_a_withheld_score(self) -> None:
        # A small copy against a huge GEMM: over 10x the baseline, so the job's score is
        # withheld until it is confirmed.
        job = self.client.submit({
            "kernel": {"op": "stream", "variant": "copy", "n": 1048576},
            "fitness": {"baseline": {"op": "gemm", "m": 4096, "n": 4096, "k": 4096,
                                     "impl": "builtin"}},
            "mock": {"output": "correct"}, "cache": False})
        ended = self.client.wait(job, timeout_s=60)
        self.assertIs(ended["summary"]["fitness"]["withheld"], True, ended)
        self.assertEqual(ended["summary"]["fitness"]["combined_score"], 0)
        confirmed = self.client.confirm(job)
        self.assertIs(confirmed["summary"]["fitness"]["withheld"], False)
        self.assertIs(confirmed["summary"]["fitness"]["confirmed"], True)
        self.assertAlmostEqual(confirmed["summary"]["fitness"]["combined_score"], 10,
                               delta=1e-9)  # capped
        with self.assertRaises(KernelscanError) as nothing:
            self.client.confirm(self.client.submit(stream_sweep(1)))
        self.assertEqual(nothing.exception.status, 409)
        self.assertIn(nothing.exception.type, ("nothing_to_confirm", "job_not_finished"))

    def test_cancel_a_running_job_and_wait_timeouts(self) -> None:
        job = self.client.submit(stream_sweep(100, delay_ms=100))
        with self.assertRaises(JobTimeout) as caught:
            self.client.wait(job, timeout_s=0.3, poll_s=0.1)
        self.assertIsInstance(caught.exception, TimeoutError)
        self.assertIn(caught.exception.job["status"], ("queued", "running"))
        self.assertIn(f"job {job['id']} did not end within 0.3 s", str(caught.exception))

        cancelled = self.client.cancel(job)
        self.assertTrue(cancelled["cancel_requested"] or cancelled["status"] == "cancelled")
        ended = self.client.wait(job, timeout_s=60)
        self.assertEqual(ended["status"], "cancelled")
        self.assertLess(ended["progress"]["done"], 100)

        with self.assertRaises(KernelscanError) as again:
            self.client.cancel(job["id"])
        self.assertEqual(again.exception.status, 409)
        self.assertEqual(again.exception.type, "job_finished")
        self.assertEqual(again.exception.context, {"job_id": job["id"], "job_status": "cancelled"})
        self.assertEqual(again.exception.details, [])

    def test_rerun_measures_a_jobs_spec_again(self) -> None:
        first = self.client.wait(self.client.submit(stream_sweep(2)), timeout_s=60)
        second = self.client.wait(self.client.rerun(first), timeout_s=60)
        self.assertNotEqual(second["id"], first["id"])
        self.assertEqual(second["status"], "succeeded")
        self.assertIsNone(second["cached_from"])  # measured, not copied from the first
        self.assertFalse(second["spec"]["cache"])
        self.assertNotEqual(second["spec"]["seed"], first["spec"]["seed"])
        for same in ("name", "labels", "kernel", "sweep", "timing", "verify"):
            self.assertEqual(second["spec"][same], first["spec"][same], same)

    def test_delete_a_job_that_ended(self) -> None:
        job = self.client.wait(self.client.submit(stream_sweep(2)), timeout_s=60)
        self.assertIsNone(self.client.delete_job(job))
        for call in (self.client.job, self.client.results):
            with self.assertRaises(KernelscanError) as caught:
                call(job)
            self.assertEqual((caught.exception.status, caught.exception.type), (404, "not_found"))
        self.assertNotIn(job["id"], [j["id"] for j in self.client.jobs()])
        with self.assertRaises(KernelscanError) as again:
            self.client.delete_job(job["id"])
        e = again.exception
        self.assertEqual((e.status, e.type, e.message), (404, "not_found", f"no job {job['id']}"))
        with self.assertRaises(ValueError):
            self.client.delete_job("1/cancel")  # ids go into paths: only integers pass

    def test_delete_jobs_by_filters(self) -> None:
        ids = []
        for run in ("old", "old", "kept"):
            spec = dict(stream_sweep(1, step=4111), labels={"suite": "delete-jobs", "run": run})
            ids.append(self.client.wait(self.client.submit(spec), timeout_s=60)["id"])
        old = {"suite": "delete-jobs", "run": "old"}
        self.assertEqual(self.client.delete_jobs(labels=old, dry_run=True), ids[1::-1])
        self.assertEqual(self.client.delete_jobs(labels=old, older_than_days=1), [])
        self.assertEqual(self.client.delete_jobs(labels=old, status="succeeded"), ids[1::-1])
        self.assertEqual(self.client.delete_jobs(labels=old), [])
        listed = self.client.jobs(labels={"suite": "delete-jobs"})
        self.assertEqual([j["id"] for j in listed], [ids[2]])
        self.assertEqual(
            self.client.delete_jobs(labels={"suite": "delete-jobs"}, older_than_days=0), [ids[2]]
        )
        for bad in ({}, {"status": "running"}, {"status": ["failed", "queued"]},
                    {"labels": old, "older_than_days": -1}):
            with self.assertRaises(ValueError):
                self.client.delete_jobs(**bad)

    def test_a_job_that_has_not_ended_is_not_deleted(self) -> None:
        # Sizes no other test measures, uncached: the other tests' slow jobs stay slow.
        spec = dict(stream_sweep(100, delay_ms=100, step=4099), cache=False)
        job = self.client.submit(spec)
        try:
            with self.assertRaises(KernelscanError) as caught:
                self.client.delete_job(job)
            e = caught.exception
            self.assertEqual((e.status, e.type), (409, "job_not_finished"))
            self.assertEqual(e.context["job_id"], job["id"])
            self.assertIn(e.context["job_status"], ("queued", "running"))
            self.assertIn("cancel it first", e.message)
            self.assertIn(self.client.job(job)["status"], ("queued", "running"))
        finally:
            self.client.cancel(job)
        self.assertEqual(self.client.wait(job, timeout_s=60)["status"], "cancelled")
        self.client.delete_job(job)
        with self.assertRaises(KernelscanError) as gone:
            self.client.job(job)
        self.assertEqual(gone.exception.status, 404)

    def test_an_invalid_spec_names_every_field(self) -> None:
        with self.assertRaises(KernelscanError) as caught:
            self.client.submit(BAD_SPEC)
        e = caught.exception
        self.assertEqual((e.status, e.type), (422, "invalid_spec"))
        fields = dict(e.field_errors)
        self.assertIn("kernel.dtype", fields)
        self.assertIn('"f17" is not one of', fields["kernel.dtype"])
        self.assertTrue(fields["timing.min_sample"].startswith("unknown field"))
        text = str(e)
        self.assertTrue(text.startswith("invalid_spec (HTTP 422): "), text)
        self.assertIn("\n  kernel.dtype: ", text)
        self.assertIn("\n  timing.min_sample: unknown field", text)
        self.assertEqual(self.client.jobs(labels={"never": "stored"}), [])

    def test_text_specs_and_invalid_json(self) -> None:
        job = self.client.submit('{"kernel": {"op": "stream", "variant": "copy", "n": 1024}}')
        self.assertEqual(job["op"], "stream")
        with self.assertRaises(KernelscanError) as caught:
            self.client.submit('{"kernel": ')
        self.assertEqual((caught.exception.status, caught.exception.type), (400, "invalid_json"))

    def test_idempotency_key_returns_the_first_job(self) -> None:
        spec = stream_sweep(2)
        first = self.client.submit(spec, idempotency_key="py-idem-1")
        again = self.client.submit(spec, idempotency_key="py-idem-1")
        self.assertEqual(first["id"], again["id"])
        other = dict(spec, name="different")
        with self.assertRaises(KernelscanError) as caught:
            self.client.submit(other, idempotency_key="py-idem-1")
        self.assertEqual(caught.exception.type, "idempotency_conflict")
        self.assertEqual(caught.exception.context, {"job_id": first["id"]})

    def test_unknown_job_is_not_found(self) -> None:
        for call in (self.client.job, self.client.cancel, self.client.results):
            with self.assertRaises(KernelscanError) as caught:
                call(424242)
            self.assertEqual(caught.exception.status, 404)
            self.assertEqual(caught.exception.type, "not_found")
            self.assertEqual(caught.exception.message, "no job 424242")
        with self.assertRaises(ValueError):
            self.client.job("1/cancel")  # ids go into paths: only integers pass

    def test_devices(self) -> None:
        devices = self.client.devices()
        self.assertEqual(len(devices), 1)
        self.assertEqual(devices[0]["index"], 0)
        self.assertEqual(devices[0]["engine"], "mock")

    def test_one_device_of_this_node_or_of_a_named_node(self) -> None:
        listed = self.client.devices()[0]
        node = listed["node"]
        for device in (self.client.device(0), self.client.device(0, node=node)):
            self.assertEqual((device["node"], device["index"]), (node, 0))
            self.assertEqual((device["name"], device["engine"]), (listed["name"], "mock"))
        with self.assertRaises(KernelscanError) as caught:
            self.client.device(3)
        e = caught.exception
        self.assertEqual((e.status, e.type), (404, "not_found"))
        self.assertEqual([f for f, _ in e.field_errors], ["index"])
        self.assertIn(f'no device 3 on node "{node}" (its devices: 0)', e.message)
        with self.assertRaises(KernelscanError) as caught:
            self.client.device(0, node="no-such-node")
        self.assertEqual((caught.exception.status, caught.exception.type), (404, "not_found"))
        self.assertEqual([f for f, _ in caught.exception.field_errors], ["node"])
        self.assertIn(f"(nodes: {node})", caught.exception.message)
        # A node name is a query value, sent encoded: it reaches the daemon as written.
        with self.assertRaises(KernelscanError) as caught:
            self.client.device(0, node="a&node=b c")
        self.assertIn('no node "a&node=b c"', caught.exception.message)
        # Indices and names go into the URL: only what the API takes passes.
        for index in (-1, True, "0", "0/roofline", 1.0):
            with self.assertRaises(ValueError):
                self.client.device(index)
        with self.assertRaises(ValueError):
            self.client.device(0, node="")

    def test_measure_a_devices_roofline_again(self) -> None:
        before = self.client.device(0)
        self.assertIsNotNone(before["measured"], "measured when its worker first started")
        asked = self.client.measure_roofline(0, node=before["node"])
        self.assertIs(asked["roofline_requested"], True)
        self.assertEqual((asked["node"], asked["index"]), (before["node"], 0))
        # Waiting: the device once its new ceilings are in.
        measured = self.client.measure_roofline(0, wait=True, timeout_s=60, poll_s=0.05)
        self.assertNotEqual(measured["measured"]["measured_at"],
                            before["measured"]["measured_at"])
        self.assertNotEqual(measured["state"], "measuring")
        self.assertNotIn("roofline_requested", measured)
        with self.assertRaises(KernelscanError) as caught:
            self.client.measure_roofline(2)
        self.assertEqual((caught.exception.status, caught.exception.type), (404, "not_found"))
        with self.assertRaises(KernelscanError) as caught:
            self.client.measure_roofline(0, node="elsewhere")
        self.assertEqual([f for f, _ in caught.exception.field_errors], ["node"])
        with self.assertRaises(ValueError):
            self.client.measure_roofline(-1)
        with self.assertRaises(ValueError):
            self.client.measure_roofline(0, wait=True, poll_s=0)

    def test_a_roofline_wait_past_its_time_raises_with_the_device(self) -> None:
        # A device measures between jobs: while one runs, the wait runs out, and the device as
        # last seen (busy with the job) comes with the error.
        job = self.client.submit(stream_sweep(40, delay_ms=100))
        deadline = time.monotonic() + 30
        while self.client.device(0)["current_job"] != job["id"] and time.monotonic() < deadline:
            time.sleep(0.02)
        with self.assertRaises(RooflineTimeout) as caught:
            self.client.measure_roofline(0, wait=True, timeout_s=0.3, poll_s=0.05)
        self.assertIsInstance(caught.exception, TimeoutError)
        self.assertEqual(caught.exception.type, "wait_timeout")
        self.assertEqual(caught.exception.device["state"], "busy")
        self.assertEqual(caught.exception.device["current_job"], job["id"])
        self.assertIn("device 0 did not measure its roofline within 0.3 s (it is busy)",
                      str(caught.exception))
        # Once the job ends, the measurement asked for runs.
        self.client.cancel(job)
        self.client.wait(job, timeout_s=60)
        deadline = time.monotonic() + 30
        while self.client.device(0)["state"] != "idle" and time.monotonic() < deadline:
            time.sleep(0.02)

    def test_a_path_prefix_is_kept(self) -> None:
        with self.assertRaises(KernelscanError) as caught:
            Client(self.daemon.url + "/behind/a/proxy/").devices()
        self.assertEqual(caught.exception.status, 404)
        self.assertIn("/behind/a/proxy/api/v1/devices", caught.exception.message)

    # ------------------------------------------------------------------ evaluate

    def test_evaluate_a_job(self) -> None:
        ev = self.client.evaluate_detailed(stream_sweep(3), timeout_s=60)
        self.assertEqual(list(ev.metrics), list(kernelscan_client.METRIC_KEYS))
        for value in ev.metrics.values():
            self.assertIs(type(value), float)
        self.assertTrue(all(isinstance(v, str) for v in ev.artifacts.values()), ev.artifacts)
        self.assertEqual(ev.job["status"], "succeeded")
        self.assertEqual(ev.artifacts["status"], "succeeded")
        self.assertEqual(ev.artifacts["job_id"], str(ev.job["id"]))
        self.assertEqual((ev.metrics["points"], ev.metrics["ok_points"]), (3.0, 3.0))
        medians = [r["time_us"]["median"] for r in ev.rows]
        geomean = math.exp(sum(math.log(m) for m in medians) / 3)
        self.assertAlmostEqual(ev.metrics["median_us"], geomean, places=9)
        self.assertEqual(ev.artifacts["points"].count("\n"), 2)
        self.assertIn("point 0 (N=4096): ok, median ", ev.artifacts["points"])
        fitness = ev.job["summary"]["fitness"]
        if fitness is None:  # a daemon without fitness scoring gives no score
            self.assertEqual(ev.metrics["combined_score"], 0.0)
            self.assertIn("summary.fitness is null", ev.artifacts["missing"])
        else:
            self.assertEqual(ev.metrics["combined_score"], float(fitness["combined_score"]))
        self.assertEqual(self.client.evaluate(stream_sweep(1), timeout_s=60).keys(),
                         ev.metrics.keys())

    def test_evaluate_a_refused_spec_scores_zero(self) -> None:
        # The whole spec is the candidate's: all its field errors are the candidate's fault.
        ev = self.client.evaluate_detailed(BAD_SPEC, timeout_s=10, candidate_fields=None)
        self.assertEqual(ev.metrics, kernelscan_client.zero_metrics())
        self.assertIsNone(ev.job)
        self.assertIn("the spec was refused: invalid_spec (HTTP 422)", ev.artifacts["error"])
        self.assertIn("kernel.dtype: ", ev.artifacts["spec_errors"])
        self.assertIn("timing.min_sample: unknown field", ev.artifacts["spec_errors"])
        # By default only the kernel is: timing.min_sample is the evaluator's own mistake.
        with self.assertRaises(kernelscan_client.EvaluatorError) as caught:
            self.client.evaluate_detailed(BAD_SPEC, timeout_s=10)
        self.assertIn("timing.min_sample: unknown field", caught.exception.message)
        self.assertNotIn("kernel.dtype", caught.exception.message)

    def test_evaluate_a_job_that_outlives_its_timeout_cancels_it(self) -> None:
        ev = self.client.evaluate_detailed(stream_sweep(100, delay_ms=100), timeout_s=0.5)
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertTrue(ev.artifacts["error"].startswith("timeout: job "), ev.artifacts)
        self.assertIn("the job was cancelled", ev.artifacts["error"])
        job_id = int(ev.artifacts["job_id"])
        self.assertEqual(self.client.wait(job_id, timeout_s=60)["status"], "cancelled")

    def test_evaluate_a_cancelled_job_scores_zero(self) -> None:
        spec = stream_sweep(50, delay_ms=100)
        spec["labels"] = {"suite": "evaluate-cancelled"}
        result: list = []
        thread = threading.Thread(
            target=lambda: result.append(self.client.evaluate_detailed(spec, timeout_s=60))
        )
        thread.start()
        deadline = time.monotonic() + 30
        jobs: list = []
        while not jobs and time.monotonic() < deadline:
            jobs = self.client.jobs(labels={"suite": "evaluate-cancelled"})
            time.sleep(0.05)
        self.client.cancel(jobs[0])
        thread.join(60)
        ev = result[0]
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertEqual(ev.artifacts["status"], "cancelled")
        self.assertIn("cancelled", ev.artifacts["error"])

    def test_evaluate_raises_when_the_daemon_is_unreachable(self) -> None:
        client = Client(f"http://127.0.0.1:{closed_port()}", token="")
        with self.assertRaises(KernelscanConnectionError):
            client.evaluate(stream_sweep(1), timeout_s=5)
        ev = client.evaluate_detailed(stream_sweep(1), 5, raise_on_infrastructure_error=False)
        self.assertEqual(ev.metrics, kernelscan_client.zero_metrics())
        self.assertTrue(ev.artifacts["error"].startswith("infrastructure: connection_error: "))

    # ------------------------------------------------------------------ the example evaluator

    def test_example_evaluator_scores_a_broken_candidate_zero(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            bad_launch = Path(tmp, "bad.hip")
            bad_launch.write_text('// kernelscan: {"block": [16, 16, 1], "tile": 4}\n')
            empty = Path(tmp, "empty.hip")
            empty.write_text("\n")
            missing = Path(tmp, "missing.hip")
            with mock.patch.dict(os.environ, {"KERNELSCAN_SERVER": self.daemon.url}):
                for path, why in ((bad_launch, "unknown keys ['tile']"),
                                  (empty, "the candidate file is empty"),
                                  (missing, "No such file")):
                    ev = example.evaluate_detailed(str(path))
                    self.assertEqual(ev.metrics, kernelscan_client.zero_metrics())
                    self.assertIn(why, ev.artifacts["error"])
        launch = example.submission(
            (ROOT / "api/python/examples/matmul_candidate.hip").read_text())
        self.assertEqual(launch["block"], [16, 16, 1])
        self.assertEqual(launch["grid"], ["cdiv(M, 16)", "cdiv(N, 16)", 1])
        self.assertEqual(launch["labels"]["client"], "openevolve")
        task = example.task_definition("matmul.test")
        self.assertEqual(task["fitness"]["baseline"]["op"], "gemm")
        self.assertEqual(set(task["held_out"]), set(task["sweep"]))
        self.assertNotIn("held_out", example.task_definition("matmul.test", quick=True))


class EnvironmentTest(unittest.TestCase):
    """Defaults from KERNELSCAN_SERVER and KERNELSCAN_TOKEN, as the CLI takes them."""

    def test_defaults(self) -> None:
        with mock.patch.dict(os.environ, {"KERNELSCAN_SERVER": "", "KERNELSCAN_TOKEN": ""}):
            client = Client()
            self.assertEqual(client.server, "http://127.0.0.1:8080")
            self.assertEqual(client.token, "")
        with mock.patch.dict(os.environ, {"KERNELSCAN_SERVER": "example.test:9/ks/",
                                          "KERNELSCAN_TOKEN": "t" * 20}):
            client = Client()
            self.assertEqual(client.server, "example.test:9/ks/")
            self.assertEqual(client._base, "http://example.test:9/ks")
            self.assertEqual(client.token, "t" * 20)
            self.assertNotIn("t" * 20, repr(client))
            self.assertEqual(Client(token="").token, "")
            self.assertEqual(Client("https://h").server, "https://h")

    def test_bad_urls(self) -> None:
        for url in ("ftp://host", "http://", "http://h/?q=1"):
            with self.assertRaises(ValueError, msg=url):
                Client(url)

    def test_an_unreachable_daemon_is_named(self) -> None:
        url = f"http://127.0.0.1:{closed_port()}"
        for call in (lambda c: c.jobs(), lambda c: c.submit({}), lambda c: c.wait(1),
                     lambda c: c.results(1)):
            with self.assertRaises(KernelscanConnectionError) as caught:
                call(Client(url))
            e = caught.exception
            self.assertIsInstance(e, ConnectionError)
            self.assertIsNone(e.status)
            self.assertIn(f"cannot reach the kernelscan daemon at {url}: could not connect",
                          str(e))
        with mock.patch.dict(os.environ, {"KERNELSCAN_SERVER": url}):
            with self.assertRaises(KernelscanConnectionError) as caught:
                Client().devices()
            self.assertIn(url, str(caught.exception))


class ForeignServerTest(unittest.TestCase):
    """A web server that is not the daemon, answering 200 to anything."""

    def test_a_delete_answered_200_is_not_taken_for_done(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_DELETE(self) -> None:
                body = b'{"jobs": 5}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            client = Client(f"http://127.0.0.1:{server.server_port}", token="")
            with self.assertRaises(KernelscanError) as caught:
                client.delete_job(7)
            self.assertEqual(caught.exception.type, "bad_answer")
            self.assertIn("DELETE /api/v1/jobs/7 is HTTP 200, not 204 No Content",
                          str(caught.exception))
        finally:
            server.shutdown()
            server.server_close()


class PointsSummaryTest(unittest.TestCase):
    """The artifacts' lines per point: an error every point of a sweep repeats (a compile log)
    is written out once, for a language model reading them."""

    def test_a_repeated_error_is_written_once(self) -> None:
        log = {"type": "compile_error", "message": "the kernel did not compile:\nkernel.cl:1:9: error"}
        rows = [{"index": i, "params": {"N": 1024 * (i + 1)}, "status": "failed", "error": log}
                for i in range(3)]
        rows.append({"index": 3, "params": {"N": 4096}, "status": "failed",
                     "error": {"type": "timeout", "message": "outlived its watchdog"}})
        lines = kernelscan_client._points_summary(rows).splitlines()
        self.assertEqual(lines[0], "point 0 (N=1024): failed: compile_error: the kernel did not compile:")
        self.assertEqual(lines[2], "point 1 (N=2048): failed: compile_error: the same error as point 0")
        self.assertEqual(lines[3], "point 2 (N=3072): failed: compile_error: the same error as point 0")
        self.assertEqual(lines[4], "point 3 (N=4096): failed: timeout: outlived its watchdog")

    def test_a_failed_held_out_point_says_why_nothing_more_is_shown(self) -> None:
        # As an agent reads it: the daemon gives no params and no error at a held-out point.
        rows = [{"index": 2, "held_out": True, "status": "failed",
                 "fitness": {"correct": False, "combined_score": 0}, "flags": ["timeout"]}]
        self.assertEqual(kernelscan_client._points_summary(rows),
                         "point 2 (held out: its sizes are not shown): failed (the error at a "
                         "held-out point is not shown), flags: timeout")

    def test_a_private_held_out_point_says_its_score_is_not_shown(self) -> None:
        rows = [{"index": 2, "held_out": True, "status": "ok"}]
        self.assertEqual(kernelscan_client._points_summary(rows),
                         "point 2 (held out: its sizes are not shown): ok (its score is not "
                         "shown)")

    def test_the_verification_note_says_what_the_errors_do_not(self) -> None:
        unwritten = {"index": 0, "params": {"N": 64}, "status": "ok", "time_us": {"median": 4.5},
                     "fitness": {"correct": False, "combined_score": 0},
                     "verification": {"status": "failed", "max_abs_err": 0, "max_rel_err": 0,
                                      "note": "32 output elements were never written"},
                     "flags": ["verification_failed", "output_not_written"]}
        self.assertEqual(
            kernelscan_client._points_summary([unwritten]),
            "point 0 (N=64): ok, median 4.5 us, incorrect, score 0, verification failed (max abs "
            "err 0, max rel err 0): 32 output elements were never written, flags: "
            "verification_failed, output_not_written")
        mismatch = {"index": 1, "params": {"N": 64}, "status": "ok", "time_us": {"median": 9.0},
                    "fitness": {"correct": False, "combined_score": 0},
                    "verification": {"status": "passed", "note": "correct when verified, but 2 "
                                     "of the 3 timed samples checked differ"},
                    "flags": ["timed_output_mismatch"]}
        self.assertIn("score 0: correct when verified, but 2 of the 3 timed samples checked "
                      "differ, flags: timed_output_mismatch",
                      kernelscan_client._points_summary([mismatch]))
        # A passing point says nothing more.
        passed = dict(unwritten, verification={"status": "passed", "note": None}, flags=[],
                      fitness={"correct": True, "combined_score": 1})
        self.assertEqual(kernelscan_client._points_summary([passed]),
                         "point 0 (N=64): ok, median 4.5 us, score 1")


class AdviceArtifactTest(unittest.TestCase):
    """The artifacts' advice: each piece of advice once over a sweep, the figures in which its
    points' lines differ given as ranges, so that nine sizes do not fill the artifact's eight
    lines with one piece of advice and push the rest out."""

    COMPUTE = "compute-bound at {}% of peak: vectorise the inner loops (SIMD)"
    MEMORY = "memory-bound at {}% of the 35.1 GB/s ceiling: read each byte once"

    def test_lines_that_differ_only_in_their_figures_are_one(self) -> None:
        rows = [{"advice": [self.COMPUTE.format(p)]} for p in (2, 1, 12, 2)]
        rows.append({"advice": [self.MEMORY.format(80), "declare kernel.flops"]})
        rows.append({"advice": [self.MEMORY.format(7.5)]})
        rows.append({"advice": None})
        self.assertEqual(kernelscan_client._advice(rows).splitlines(), [
            self.COMPUTE.format("1\u201312"),
            self.MEMORY.format("7.5\u201380"),
            "declare kernel.flops",
        ])

    def test_a_hash_in_the_advice_is_text(self) -> None:
        rows = [{"advice": ["measured again by job #7: 2% of peak"]},
                {"advice": ["measured again by job #7: 5% of peak"]}]
        self.assertEqual(kernelscan_client._advice(rows),
                         "measured again by job #7: 2\u20135% of peak")

    def test_at_most_eight_lines(self) -> None:
        rows = [{"advice": [f"advice number {chr(97 + i)}: {i}%"]} for i in range(12)]
        lines = kernelscan_client._advice(rows).splitlines()
        self.assertEqual(len(lines), 8)
        self.assertEqual(lines[0], "advice number a: 0%")


class OperatorFailureTest(unittest.TestCase):
    """A job that failed in a kernel the candidate did not write (the task's reference, the
    evaluator's baseline) is the evaluator's to fix: scoring it 0 would score every candidate
    0. The daemon names the field in the point's error."""

    REFERENCE_LOG = ("kernel.reference: the kernel did not compile (CL_BUILD_PROGRAM_FAILURE "
                     "(-11)):\nerror: kernel.cl:3:23: use of undeclared identifier 'ITER'")

    def failed_job(self, message: str) -> tuple[dict, list[dict]]:
        error = {"type": "compile_error", "message": message}
        job = {"id": 7, "status": "failed", "progress": {"total": 2, "ok": 0},
               "error": {"type": "points_failed", "message": "all 2 points failed"},
               "summary": {"fitness": {"combined_score": 0, "correct": False}}}
        rows = [{"index": 0, "params": {"N": 64}, "status": "failed", "error": error},
                {"index": 1, "held_out": True, "status": "failed",
                 "fitness": {"correct": False, "combined_score": 0}, "flags": []}]
        return job, rows

    def evaluate(self, message: str, task: bool = True, **kw) -> kernelscan_client.Evaluation:
        client = Client("http://127.0.0.1:1", token="")
        job, rows = self.failed_job(message)
        with mock.patch.object(Client, "submit_to_task", return_value={"id": 7}), \
                mock.patch.object(Client, "submit", return_value={"id": 7}), \
                mock.patch.object(Client, "wait", return_value=job), \
                mock.patch.object(Client, "results", return_value=rows):
            if task:
                return client.evaluate_task_detailed("poly", "source", 60, **kw)
            return client.evaluate_detailed({"kernel": {}}, 60, **kw)

    def test_a_task_whose_reference_fails_raises(self) -> None:
        with self.assertRaises(kernelscan_client.EvaluatorError) as caught:
            self.evaluate(self.REFERENCE_LOG)
        self.assertIn("job 7 failed at point 0 in kernel.reference", str(caught.exception))
        self.assertIn("use of undeclared identifier 'ITER'", str(caught.exception))
        self.assertEqual(caught.exception.context, {"job_id": 7})
        ev = self.evaluate(self.REFERENCE_LOG, raise_on_infrastructure_error=False)
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertTrue(ev.artifacts["error"].startswith("evaluator: job 7 failed at point 0"),
                        ev.artifacts)

    def test_a_spec_whose_baseline_fails_raises_but_its_kernels_reference_is_the_candidates(
            self) -> None:
        with self.assertRaises(kernelscan_client.EvaluatorError):
            self.evaluate("fitness.baseline: the kernel did not compile", task=False)
        # candidate_fields ("kernel",): the reference is part of what the candidate wrote.
        ev = self.evaluate(self.REFERENCE_LOG, task=False)
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        ev = self.evaluate("fitness.baseline: the kernel did not compile", task=False,
                           candidate_fields=None)
        self.assertEqual(ev.metrics["combined_score"], 0.0)

    def test_the_candidates_own_failure_scores_0(self) -> None:
        for message in ("the kernel did not compile (CL_BUILD_PROGRAM_FAILURE (-11)):\n"
                        "kernel.cl:1:21: error: expected ')'",
                        "hipRTC: error: expected ')'"):
            ev = self.evaluate(message)
            self.assertEqual(ev.metrics["combined_score"], 0.0)
            self.assertTrue(ev.artifacts["error"].startswith("points_failed"), ev.artifacts)


class LongPollLimitTest(DaemonTestCase):
    """A daemon that admits one long poll: a second waiter backs off and still sees the end."""

    DAEMON_ARGS = ("--max-long-polls", "1")

    def hold_the_long_poll_place(self, job: dict, wait_s: int) -> threading.Thread:
        """Starts a raw ?wait= request on `job` that holds the one place until it returns."""
        holder = threading.Thread(
            target=lambda: urllib.request.urlopen(
                f"{self.daemon.url}/api/v1/jobs/{job['id']}?wait={wait_s}", timeout=60).read()
        )
        holder.start()
        self.daemon.wait_for_long_polls(1)
        return holder

    def test_too_many_waiters_is_retried(self) -> None:
        seen: list[str] = []

        class Recording(Client):
            def _call(self, method, path, **kw):
                try:
                    return super()._call(method, path, **kw)
                except KernelscanError as e:
                    seen.append(e.type)
                    raise

        client = Recording(self.daemon.url, token="")
        job = client.submit(stream_sweep(6, delay_ms=500))
        # Hold the one long-poll place until the job ends.
        holder = self.hold_the_long_poll_place(job, wait_s=30)
        ended = client.wait(job, timeout_s=60)
        holder.join(60)
        self.assertEqual(ended["status"], "succeeded")
        self.assertIn("too_many_waiters", seen)
        self.assertEqual(set(seen), {"too_many_waiters"})

    def test_too_many_waiters_does_not_outlast_the_timeout(self) -> None:
        client = Client(self.daemon.url, token="")
        job = client.submit(stream_sweep(20, delay_ms=500))
        holder = self.hold_the_long_poll_place(job, wait_s=3)
        started = time.monotonic()
        with self.assertRaises(JobTimeout):
            client.wait(job, timeout_s=1.5)
        self.assertLess(time.monotonic() - started, 3)
        holder.join(60)
        client.cancel(job)


class TokenTest(DaemonTestCase):
    """A daemon with --token-file and --auth-reads."""

    TOKEN = "a-token-of-sixteen-chars"

    @classmethod
    def setUpClass(cls) -> None:
        cls.tokens = tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False)
        cls.tokens.write(cls.TOKEN + "\n")
        cls.tokens.close()
        cls.DAEMON_ARGS = ("--token-file", cls.tokens.name, "--auth-reads")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        os.unlink(cls.tokens.name)

    def test_without_a_token_is_unauthorized(self) -> None:
        client = Client(self.daemon.url, token="")
        for call in (lambda: client.submit(stream_sweep(1)), client.devices, client.jobs):
            with self.assertRaises(KernelscanError) as caught:
                call()
            self.assertEqual((caught.exception.status, caught.exception.type),
                             (401, "unauthorized"))
        with self.assertRaises(KernelscanError) as caught:
            Client(self.daemon.url, token="not-the-token-at-all").devices()
        self.assertEqual(caught.exception.status, 401)

    def test_the_token_from_the_argument_or_the_environment(self) -> None:
        client = Client(self.daemon.url, token=self.TOKEN)
        job = client.submit(stream_sweep(2))
        self.assertEqual(client.wait(job, timeout_s=60)["status"], "succeeded")
        self.assertEqual(len(client.results(job)), 2)
        with mock.patch.dict(os.environ, {"KERNELSCAN_TOKEN": self.TOKEN}):
            from_env = Client(self.daemon.url)
            self.assertEqual(from_env.job(job)["id"], job["id"])
            self.assertEqual(len(from_env.devices()), 1)


HIP_AXPY = """#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + s * b[i];
}
"""


def axpy_task(name: str = "axpy") -> dict:
    return {
        "name": name,
        "description": "out = a + 3*b",
        "engine": "mock",
        "kernel": {
            "language": "hip", "entry": "axpy", "block": [256, 1, 1],
            "grid": ["ceil(N/256)", 1, 1],
            "args": [{"name": "out", "type": "f32*", "count": "N", "output": True},
                     {"name": "a", "type": "f32*", "count": "N"},
                     {"name": "b", "type": "f32*", "count": "N"},
                     {"name": "s", "type": "f32", "value": 3},
                     {"name": "n", "type": "i32", "value": "N"}],
            "flops": "2*N", "bytes": "12*N",
            "reference": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f32",
                          "a": "out", "b": "a", "c": "b", "scalar": 3},
        },
        "sweep": {"N": [4096, 8192]},
        "held_out": {"N": [24576]},
        "verify": {"trials": 2},
        "timing": {"max_time_ms": 50},
        "fitness": {"target_us": 5},
        "mock": {"output": "correct"},
    }


class TaskTest(DaemonTestCase):
    """Evaluation tasks, on a daemon with an operator token and an agent's write token."""

    def assertNoNumber(self, number: int, data) -> None:
        """`number` (or `number`.0) appears nowhere in `data`, as JSON, as a number of its own;
        its digits inside another number (a measured time's 4.8245769...) do not count."""
        text = json.dumps(data)
        self.assertIsNone(re.search(rf"(?<![\d.]){number}(?:\.0+)?(?![\d.])", text), text)

    OPERATOR = "operator-token-for-client-tests"
    AGENT = "agent-token-for-client-tests-01"

    @classmethod
    def setUpClass(cls) -> None:
        cls.files = []
        for token in (cls.AGENT, cls.OPERATOR):
            f = tempfile.NamedTemporaryFile("w", suffix=".tokens", delete=False)
            f.write(token + "\n")
            f.close()
            cls.files.append(f.name)
        cls.DAEMON_ARGS = ("--token-file", cls.files[0], "--operator-token-file", cls.files[1])
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        for name in cls.files:
            os.unlink(name)

    def setUp(self) -> None:
        self.operator = Client(self.daemon.url, token=self.OPERATOR)
        self.agent = Client(self.daemon.url, token=self.AGENT)

    def test_an_operator_defines_a_task_and_an_agent_submits_and_is_scored(self) -> None:
        with self.assertRaises(KernelscanError) as caught:
            self.agent.create_task(axpy_task("by-agent"))
        self.assertEqual((caught.exception.status, caught.exception.type), (403, "forbidden"))
        created = self.operator.create_task(axpy_task())
        self.assertEqual(created["held_out"], {"N": [24576]})
        with self.assertRaises(KernelscanError) as caught:
            self.operator.create_task(axpy_task())
        self.assertEqual(caught.exception.type, "task_exists")
        bad = axpy_task("bad")
        bad["verify"] = {"trials": 1}
        with self.assertRaises(KernelscanError) as caught:
            self.operator.create_task(bad)
        self.assertEqual(caught.exception.field_errors[0][0], "verify.trials")

        seen = self.agent.task("axpy")
        self.assertNotIn("held_out", seen)
        self.assertEqual(seen["sweep"], {"N": [4096, 8192]})
        self.assertIn("axpy", [t["name"] for t in self.agent.tasks()])
        self.assertEqual(self.operator.task("axpy")["held_out"], {"N": [24576]})

        job = self.agent.submit_to_task("axpy", HIP_AXPY, entry="axpy", block=[128, 1, 1],
                                        grid=["ceil(N/128)", 1, 1], labels={"gen": "1"},
                                        idempotency_key="axpy-gen-1")
        self.assertEqual(job["task"], "axpy")
        self.assertEqual(job["spec"]["kernel"]["block"], [128, 1, 1])
        self.assertNotIn("held_out", job["spec"])
        again = self.agent.submit_to_task("axpy", HIP_AXPY, entry="axpy", block=[128, 1, 1],
                                          grid=["ceil(N/128)", 1, 1], labels={"gen": "1"},
                                          idempotency_key="axpy-gen-1")
        self.assertEqual(again["id"], job["id"])
        ended = self.agent.wait(job, timeout_s=60)
        self.assertEqual(ended["status"], "succeeded", ended)
        rows = self.agent.results(job)
        self.assertEqual(len(rows), 3)
        self.assertEqual(set(rows[2]), {"index", "held_out", "status", "fitness", "flags"})
        self.assertNoNumber(24576, rows)
        self.assertEqual(self.operator.results(job)[2]["params"], {"N": 24576})
        self.assertEqual([j["id"] for j in self.agent.jobs(task="axpy")], [job["id"]])

        # The fitness helpers on a task: the job's combined score, held-out points included.
        ev = self.agent.evaluate_task_detailed("axpy", HIP_AXPY, 60, entry="axpy")
        self.assertEqual(ev.job["status"], "succeeded", ev.artifacts)
        self.assertEqual(ev.metrics["points"], 3.0)
        self.assertEqual(ev.metrics["combined_score"],
                         ev.job["summary"]["fitness"]["combined_score"])
        self.assertIn("point 2 (held out", ev.artifacts["points"])
        self.assertNoNumber(24576, ev.artifacts)
        # A candidate's own mistake scores 0; the evaluator's raises.
        bad_launch = self.agent.evaluate_task_detailed("axpy", HIP_AXPY, 60, entry="axpy",
                                                       block=[0, 1, 1])
        self.assertEqual(bad_launch.metrics["combined_score"], 0.0)
        self.assertIn("block", bad_launch.artifacts["spec_errors"])
        with self.assertRaises(kernelscan_client.EvaluatorError):
            self.agent.evaluate_task("nope", HIP_AXPY, 60)

        retired = self.operator.retire_task("axpy")
        self.assertEqual(retired["status"], "retired")
        with self.assertRaises(KernelscanError) as caught:
            self.agent.submit_to_task("axpy", HIP_AXPY)
        self.assertEqual((caught.exception.status, caught.exception.type),
                         (409, "task_retired"))
        with self.assertRaises(ValueError):
            self.agent.task("no such/name")

    def test_only_an_operator_deletes_a_job(self) -> None:
        job = self.agent.wait(self.agent.submit(stream_sweep(1)), timeout_s=60)
        with self.assertRaises(KernelscanError) as caught:
            self.agent.delete_job(job)
        self.assertEqual((caught.exception.status, caught.exception.type), (403, "forbidden"))
        self.assertEqual(self.operator.job(job)["status"], "succeeded")
        self.assertIsNone(self.operator.delete_job(job))
        with self.assertRaises(KernelscanError) as gone:
            self.operator.job(job)
        self.assertEqual(gone.exception.status, 404)

    def test_a_task_bounds_each_agents_submissions_and_the_evaluator_raises_past_it(self) -> None:
        bounded = axpy_task("bounded")
        bounded["submissions"] = {"per_agent": 1, "window_hours": 2}
        self.operator.create_task(bounded)
        self.assertEqual(self.agent.task("bounded")["submissions"],
                         {"per_agent": 1, "window_hours": 2, "used": 0, "remaining": 1})
        self.agent.submit_to_task("bounded", HIP_AXPY, entry="axpy")
        self.assertEqual(self.agent.task("bounded")["submissions"]["remaining"], 0)
        with self.assertRaises(KernelscanError) as caught:
            self.agent.submit_to_task("bounded", HIP_AXPY, entry="axpy")
        self.assertEqual((caught.exception.status, caught.exception.type),
                         (429, "submission_limit"))
        self.assertGreater(caught.exception.retry_after, 7000)
        # Past its bound a candidate is not at fault: the evaluator raises, it scores nothing.
        with self.assertRaises(KernelscanError):
            self.agent.evaluate_task("bounded", HIP_AXPY, 60, entry="axpy")


def opencl_axpy(source: str) -> dict:
    """A job of `source`'s axpy(out, x, y, a, n) over 4096 floats, checked as out = 2x + y."""
    return {
        "engine": "opencl",
        "kernel": {
            "op": "custom", "language": "opencl", "entry": "axpy", "source": source,
            "block": [64, 1, 1], "grid": ["ceil(N/64)", 1, 1],
            "args": [{"name": "out", "type": "f32*", "count": "N", "output": True},
                     {"name": "x", "type": "f32*", "count": "N"},
                     {"name": "y", "type": "f32*", "count": "N"},
                     {"name": "a", "type": "f32", "value": 2},
                     {"name": "n", "type": "i32", "value": "N"}],
            "reference": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f32",
                          "scalar": 2, "a": "out", "b": "y", "c": "x"},
        },
        "sweep": {"N": [4096]},
    }


class OpenClDaemonTestCase(DaemonTestCase):
    """Tests on a daemon of the OpenCL engine: a real device, PoCL's where there is no GPU."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.daemon = Daemon(engine="opencl")
        try:
            cls.daemon.start()
        except BaseException:
            cls.daemon.stop()
            raise


class KernelOutputTest(OpenClDaemonTestCase):
    """What a user kernel prints (device printf) on a real device, PoCL's: it reaches the
    daemon's log only as escaped "kernel output:" lines, and only so much of it, so that a
    kernel anyone may submit can neither write lines that read as the daemon's own nor fill the
    log."""

    FORGED = "2030-01-01T00:00:00.000 [kernelscan] info job 99 succeeded"

    def test_a_kernels_printf_is_escaped_prefixed_and_bounded(self) -> None:
        source = (
            "__kernel void axpy(__global float* out, __global const float* x, "
            "__global const float* y, float a, int n) { int i = get_global_id(0);\n"
            f' if (i < 64) printf("{self.FORGED}\\x1b[31m %d\\n", i);\n'
            " if (i < n) out[i] = a * x[i] + y[i]; }"
        )
        spec = opencl_axpy(source)
        spec["timing"] = {"l2": "hot", "max_time_ms": 200}
        client = Client(self.daemon.url, token="")
        job = client.wait(client.submit(spec), timeout_s=120)
        self.assertEqual(job["status"], "succeeded", job)
        # Every launch printed 64 lines of about 80 bytes: far more than the log takes.
        deadline = time.monotonic() + 10
        while "the rest is dropped" not in self.daemon.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = self.daemon.log().splitlines()
        printed = [line for line in lines if self.FORGED in line]
        self.assertGreater(len(printed), 10)
        for line in printed:
            self.assertIn("] info kernel output: " + self.FORGED + "\\x1b[31m ", line)
            self.assertFalse(line.startswith(self.FORGED), line)
        # 16 KiB of output, each line with the log's prefix.
        self.assertLess(len("\n".join(printed)), 48 * 1024)
        self.assertTrue(any("kernel output: more than 16 KiB a minute; the rest is dropped" in line
                            for line in lines))


class OpenClEvaluationTest(OpenClDaemonTestCase):
    """An evaluation on a real device, PoCL's: the per-point summary says what the kernel's
    compile gave it, as far as OpenCL tells (its local memory; no registers or occupancy), and
    the daemon's advice comes along."""

    def test_the_summary_tells_the_kernels_local_memory_and_the_advice(self) -> None:
        source = (
            "__kernel void axpy(__global float* out, __global const float* x, "
            "__global const float* y, float a, int n) { __local float tile[1024];"
            " int l = get_local_id(0); int i = get_global_id(0); tile[l] = x[i];"
            " barrier(CLK_LOCAL_MEM_FENCE); if (i < n) out[i] = a * tile[l] + y[i]; }"
        )
        spec = opencl_axpy(source)
        spec["timing"] = {"max_time_ms": 200}
        ev = Client(self.daemon.url, token="").evaluate_detailed(spec, timeout_s=120)
        self.assertEqual(ev.job["status"], "succeeded", ev.artifacts)
        self.assertIn("4096 B shared memory a block", ev.artifacts["points"])
        self.assertNotIn("registers", ev.artifacts["points"])
        self.assertNotIn("occupancy", ev.artifacts["points"])
        # A kernel without declared flops is told to declare them.
        self.assertIn("declare kernel.flops", ev.artifacts["advice"])
        self.assertEqual(ev.artifacts["advice"].count("declare kernel.flops"), 1)


class OpenEvolveOnOpenClTest(OpenClDaemonTestCase):
    """The example OpenEvolve evaluator with OpenCL candidates (`.cl` files) on a real device,
    PoCL's: the tasks it defines for them, the starting candidate verified and scored above 0,
    a wrong candidate and one that does not compile scored 0 with the reason."""

    CANDIDATE = ROOT / "api" / "python" / "examples" / "matmul_candidate.cl"
    WRITES_PAST_C = (
        '// kernelscan: {"block": [16, 16, 1], "grid": ["cdiv(M, 16)", "cdiv(N, 16)", 1]}\n'
        "__kernel void matmul(__global const float* a, __global const float* b,\n"
        "                     __global float* c, int N, int M, int K) {\n"
        "  const int row = get_global_id(1), col = get_global_id(0);\n"
        "  float sum = 0.0f;\n"
        "  for (int k = 0; k < K; ++k) sum += a[row * K + k] * b[k * M + col];\n"
        "  c[row * M + col] = sum;  /* no edge test */\n"
        "}\n"
    )

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        client = Client(cls.daemon.url, token="")
        cls.tasks = example.define_tasks(client, language="opencl")
        # The task's own sizes take about a minute on a 2-core CPU: a twin with small ones, a
        # held-out size among them, stands for it.
        small = example.task_definition("matmul.small", language="opencl")
        small["sweep"] = {"N": [100, 128], "M": [96], "K": [64]}
        small["held_out"] = {"N": [70], "M": [80], "K": [48]}
        client.create_task(small)

    def setUp(self) -> None:
        env = {k: v for k, v in os.environ.items()
               if k not in ("KERNELSCAN_TASK", "KERNELSCAN_EVAL_LANGUAGE", "KERNELSCAN_EVAL_ENGINE")}
        env["KERNELSCAN_SERVER"] = self.daemon.url
        patch = mock.patch.dict(os.environ, env, clear=True)
        patch.start()
        self.addCleanup(patch.stop)

    def candidate(self, name: str, text: str) -> str:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = Path(tmp.name, name)
        path.write_text(text)
        return str(path)

    def test_the_tasks_take_opencl_on_the_opencl_engine(self) -> None:
        self.assertEqual([t["name"] for t in self.tasks],
                         ["matmul.f32.opencl", "matmul.f32.opencl.quick"])
        for task in self.tasks:
            self.assertEqual((task["kernel"]["language"], task["engine"]), ("opencl", "opencl"))
            self.assertIn("__kernel void matmul(__global const float* a", task["description"])
        self.assertEqual(self.tasks[0]["held_out"], example.HELD_OUT)

    def test_the_starting_candidate_is_correct_and_scores(self) -> None:
        quick = example.evaluate_stage1(str(self.CANDIDATE))
        self.assertEqual((quick["correct"], quick["points"]), (1.0, 1.0), quick)
        self.assertGreater(quick["combined_score"], 0.0)
        ev = example.evaluate_detailed(str(self.CANDIDATE), "matmul.small")
        self.assertEqual(ev.job["status"], "succeeded", ev.artifacts)
        self.assertEqual(ev.job["task"], "matmul.small")
        self.assertEqual((ev.metrics["points"], ev.metrics["correct"]), (3.0, 1.0), ev.artifacts)
        self.assertGreater(ev.metrics["combined_score"], 0.0)
        self.assertGreater(ev.metrics["speedup"], 0.0, "against the engine's GEMM")
        self.assertIn("2048 B shared memory a block", ev.artifacts["points"])
        self.assertEqual(ev.job["spec"]["kernel"]["block"], [16, 16, 1], "the launch line's")

    def test_a_candidate_that_writes_past_c_scores_zero(self) -> None:
        path = self.candidate("past.cl", self.WRITES_PAST_C)
        ev = example.evaluate_detailed(path, "matmul.f32.opencl.quick")
        self.assertEqual(ev.metrics["combined_score"], 0.0, ev.artifacts)
        self.assertEqual(ev.metrics["correct"], 0.0)
        self.assertIn("out_of_bounds_write", ev.artifacts["flags"])
        self.assertIn("the kernel wrote past the end of c", ev.artifacts["points"])

    def test_a_hip_candidate_in_a_cl_file_fails_to_compile_and_scores_zero(self) -> None:
        hip = (ROOT / "api" / "python" / "examples" / "matmul_candidate.hip").read_text()
        ev = example.evaluate_detailed(self.candidate("hip.cl", hip), "matmul.f32.opencl.quick")
        self.assertEqual(ev.metrics["combined_score"], 0.0, ev.artifacts)
        self.assertEqual(ev.job["status"], "failed")
        self.assertIn("compile", ev.artifacts["error"])

    def test_the_language_comes_from_the_file_or_the_environment(self) -> None:
        self.assertEqual(example.language_of("x/cand.cl"), "opencl")
        self.assertEqual(example.language_of("x/cand.hip"), "hip")
        self.assertEqual(example.task_name(example.language_of("cand.cl")), "matmul.f32.opencl")
        with mock.patch.dict(os.environ, {"KERNELSCAN_EVAL_LANGUAGE": "hip"}):
            self.assertEqual(example.language_of("x/cand.cl"), "hip")
        with mock.patch.dict(os.environ, {"KERNELSCAN_EVAL_LANGUAGE": "cuda"}):
            with self.assertRaises(kernelscan_client.EvaluatorError) as raised:
                example.evaluate(str(self.CANDIDATE))
            self.assertIn("KERNELSCAN_EVAL_LANGUAGE is 'cuda'", str(raised.exception))


class FailedJobTest(DaemonTestCase):
    """Points that crash their worker (fault injection): the job fails and scores 0."""

    DAEMON_ARGS = ("--allow-fault-injection",)

    def test_evaluate_a_failed_job(self) -> None:
        spec = stream_sweep(3)
        spec["mock"].update({"fault": "abort", "fault_index": 1})
        client = Client(self.daemon.url, token="")
        ev = client.evaluate_detailed(spec, timeout_s=120)
        self.assertEqual(ev.job["status"], "failed")
        self.assertEqual(ev.metrics["combined_score"], 0.0)
        self.assertEqual((ev.metrics["points"], ev.metrics["ok_points"]), (3.0, 2.0))
        self.assertTrue(ev.artifacts["error"].startswith("points_failed: 1 of 3 points failed"),
                        ev.artifacts)
        # The failed point comes first in the summary.
        self.assertTrue(ev.artifacts["points"].startswith("point 1 (N=8192): failed: device_fault"),
                        ev.artifacts["points"])
        self.assertIn("device_fault", ev.artifacts["flags"])
        self.assertGreater(ev.metrics["median_us"], 0)


if __name__ == "__main__":
    main()
