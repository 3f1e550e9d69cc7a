"""A Python client for the kernelscan daemon's HTTP/JSON API (api/openapi.yaml).

Standard library only (urllib, json); Python 3.11 or newer. One file: copy it next to your
code or put this folder on PYTHONPATH.

    from kernelscan_client import Client

    client = Client()                      # KERNELSCAN_SERVER / KERNELSCAN_TOKEN, like the CLI
    job = client.submit({"kernel": {"op": "stream", "variant": "triad", "n": "N"},
                         "sweep": {"N": [1 << 20, 1 << 24]}})
    job = client.wait(job, timeout_s=120)  # long polls until the job ends
    for row in client.results(job):
        print(row["params"], row["time_us"]["median"] if row["time_us"] else row["error"])

For agent loops (OpenEvolve and the like), `Client.evaluate(spec)` submits a job, waits for it
and returns a metrics dict of floats that always holds `combined_score` (0.0 on any failure of
the candidate); `Client.evaluate_detailed(spec)` returns the same metrics with text artifacts
saying why (job id, errors, flags, a per-point summary with each user kernel's registers and
occupancy where the platform tells them, the daemon's advice) and the raw job and rows.

Against an evaluation task an operator defined on the daemon, an agent sends only its
candidate: `client.submit_to_task("matmul", source, entry="mm", block=[16, 16, 1])` returns the
job, and `client.evaluate_task("matmul", source, ...)` scores it the same way.

Errors: an error answer of the API raises `KernelscanError` (HTTP status, the API's error
`type`, `message` and `details`, and `retry_after` when the daemon sent one); a daemon that
cannot be reached raises `KernelscanConnectionError`; `wait` past its time raises `JobTimeout`,
and `measure_roofline(wait=True)` past its time `RooflineTimeout`. All are `KernelscanError`s.

Threading: a Client holds no connection (each call opens its own), so one may be shared by
threads. Units: seconds for timeouts, microseconds (`*_us`) in the API's data.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import http.client
import json
import math
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = [
    "Client",
    "Evaluation",
    "EvaluatorError",
    "JobTimeout",
    "KernelscanConnectionError",
    "KernelscanError",
    "RooflineTimeout",
    "DEFAULT_SERVER",
    "METRIC_KEYS",
    "TASK_CANDIDATE_FIELDS",
    "TERMINAL_STATES",
    "group_by_point",
    "zero_metrics",
]

DEFAULT_SERVER = "http://127.0.0.1:8080"
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})
# What a submission to a task gives: a refusal naming one of these is the candidate's.
TASK_CANDIDATE_FIELDS = ("source", "entry", "block", "grid", "shared_bytes", "compile_options")

# Each long poll asks the daemon to hold it this long (it allows up to _MAX_WAIT_S), then the
# client polls again.
_LONG_POLL_S = 60.0
_MAX_WAIT_S = 600.0
# A long poll's read may take this much longer than the wait asked for.
_LONG_POLL_SLACK_S = 30.0
# Jobs per request when listing (the API's maximum).
_JOBS_PAGE = 1000
# Lines of per-point summary in evaluation artifacts; failed and flagged points come first.
_SUMMARY_LINES = 40
# Lines of advice in evaluation artifacts.
_ADVICE_LINES = 8
# A point that failed in a kernel other than the candidate's says whose, as the field that
# holds it: "kernel.reference: the kernel did not compile ...", "fitness.baseline: ...".
_FAILED_FOR_FIELD = re.compile(r"([a-z_]+(?:\.[a-z_]+|\[\d+\])+): ")


class KernelscanError(Exception):
    """An error answer of the API, `{"error": {"type", "message", "details", ...}}`.

    `status` is the HTTP status (None for errors with no answer: connection failures, wait
    timeouts), `type` the API's error type (`invalid_spec`, `not_found`, `unauthorized`, ...;
    `http_error` for an answer not in the API's error shape), `message` its message, `details`
    its list of `{"field", "message"}` problems (empty when it lists none), `context` the
    error's other members (`job_id` and `job_status` for `job_finished`, `job_id` for
    `idempotency_conflict`), `retry_after` the Retry-After header in seconds when the daemon
    sent one (429, 503).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        type: str = "error",  # noqa: A002 - the API's name for it
        details: list[dict] | None = None,
        context: dict | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.details = list(details or [])
        self.context = dict(context or {})
        self.retry_after = retry_after

    @property
    def field_errors(self) -> list[tuple[str, str]]:
        """(field, message) for each problem the answer lists (`invalid_spec`,
        `invalid_import`, `invalid_parameter`, ...); else empty."""
        return [
            (str(d.get("field", "")), str(d.get("message", "")))
            for d in self.details
            if isinstance(d, dict) and "field" in d
        ]

    def __str__(self) -> str:
        head = self.type + (f" (HTTP {self.status})" if self.status is not None else "")
        text = f"{head}: {self.message}"
        fields = self.field_errors
        # The message already names the first problem; list them all when there are more.
        if len(fields) > 1:
            text += "".join(f"\n  {f}: {m}" for f, m in fields)
        return text


class EvaluatorError(KernelscanError):
    """The daemon refused a spec for fields the candidate does not write (`evaluate`'s
    `candidate_fields`): the evaluator's own template, or an engine or device the daemon does
    not have. No candidate can score anything until it is fixed, so it is not scored 0.0.
    `status`, `type`, `details` and `context` are the daemon's answer."""


class KernelscanConnectionError(KernelscanError, ConnectionError):
    """The daemon could not be reached, or the connection broke before a whole answer came."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type="connection_error")


class JobTimeout(KernelscanError, TimeoutError):
    """`Client.wait` ran out of time; `job` is the job as last seen (still queued or running)."""

    def __init__(self, message: str, job: dict) -> None:
        super().__init__(message, type="wait_timeout")
        self.job = job


class RooflineTimeout(KernelscanError, TimeoutError):
    """`Client.measure_roofline(wait=True)` ran out of time; `device` is the device as last
    seen."""

    def __init__(self, message: str, device: dict) -> None:
        super().__init__(message, type="wait_timeout")
        self.device = device


@dataclasses.dataclass
class Evaluation:
    """What `Client.evaluate_detailed` found.

    `metrics`: floats only (see `Client.evaluate`). `artifacts`: text for people and language
    models, str values only (OpenEvolve's `EvaluationResult(metrics=..., artifacts=...)` takes
    both as they are). `job`: the job as it ended (None when it was never accepted). `rows`: its
    result rows.
    """

    metrics: dict[str, float]
    artifacts: dict[str, str]
    job: dict | None = None
    rows: list[dict] = dataclasses.field(default_factory=list)


METRIC_KEYS = (
    "combined_score",
    "correct",
    "speedup",
    "latency_score",
    "median_us",
    "points",
    "ok_points",
)


def zero_metrics() -> dict[str, float]:
    """The metrics of `Client.evaluate` for a candidate that could not be scored: all 0.0.

    For evaluators that fail before anything reaches the daemon (an unreadable candidate)."""
    return dict.fromkeys(METRIC_KEYS, 0.0)


def _job_id(job: int | Mapping[str, Any]) -> int:
    """A job id from an id or a job dict; refuses anything else (it goes into a URL path)."""
    value = job.get("id") if isinstance(job, Mapping) else job
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"not a job id: {job!r}")
    return value


def _task_name(name: str) -> str:
    """A task's name for a path: [A-Za-z0-9_.-]{1,64}, which needs no quoting."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
        raise ValueError(f"{name!r} is not a task name ([A-Za-z0-9_.-], 1 to 64 characters)")
    return name


def _device_path(index: int, node: str | None, tail: str = "") -> str:
    """/api/v1/devices/{index}{tail}[?node=NODE], refusing what is not a device index or a node
    name (they go into the URL)."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"not a device index: {index!r}")
    path = f"/api/v1/devices/{index}{tail}"
    if node is None:
        return path
    if not isinstance(node, str) or not node:
        raise ValueError(f"not a node name: {node!r}")
    return path + "?" + urllib.parse.urlencode({"node": node})


def _measured_at(device: Mapping[str, Any]) -> Any:
    measured = device.get("measured")
    return measured.get("measured_at") if isinstance(measured, Mapping) else None


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _gzipped(headers: Any) -> bool:
    """Whether an answer's body came gzipped (asked for with Accept-Encoding: gzip)."""
    return (headers.get("Content-Encoding") or "").strip().lower() == "gzip"


def _failure(status: int, body: bytes, headers: Any) -> KernelscanError:
    """The API's error from an error answer; a body in another shape (a proxy's page) gives
    type `http_error` and the start of the body, as the CLI does."""
    retry = _retry_after(headers)
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        e = parsed["error"]
        details = e.get("details")
        return KernelscanError(
            str(e.get("message", "")),
            status=status,
            type=str(e.get("type", "http_error")),
            details=details if isinstance(details, list) else None,
            context={k: v for k, v in e.items() if k not in ("type", "message", "details")},
            retry_after=retry,
        )
    excerpt = body[:200].decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")
    message = f"HTTP {status}" + (f": {excerpt}" if excerpt else "")
    return KernelscanError(message, status=status, type="http_error", retry_after=retry)


def _number(value: Any) -> float | None:
    """A finite float from a JSON number; None for null, booleans, strings, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values if v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def group_by_point(rows: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The rows of a job with variants grouped by sweep point, in point order: one dict per
    point, ``{"index": 3, "params": {...}, "variants": {"naive": row, "tiled": row, ...},
    "fastest": "tiled"}``, the variants in the order their rows came, ``fastest`` the variant
    with the smallest median among those that measured (None when none did). Rows without a
    ``variant`` (a job without variants) are grouped under the name None."""
    points: dict[int, dict] = {}
    for row in rows:
        index = row.get("index")
        point = points.setdefault(
            index, {"index": index, "params": row.get("params"), "variants": {}, "fastest": None}
        )
        point["variants"][row.get("variant")] = row
    for point in points.values():
        best = None
        for name, row in point["variants"].items():
            median = _number((row.get("time_us") or {}).get("median"))
            if row.get("status") == "ok" and median is not None and (best is None or median < best[0]):
                best = (median, name)
        point["fastest"] = best[1] if best else None
    return [points[i] for i in sorted(points, key=lambda i: (i is None, i or 0))]


class Client:
    """A client of one kernelscan daemon.

    `server`: the daemon's base URL, `http://HOST:PORT` or `https://...`, optionally with a
    path prefix (a reverse proxy's), which is kept; without a scheme, http is assumed. When
    None: `KERNELSCAN_SERVER`, else http://127.0.0.1:8080 (the CLI's rules; an empty variable
    counts as unset). `token`: sent as `Authorization: Bearer`, for a daemon started with
    `--token-file`; when None, `KERNELSCAN_TOKEN`; "" sends none. `timeout`: seconds to wait for
    the connection and for each read of an ordinary request (long polls add their wait).

    Proxy environment variables (`http_proxy`, ...) are ignored, as the CLI ignores them: the
    daemon is normally on loopback. Raises ValueError for a URL it cannot use.
    """

    def __init__(
        self, server: str | None = None, token: str | None = None, timeout: float = 60.0
    ) -> None:
        if server is None:
            server = os.environ.get("KERNELSCAN_SERVER") or DEFAULT_SERVER
        if token is None:
            token = os.environ.get("KERNELSCAN_TOKEN") or ""
        url = server if "://" in server else "http://" + server
        parts = urllib.parse.urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            raise ValueError(f"server {server!r}: the URL must start with http:// or https://")
        if not parts.netloc:
            raise ValueError(f"server {server!r}: no host")
        if parts.query or parts.fragment:
            raise ValueError(f"server {server!r}: a query or fragment has no place in it")
        self.server = server
        self.token = token
        self.timeout = float(timeout)
        self._base = f"{parts.scheme.lower()}://{parts.netloc}{parts.path.rstrip('/')}"
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def __repr__(self) -> str:
        return f"Client(server={self.server!r}, token={'***' if self.token else None})"

    # ------------------------------------------------------------------ HTTP

    def _open(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ):
        """Sends one request; returns the open response of a 2xx answer (the caller reads and
        closes it). Raises KernelscanError for an error answer and KernelscanConnectionError
        when there is none."""
        all_headers = {"Accept": "application/json"}
        if body is not None:
            all_headers["Content-Type"] = "application/json"
        if self.token:
            all_headers["Authorization"] = f"Bearer {self.token}"
        all_headers.update(headers or {})
        request = urllib.request.Request(
            self._base + path, data=body, headers=all_headers, method=method
        )
        wait = self.timeout if timeout is None else timeout
        try:
            return self._opener.open(request, timeout=wait)
        except urllib.error.HTTPError as e:
            with e:
                try:
                    body = e.read()
                    if _gzipped(e.headers):
                        body = gzip.decompress(body)  # asked with Accept-Encoding: gzip
                except (OSError, EOFError, http.client.HTTPException):
                    body = b""  # the status says enough
                raise _failure(e.code, body, e.headers) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise self._unreachable(e, wait) from e

    def _unreachable(self, error: BaseException, timeout: float) -> KernelscanConnectionError:
        reason = error.reason if isinstance(error, urllib.error.URLError) else error
        if isinstance(reason, ConnectionRefusedError):
            why = "could not connect (connection refused)"
        elif isinstance(reason, (TimeoutError, socket.timeout)):
            why = f"no answer within {timeout:g} s"
        elif isinstance(reason, socket.gaierror):
            why = f"unknown host ({reason})"
        else:
            why = str(reason) or type(reason).__name__
        return KernelscanConnectionError(
            f"cannot reach the kernelscan daemon at {self.server}: {why} (is `kernelscan serve`"
            " running there? set the address with Client(server=...) or KERNELSCAN_SERVER)"
        )

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        """One request whose 2xx answer is JSON: the parsed body."""
        wait = kw.get("timeout") or self.timeout
        try:
            with self._open(method, path, **kw) as response:
                data = response.read()
        except (OSError, http.client.HTTPException) as e:  # the connection broke while reading
            if isinstance(e, KernelscanError):
                raise
            raise self._unreachable(e, wait) from e
        try:
            return json.loads(data)
        except ValueError:
            excerpt = data[:200].decode("utf-8", "replace")
            raise KernelscanError(
                f"the answer to {method} {path} is not JSON: {excerpt!r}", type="bad_answer"
            ) from None

    # ------------------------------------------------------------------ the API

    def submit(
        self, spec: Mapping[str, Any] | str | bytes, idempotency_key: str | None = None
    ) -> dict:
        """POST /api/v1/jobs: the job as accepted (`status` "queued", `id`, the canonical `spec`).

        `spec` is a dict (sent as JSON) or JSON text sent as it is. With `idempotency_key`, a
        retry with the same key and the same bytes returns the job the first submission made
        instead of a new one (a dict spec serialises to the same bytes each time). An invalid
        spec raises KernelscanError `invalid_spec` (422) whose `field_errors` name each field.
        """
        if isinstance(spec, str):
            body = spec.encode("utf-8")
        elif isinstance(spec, (bytes, bytearray)):
            body = bytes(spec)
        else:
            body = json.dumps(spec, separators=(",", ":")).encode("utf-8")
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._call("POST", "/api/v1/jobs", body=body, headers=headers)

    def rerun(self, job: int | Mapping[str, Any]) -> dict:
        """Submits job `job`'s spec again as a new job, measured afresh: `cache` false (not
        answered with the results the first run stored) and without its `seed` (the daemon draws
        new inputs). Returns the new job, as submit() does. An import (nothing to run) or a
        task's candidate (submit it to the task again) raises ValueError."""
        old = self.job(job)
        if old.get("engine") == "import":
            raise ValueError(f"job {old['id']} was imported (measured elsewhere): nothing to run")
        if old.get("task") is not None:
            raise ValueError(f"job {old['id']} is a candidate of task {old['task']!r}: submit it "
                             "to the task again")
        spec = dict(old["spec"], cache=False)
        spec.pop("seed", None)
        return self.submit(spec)

    def job(self, job: int | Mapping[str, Any]) -> dict:
        """GET /api/v1/jobs/{id}: the job now, with its spec, progress, error and summary."""
        return self._call("GET", f"/api/v1/jobs/{_job_id(job)}")

    def wait(
        self,
        job: int | Mapping[str, Any],
        timeout_s: float | None = None,
        poll_s: float = _LONG_POLL_S,
    ) -> dict:
        """Waits until the job ends (succeeded, failed or cancelled) and returns it.

        Long polls `GET /api/v1/jobs/{id}?wait=S` of at most `poll_s` seconds each, again and
        again, for at most `timeout_s` seconds in all (None: no limit); past it, raises
        JobTimeout holding the job as last seen. The daemon admits a limited number of long
        polls at once: a 429 `too_many_waiters` is retried after its Retry-After.
        """
        job_id = _job_id(job)
        if not poll_s > 0:
            raise ValueError("poll_s must be positive")
        deadline = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            hold = min(poll_s, _MAX_WAIT_S)
            if remaining is not None:
                hold = max(0.0, min(hold, remaining))
            try:
                current = self._call(
                    "GET",
                    f"/api/v1/jobs/{job_id}?wait={hold:.3f}",
                    timeout=hold + _LONG_POLL_SLACK_S,
                )
            except KernelscanError as e:
                if e.status != 429 or e.type != "too_many_waiters":
                    raise
                pause = e.retry_after if e.retry_after and e.retry_after > 0 else 1.0
                if deadline is not None:
                    pause = min(pause, max(0.0, deadline - time.monotonic()))
                    if pause <= 0:
                        current = self.job(job_id)  # one plain look before giving up
                        if current.get("status") in TERMINAL_STATES:
                            return current
                        raise JobTimeout(self._timeout_message(job_id, timeout_s, current),
                                         current) from None
                time.sleep(pause)
                continue
            if current.get("status") in TERMINAL_STATES:
                return current
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeout(self._timeout_message(job_id, timeout_s, current), current)

    @staticmethod
    def _timeout_message(job_id: int, timeout_s: float | None, job: dict) -> str:
        progress = job.get("progress") or {}
        return (
            f"job {job_id} did not end within {timeout_s:g} s (it is {job.get('status')}, "
            f"{progress.get('done', '?')} of {progress.get('total', '?')} points measured)"
        )

    def cancel(self, job: int | Mapping[str, Any]) -> dict:
        """POST /api/v1/jobs/{id}/cancel: the job after the cancel was recorded (a queued job is
        `cancelled` at once, a running one `cancel_requested` until its point ends). A job that
        already ended raises KernelscanError `job_finished` (409)."""
        return self._call("POST", f"/api/v1/jobs/{_job_id(job)}/cancel")

    def confirm(self, job: int | Mapping[str, Any]) -> dict:
        """POST /api/v1/jobs/{id}/confirm (an operator): scores a job whose score was withheld
        for an `excessive_speedup` (`summary.fitness.withheld`); the job, now `confirmed`. A job
        with nothing withheld raises KernelscanError `nothing_to_confirm` (409)."""
        return self._call("POST", f"/api/v1/jobs/{_job_id(job)}/confirm")

    def delete_job(self, job: int | Mapping[str, Any]) -> None:
        """DELETE /api/v1/jobs/{id}: deletes a job that ended (succeeded, failed or cancelled)
        with its results, spec and labels; it cannot be undone. A queued or running job raises
        KernelscanError `job_not_finished` (409: cancel it first), an unknown or already deleted
        one `not_found` (404); where the daemon has operator tokens, another token raises
        `forbidden` (403)."""
        path = f"/api/v1/jobs/{_job_id(job)}"
        try:
            with self._open("DELETE", path) as response:
                status = response.status
                data = response.read()
        except (OSError, http.client.HTTPException) as e:  # the connection broke while reading
            if isinstance(e, KernelscanError):
                raise
            raise self._unreachable(e, self.timeout) from e
        # Only the API's 204 says the job is gone: a server that answers 200 to anything
        # deleted nothing.
        if status != 204:
            excerpt = data[:200].decode("utf-8", "replace")
            raise KernelscanError(
                f"the answer to DELETE {path} is HTTP {status}, not 204 No Content: {excerpt!r}",
                type="bad_answer",
            )

    def delete_jobs(
        self,
        status: str | Iterable[str] | None = None,
        labels: Mapping[str, str] | None = None,
        task: str | None = None,
        older_than_days: float | None = None,
        dry_run: bool = False,
    ) -> list[int]:
        """Deletes every job that ended matching all the filters given (at least one), as
        `kernelscan delete` with filters does: `status` among succeeded, failed and cancelled
        (all three when None), `labels` and `task` as jobs() takes them, `older_than_days` for
        jobs that ended longer ago than that. Queued and running jobs are never deleted. Returns
        the ids deleted, newest first (with `dry_run`, those that would be, deleting nothing).
        A job deleted meanwhile by someone else is passed over; any other refusal raises."""
        ended = ("succeeded", "failed", "cancelled")
        states = [status] if isinstance(status, str) else list(status or [])
        states = [s for item in states for s in item.split(",")]
        for state in states:
            if state not in ended:
                raise ValueError(
                    f"status {state!r}: only jobs that ended are deleted ({', '.join(ended)})"
                )
        if not (states or labels or task or older_than_days is not None):
            raise ValueError("give a filter: status, labels, task or older_than_days")
        if older_than_days is not None and not (
            isinstance(older_than_days, (int, float)) and older_than_days >= 0
        ):
            raise ValueError(f"older_than_days must be a number >= 0, not {older_than_days!r}")
        cutoff = time.time() - 86400.0 * (older_than_days or 0)
        done: list[int] = []
        for job in self.jobs(status=states or ended, labels=labels, task=task):
            if older_than_days is not None:
                finished = job.get("finished_at")
                if not isinstance(finished, str):
                    continue
                stamp = datetime.datetime.fromisoformat(finished.replace("Z", "+00:00"))
                if stamp.timestamp() > cutoff:
                    continue
            if not dry_run:
                try:
                    self.delete_job(job)
                except KernelscanError as e:
                    if e.status != 404:
                        raise
                    continue
            done.append(job["id"])
        return done

    def iter_results(self, job: int | Mapping[str, Any]) -> Iterator[dict]:
        """The job's result rows, one dict per stored sweep point in index order, read as they
        arrive from one `GET .../results?format=jsonl` stream (a large job is never held whole;
        it travels gzipped, about a fifth of its size). A running job gives the rows stored so
        far."""
        path = f"/api/v1/jobs/{_job_id(job)}/results?format=jsonl"
        response = self._open(
            "GET", path, headers={"Accept": "application/x-ndjson", "Accept-Encoding": "gzip"}
        )
        try:
            with response:
                lines = response
                if _gzipped(response.headers):
                    lines = gzip.GzipFile(fileobj=response)
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except json.JSONDecodeError as e:
            raise KernelscanError(f"a results line is not JSON: {e}", type="bad_answer") from None
        except (OSError, EOFError, http.client.HTTPException) as e:  # EOFError: gzip cut off
            if isinstance(e, KernelscanError):
                raise
            raise self._unreachable(e, self.timeout) from e

    def results(self, job: int | Mapping[str, Any]) -> list[dict]:
        """Every result row of the job (see iter_results)."""
        return list(self.iter_results(job))

    def jobs(
        self,
        status: str | Iterable[str] | None = None,
        labels: Mapping[str, str] | None = None,
        limit: int | None = None,
        task: str | None = None,
    ) -> list[dict]:
        """GET /api/v1/jobs: jobs newest first, without their specs.

        `status`: one state, a comma list or an iterable of states (any of them); `labels`:
        every label must match exactly; `limit`: at most this many jobs (None: every matching
        job, following the API's cursors page by page); `task`: only the jobs submitted to
        this evaluation task.
        """
        if limit is not None and (type(limit) is not int or limit < 1):
            raise ValueError(f"limit must be a positive integer, not {limit!r}")
        query: list[tuple[str, str]] = []
        if status:
            query.append(("status", status if isinstance(status, str) else ",".join(status)))
        for key, value in (labels or {}).items():
            query.append((f"label.{key}", str(value)))
        if task:
            query.append(("task", task))
        found: list[dict] = []
        cursor = None
        while limit is None or len(found) < limit:
            page = _JOBS_PAGE if limit is None else min(_JOBS_PAGE, limit - len(found))
            params = [("limit", str(page)), *query] + ([("cursor", cursor)] if cursor else [])
            body = self._call("GET", "/api/v1/jobs?" + urllib.parse.urlencode(params))
            found.extend(body.get("jobs", []))
            cursor = body.get("next_cursor")
            if not isinstance(cursor, str):
                break
        return found

    # ------------------------------------------------------------------ evaluation tasks

    def create_task(self, definition: Mapping[str, Any]) -> dict:
        """POST /api/v1/tasks: defines an evaluation task (an operator's request: with
        `--operator-token-file`, the client's token must be an operator token). `definition`
        holds `name`, `description`, `kernel` (a custom kernel without `source`: its arguments,
        flops, bytes, `reference`, launch defaults), `sweep`, `held_out`, `verify`, `timing`,
        `fitness`, `engine`, `device`. Returns the task as stored, `held_out` included. A name
        in use raises KernelscanError `task_exists` (409); an invalid task `invalid_spec` (422)
        naming each field."""
        body = json.dumps(definition, separators=(",", ":")).encode("utf-8")
        return self._call("POST", "/api/v1/tasks", body=body)

    def task(self, name: str) -> dict:
        """GET /api/v1/tasks/{name}: what a candidate needs (the kernel's arguments, public
        sizes, dtypes, tolerances, flops and bytes, target); `held_out` only for an operator."""
        return self._call("GET", f"/api/v1/tasks/{_task_name(name)}")

    def tasks(self) -> list[dict]:
        """GET /api/v1/tasks: every task by name, retired ones included."""
        return self._call("GET", "/api/v1/tasks").get("tasks", [])

    def retire_task(self, name: str) -> dict:
        """DELETE /api/v1/tasks/{name}: the task takes no new submissions (an operator's
        request); its jobs stay readable. Returns the task, retired."""
        return self._call("DELETE", f"/api/v1/tasks/{_task_name(name)}")

    def submit_to_task(
        self,
        name: str,
        source: str,
        entry: str | None = None,
        block: list | None = None,
        grid: list | None = None,
        shared_bytes: int | str | None = None,
        compile_options: list[str] | None = None,
        job_name: str | None = None,
        labels: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> dict:
        """POST /api/v1/tasks/{name}/submissions: a candidate's source and launch settings
        (None: the task's default) measured as the task fixes everything else, at its public and
        held-out sizes. Returns the job as accepted (with `task`); wait(), results() and the
        fitness helpers work on it as on any job. Held-out points read back without their
        sizes and times unless the client's token is an operator's."""
        submission: dict[str, Any] = {"source": source}
        for key, value in (("entry", entry), ("block", block), ("grid", grid),
                           ("shared_bytes", shared_bytes), ("compile_options", compile_options),
                           ("name", job_name), ("labels", dict(labels) if labels else None)):
            if value is not None:
                submission[key] = value
        body = json.dumps(submission, separators=(",", ":")).encode("utf-8")
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._call("POST", f"/api/v1/tasks/{_task_name(name)}/submissions", body=body,
                          headers=headers)

    def evaluate_task(
        self, name: str, source: str, timeout_s: float = 300.0, **kw: Any
    ) -> dict[str, float]:
        """Scores a candidate against a task: the metrics of `evaluate_task_detailed`."""
        return self.evaluate_task_detailed(name, source, timeout_s, **kw).metrics

    def evaluate_task_detailed(
        self,
        name: str,
        source: str,
        timeout_s: float = 300.0,
        *,
        idempotency_key: str | None = None,
        cancel_on_timeout: bool = True,
        raise_on_infrastructure_error: bool = True,
        **launch: Any,
    ) -> Evaluation:
        """As `evaluate_detailed`, for a candidate submitted to task `name` (`launch`: entry,
        block, grid, shared_bytes, compile_options, job_name, labels, as submit_to_task takes
        them). A refusal naming the candidate's fields scores 0.0; one naming anything else
        (an unknown task, a retired one, a field the client sent by mistake) raises
        EvaluatorError: no candidate is at fault. A task that bounds each agent's submissions
        (its `submissions`) refuses one past the bound with 429 `submission_limit`, raised as
        KernelscanError with `retry_after` the seconds until it takes the next (None where
        the bound is over the task's life)."""
        return self._evaluate(
            lambda: self.submit_to_task(name, source, idempotency_key=idempotency_key, **launch),
            timeout_s, cancel_on_timeout, raise_on_infrastructure_error,
            TASK_CANDIDATE_FIELDS, refusals=(404, 409))

    def devices(self) -> list[dict]:
        """GET /api/v1/devices: each device with its description, worker state and counters (in
        a fleet every node's, each with its `node`)."""
        return self._call("GET", "/api/v1/devices").get("devices", [])

    def device(self, index: int, node: str | None = None) -> dict:
        """GET /api/v1/devices/{index}: one device of `node` (a fleet's node name), or of the
        daemon this client talks to when None. An unknown node or index raises KernelscanError
        `not_found` (404) whose `field_errors` name `node` or `index`."""
        return self._call("GET", _device_path(index, node))

    def measure_roofline(
        self,
        index: int,
        node: str | None = None,
        *,
        wait: bool = False,
        timeout_s: float = 600.0,
        poll_s: float = 0.5,
    ) -> dict:
        """POST /api/v1/devices/{index}/roofline: asks the device (of `node`, as in `device`) to
        measure its roofline again between its jobs; the device as the daemon answered (202,
        `roofline_requested` true). A node of a fleet that is offline raises KernelscanError
        `node_offline` (409); an unknown node or index `not_found` (404).

        With `wait`, polls the device every `poll_s` seconds until its `measured` ceilings are
        new and returns it: RooflineTimeout (with `.device`) past `timeout_s`, KernelscanError
        `roofline_failed` when the device reports that the measurement failed.
        """
        if wait and not (timeout_s >= 0 and poll_s > 0):
            raise ValueError("timeout_s must be >= 0 and poll_s positive")
        before = self.device(index, node) if wait else None
        answer = self._call("POST", _device_path(index, node, "/roofline"), body=b"{}")
        if before is None:
            return answer
        deadline = time.monotonic() + timeout_s
        while True:
            current = self.device(index, node)
            fresh = _measured_at(current) != _measured_at(before)
            if fresh and current.get("state") != "measuring":
                return current
            error = str(current.get("last_error") or "")
            if error != str(before.get("last_error") or "") and "roofline" in error:
                raise KernelscanError(error, type="roofline_failed", context={"device": current})
            if time.monotonic() >= deadline:
                where = f" of node {node}" if node is not None else ""
                raise RooflineTimeout(
                    f"device {index}{where} did not measure its roofline within {timeout_s:g} s "
                    f"(it is {current.get('state')})",
                    current,
                )
            time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))

    # ------------------------------------------------------------------ fitness

    def evaluate(
        self, spec: Mapping[str, Any] | str, timeout_s: float = 300.0, **kw: Any
    ) -> dict[str, float]:
        """Scores a job for an agent loop: the metrics of `evaluate_detailed`, floats only.

        This is the plain dict an OpenEvolve `evaluate(program_path)` may return. Keys (always
        all present):

        - `combined_score`: the daemon's `summary.fitness.combined_score` of a job that
          succeeded; 0.0 when the spec is refused, the job fails (any point failed) or is
          cancelled, the wait times out, or the daemon gives no score. There is no partial
          credit: the score is a geometric mean over every point, and any credit for a job
          with failed points would let a candidate raise it by failing the sizes it is slow
          at. `points` and `ok_points` tell how far a failed job got.
        - `correct`: 1.0 when the daemon judged every point correct, else 0.0.
        - `speedup`: the geometric mean speedup over the spec's `fitness.baseline`; 0.0 without.
        - `latency_score`: the daemon's mean latency score; 0.0 without.
        - `median_us`: the geometric mean of the median times of the points that measured ok
          (a one-point job: its median), so each size weighs the same whatever its scale; 0.0
          when no point did. Lower is better.
        - `points`, `ok_points`: points in the sweep, and those measured ok.

        Artifacts (in evaluate_detailed) say why a score is 0.0, and `simulated` says in words
        when the mock engine measured the job (its times are a model's, nothing was compiled
        or run, and an unverified point is never correct, so such a score is 0.0 unless the
        spec's `mock.output` simulated a verification).
        """
        return self.evaluate_detailed(spec, timeout_s, **kw).metrics

    def evaluate_detailed(
        self,
        spec: Mapping[str, Any] | str,
        timeout_s: float = 300.0,
        *,
        idempotency_key: str | None = None,
        cancel_on_timeout: bool = True,
        raise_on_infrastructure_error: bool = True,
        candidate_fields: Iterable[str] | None = ("kernel",),
    ) -> Evaluation:
        """Submits `spec`, waits up to `timeout_s` for the job, reads its rows and scores it.

        Failures of the candidate give a score of 0.0 and an `error` artifact: a spec refused
        for the candidate's fields (400/413/422: the field errors), a job that failed (a
        compile error with its log, a faulting or timed-out point), was cancelled, or did not
        end in time (then it is cancelled, unless `cancel_on_timeout` is False).

        `candidate_fields` are the spec's fields (JSON paths, and everything under them) that
        the candidate wrote; the rest is the evaluator's template. A 422 naming any other field
        (a typo in the template, `engine: hip` on a daemon without a GPU, a sweep parameter
        nothing uses) is not the candidate's fault: it raises `EvaluatorError` instead of
        scoring every candidate 0.0. The default, `("kernel",)`, is a template that fixes
        everything but the kernel; None makes the whole spec the candidate's. A job that
        failed in a kernel outside them (a baseline, or a task's reference, that does not
        compile or run: the daemon names its field in the point's error) raises
        `EvaluatorError` too.

        Failures of the infrastructure (the daemon unreachable, 401, 429 rate limits, 5xx) are
        not the candidate's doing either: they raise, so that a loop does not record a good
        program as worthless (OpenEvolve retries an evaluator that raises). With
        `raise_on_infrastructure_error=False` these and `EvaluatorError`s score 0.0 like the
        rest, with an `error` artifact saying whose fault it is.

        Artifacts (str values): `server`, `job_id`, `status`, `error`, `flags`, `fitness` (the
        summary as JSON), `points` (one line per point, failed and flagged points first,
        capped), `cache` (points served from the result cache), `simulated` (the mock engine
        measured the job, and what that means for the score), `missing` (metrics the daemon
        did not give and why they read 0.0), `elapsed_s`.
        """
        return self._evaluate(lambda: self.submit(spec, idempotency_key), timeout_s,
                              cancel_on_timeout, raise_on_infrastructure_error,
                              candidate_fields)

    def _evaluate(
        self,
        submit: Callable[[], dict],
        timeout_s: float,
        cancel_on_timeout: bool,
        raise_on_infrastructure_error: bool,
        candidate_fields: Iterable[str] | None,
        refusals: tuple[int, ...] = (),
    ) -> Evaluation:
        """Submits with `submit`, waits, reads the rows and scores them (evaluate_detailed).
        `refusals`: statuses that are the evaluator's fault whatever they name."""
        started = time.monotonic()
        if candidate_fields is not None:
            candidate_fields = tuple(candidate_fields)
        artifacts: dict[str, str] = {"server": self.server}
        metrics = zero_metrics()

        def done(job: dict | None = None, rows: list[dict] | None = None) -> Evaluation:
            artifacts["elapsed_s"] = f"{time.monotonic() - started:.3f}"
            return Evaluation(metrics, artifacts, job, rows or [])

        def infrastructure(e: KernelscanError) -> Evaluation:
            if raise_on_infrastructure_error:
                raise e
            artifacts["error"] = f"infrastructure: {e}"
            return done()

        try:
            job = submit()
        except KernelscanError as e:
            if e.status in refusals:
                harness = EvaluatorError(
                    f"the evaluator's request was refused ({e.type}, HTTP {e.status}): "
                    f"{e.message}; no candidate is at fault",
                    status=e.status, type=e.type, details=e.details, context=e.context)
                if raise_on_infrastructure_error:
                    raise harness from e
                artifacts["error"] = f"evaluator: {harness.message}"
                return done()
            if e.status in (400, 413, 422):
                if e.status == 422 and candidate_fields is not None:
                    theirs = _outside(e.field_errors, tuple(candidate_fields))
                    if theirs or not e.field_errors:
                        listed = "; ".join(f"{f or '(the body)'}: {m}" for f, m in
                                           (theirs or [("", e.message)]))
                        harness = EvaluatorError(
                            "the evaluator's spec was refused for fields the candidate does not "
                            f"write ({listed}); fix the evaluator or the daemon, not the "
                            "candidate",
                            status=e.status, type=e.type, details=e.details,
                            context=e.context)
                        if raise_on_infrastructure_error:
                            raise harness from e
                        artifacts["error"] = f"evaluator: {harness.message}"
                        return done()
                artifacts["error"] = f"the spec was refused: {e.type} (HTTP {e.status}): {e.message}"
                if e.field_errors:
                    artifacts["spec_errors"] = "\n".join(f"{f}: {m}" for f, m in e.field_errors)
                return done()
            return infrastructure(e)

        job_id = _job_id(job)
        artifacts["job_id"] = str(job_id)
        try:
            try:
                job = self.wait(job_id, timeout_s)
            except JobTimeout as e:
                job = self._give_up(job_id, e, cancel_on_timeout, artifacts)
                if job.get("status") not in TERMINAL_STATES:
                    self._describe(job, [], artifacts, metrics)
                    return done(job)
            rows = self.results(job_id)
        except KernelscanError as e:
            return infrastructure(e)
        self._score(job, rows, artifacts, metrics)
        # A reference or baseline that does not compile or run fails every candidate alike.
        theirs = _failed_outside(rows, candidate_fields) if job.get("status") == "failed" else []
        if theirs:
            index, field, err = theirs[0]
            harness = EvaluatorError(
                f"job {job_id} failed at point {index} in {field}, which the candidate does not "
                f"write ({err.get('type')}: {err.get('message')}); fix the evaluator or the "
                "task, not the candidate",
                type=str(err.get("type") or "error"), context={"job_id": job_id})
            if raise_on_infrastructure_error:
                raise harness
            artifacts["error"] = f"evaluator: {harness.message}"
        return done(job, rows)

    def _give_up(
        self, job_id: int, timeout: JobTimeout, cancel: bool, artifacts: dict[str, str]
    ) -> dict:
        """After a wait timed out: cancels the job (when `cancel`) and returns it. A job that
        ended meanwhile is returned as it ended, to be scored after all."""
        job = timeout.job
        error = f"timeout: {timeout.message}"
        if cancel:
            try:
                job = self.cancel(job_id)
                error += "; the job was cancelled"
            except KernelscanError as e:
                if e.type != "job_finished":
                    raise
                return self.job(job_id)
        artifacts["error"] = error
        return job

    @staticmethod
    def _describe(job: dict, rows: list[dict], artifacts: dict[str, str], metrics: dict) -> None:
        """Fills the artifacts and count metrics every outcome shares."""
        artifacts["status"] = str(job.get("status"))
        progress = job.get("progress") or {}
        metrics["points"] = _number(progress.get("total")) or 0.0
        metrics["ok_points"] = _number(progress.get("ok")) or 0.0
        if job.get("error"):
            err = job["error"]
            text = f"{err.get('type')}: {err.get('message')}" if isinstance(err, dict) else str(err)
            artifacts["error"] = (artifacts["error"] + "\n" if "error" in artifacts else "") + text
        summary = job.get("summary") if isinstance(job.get("summary"), dict) else {}
        fitness = summary.get("fitness") if isinstance(summary.get("fitness"), dict) else {}
        if fitness.get("simulated") is True or any(r.get("simulated") is True for r in rows):
            artifacts["simulated"] = (
                "simulated: the mock engine measured this job. Its times come from a roofline "
                "model of the device; the kernel was neither compiled nor run, so a kernel that "
                "does not compile gets the same times as a correct one. A point whose outputs "
                "were not verified is never correct and scores 0; where the spec's mock.output "
                "asked for a simulated verification, that is what the score rests on. This "
                "score is not a measurement of the candidate: run it on a GPU."
            )
        if rows:
            artifacts["points"] = _points_summary(rows)
            if advice := _advice(rows):
                artifacts["advice"] = advice
            flags = sorted({f for r in rows for f in (r.get("flags") or []) if isinstance(f, str)})
            if flags:
                artifacts["flags"] = ", ".join(flags)
            hits = [r for r in rows if isinstance(r.get("cache"), dict) and r["cache"].get("hit")]
            if hits:
                sources = sorted({str(r["cache"].get("job_id")) for r in hits})
                artifacts["cache"] = (
                    f"{len(hits)} of {len(rows)} points served from the result cache "
                    f"(measured by job {', '.join(sources)})"
                )
            ok = [r for r in rows if r.get("status") == "ok"]
            medians = [_number((r.get("time_us") or {}).get("median")) for r in ok]
            metrics["median_us"] = _geomean(m for m in medians if m is not None) or 0.0

    @classmethod
    def _score(
        cls,
        job: dict,
        rows: list[dict],
        artifacts: dict[str, str],
        metrics: dict,
    ) -> None:
        cls._describe(job, rows, artifacts, metrics)
        status = job.get("status")
        summary = job.get("summary") if isinstance(job.get("summary"), dict) else {}
        fitness = summary.get("fitness")
        missing: list[str] = []
        if isinstance(fitness, dict):
            artifacts["fitness"] = json.dumps(fitness, sort_keys=True)
            flags = [f for f in fitness.get("flags") or [] if isinstance(f, str)]
            if flags and "flags" not in artifacts:
                artifacts["flags"] = ", ".join(sorted(flags))
            metrics["correct"] = 1.0 if fitness.get("correct") is True else 0.0
            for key in ("speedup", "latency_score"):
                value = _number(fitness.get(key))
                if value is None:
                    why = ("the spec has no fitness.baseline, or no point could be compared"
                           if key == "speedup" else "the daemon gave none")
                    missing.append(f"{key}: null ({why})")
                else:
                    metrics[key] = value
            score = _number(fitness.get("combined_score"))
            if score is None:
                missing.append("combined_score: absent or not a number in summary.fitness")
            elif status == "succeeded":
                metrics["combined_score"] = score
        else:
            missing.append(
                "summary.fitness is null: the daemon gave no fitness score (a daemon without "
                "fitness scoring, or a job that did not end), so every score reads 0.0"
            )
        if status != "succeeded":
            metrics["combined_score"] = 0.0
            if "error" not in artifacts:
                artifacts["error"] = f"the job ended {status}"
        if missing:
            artifacts["missing"] = "\n".join(missing)


def _outside(errors: list[tuple[str, str]], fields: tuple[str, ...]) -> list[tuple[str, str]]:
    """The field errors that name none of `fields` nor anything under them."""
    def within(field: str) -> bool:
        return any(field == f or field.startswith(f + ".") or field.startswith(f + "[")
                   for f in fields)
    return [(f, m) for f, m in errors if not within(f)]


def _failed_outside(
    rows: list[dict], fields: Iterable[str] | None
) -> list[tuple[Any, str, dict]]:
    """(index, field, error) of each failed row whose error the daemon laid at a spec field
    outside `fields` (None: every field is the candidate's)."""
    if fields is None:
        return []
    found = []
    for r in rows:
        err = r.get("error")
        if r.get("status") == "ok" or not isinstance(err, dict):
            continue
        m = _FAILED_FOR_FIELD.match(str(err.get("message") or ""))
        if m and _outside([(m.group(1), "")], tuple(fields)):
            found.append((r.get("index"), m.group(1), err))
    return found


def _params_text(params: Any) -> str:
    if not isinstance(params, dict) or not params:
        return ""
    return " (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"


def _point_line(row: dict, said: dict[tuple[Any, Any], Any] | None = None) -> str:
    """One point in words. `said` maps the errors already written out to the point that had
    them: a compile log that every point of a sweep repeats is written once."""
    head = f"point {row.get('index')}{_params_text(row.get('params'))}: "
    if row.get("held_out") is True:
        head = f"point {row.get('index')} (held out: its sizes are not shown): "
    flags = [f for f in row.get("flags") or [] if isinstance(f, str)]
    if row.get("status") != "ok":
        err = row.get("error") or {}
        key = (err.get("type"), err.get("message"))
        if not err and row.get("held_out") is True:
            # Without an operator's token the daemon shows no error at a held-out point.
            text = head + "failed (the error at a held-out point is not shown)"
        elif said is not None and key in said:
            text = head + f"failed: {err.get('type')}: the same error as point {said[key]}"
        else:
            text = head + f"failed: {err.get('type')}: {err.get('message')}"
            if said is not None:
                said[key] = row.get("index")
    else:
        median = _number((row.get("time_us") or {}).get("median"))
        text = head + "ok" + (f", median {median:.4g} us" if median is not None else "")
        fitness = row.get("fitness") if isinstance(row.get("fitness"), dict) else None
        if fitness is None and row.get("held_out") is True:
            # A task whose held-out scores are private shows an agent none of them.
            text += " (its score is not shown)"
        if fitness is not None:
            speedup = _number(fitness.get("speedup"))
            ci = fitness.get("speedup_ci95")
            if speedup is not None:
                text += f", speedup {speedup:.3g}x"
                bounds = [_number(c) for c in ci] if isinstance(ci, list) else []
                if len(bounds) == 2 and None not in bounds:
                    text += f" [{bounds[0]:.3g}, {bounds[1]:.3g}]"
            if fitness.get("correct") is False:
                text += ", incorrect"
            score = _number(fitness.get("combined_score"))
            if score is not None:
                text += f", score {score:.3g}"
        verification = row.get("verification") or {}
        if verification.get("status") == "skipped":
            note = verification.get("note")
            text += ", not verified" + (f" ({note})" if note else "")
        if verification.get("status") == "failed":
            text += (f", verification failed (max abs err {verification.get('max_abs_err')}, "
                     f"max rel err {verification.get('max_rel_err')})")
        text += _resources_text(row.get("resources"))
        # What the errors alone do not say: outputs never written, an input the kernel changed,
        # timed samples that differ from the verified ones.
        note = verification.get("note")
        if note and verification.get("status") != "skipped" and (flags or verification.get(
                "status") == "failed"):
            text += f": {note}"
    if flags:
        text += ", flags: " + ", ".join(flags)
    if isinstance(row.get("cache"), dict) and row["cache"].get("hit"):
        text += f", from the cache (job {row['cache'].get('job_id')})"
    return text


def _resources_text(resources: Any) -> str:
    """A user kernel's registers, memory and occupancy in words, as far as its platform told
    them (the row's `resources`); "" without them."""
    if not isinstance(resources, dict):
        return ""
    parts = []
    registers = _number(resources.get("registers"))
    if registers is not None:
        parts.append(f"{registers:.0f} registers a thread")
    shared = _number(resources.get("shared_bytes"))
    if shared:
        parts.append(f"{shared:.0f} B shared memory a block")
    local = _number(resources.get("local_bytes"))
    if local:
        parts.append(f"{local:.0f} B local memory a thread (spilled registers or private arrays)")
    occupancy = _number(resources.get("occupancy"))
    if occupancy is not None:
        limits = [str(x).replace("_", " ") for x in resources.get("limited_by") or []]
        parts.append(f"occupancy {occupancy * 100:.0f}%"
                     + (f" (limited by {' and '.join(limits)})" if limits else ""))
    return ", " + ", ".join(parts) if parts else ""


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _advice(rows: list[dict]) -> str:
    """The daemon's advice over the rows, each line once, in the order first given. Lines that
    differ only in their figures are one line, each figure that differs given as its range
    ("compute-bound at 1–2% of peak: ..."), so that a sweep's points do not fill the artifact
    with one piece of advice."""
    # Keyed by the text between the figures, so that no character of the advice is taken for a
    # figure's place.
    groups: dict[tuple[str, ...], list[list[str]]] = {}
    for r in rows:
        for a in r.get("advice") or []:
            if isinstance(a, str):
                groups.setdefault(tuple(_NUMBER.split(a)), []).append(_NUMBER.findall(a))
    lines = []
    for parts, figures in list(groups.items())[:_ADVICE_LINES]:
        line = parts[0]
        for i, part in enumerate(parts[1:]):
            seen = sorted({f[i] for f in figures}, key=float)
            line += (seen[0] if len(seen) == 1 else f"{seen[0]}\u2013{seen[-1]}") + part
        lines.append(line)
    return "\n".join(lines)


def _points_summary(rows: list[dict]) -> str:
    """One line per point, failed and flagged points first, at most _SUMMARY_LINES lines."""
    def trouble(r: dict) -> bool:
        return r.get("status") != "ok" or bool(r.get("flags"))
    ordered = [r for r in rows if trouble(r)] + [r for r in rows if not trouble(r)]
    said: dict[tuple[Any, Any], Any] = {}
    lines = [_point_line(r, said) for r in ordered[:_SUMMARY_LINES]]
    if len(ordered) > _SUMMARY_LINES:
        lines.append(f"... and {len(ordered) - _SUMMARY_LINES} more points")
    return "\n".join(lines)
