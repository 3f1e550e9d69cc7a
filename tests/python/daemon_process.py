"""A real `kernelscan serve` for the Python tests, like tests/support/daemon_process: port 0
on loopback (the bound port read back from --port-file), a temporary data directory, mock
devices, stopped with SIGTERM and cleaned up at the end.

Each test file runs as `python3 -B FILE --binary PATH/kernelscan [unittest arguments]`
(tests/CMakeLists.txt does so); without --binary, build/server/kernelscan is used.

With --postgres, every daemon runs on PostgreSQL instead of SQLite: a database of its own on the
test server whose admin URL the file KERNELSCAN_TEST_POSTGRES names (the ctest fixture
`postgres_start` writes it; `build/tests/postgres_fixture start DIR` by hand), made with psql
when the daemon starts and dropped when it stops. Where PostgreSQL is not installed, such a run
says so and exits 77 (skipped).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "api" / "python"))

BINARY = str(ROOT / "build" / "server" / "kernelscan")
# The admin URL of the test PostgreSQL server when the daemons run on PostgreSQL (--postgres).
POSTGRES: str | None = None


def postgres_installed() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def postgres_admin_url() -> str:
    """The test server's admin URL, from the file KERNELSCAN_TEST_POSTGRES names; exits 77
    (skipped) where PostgreSQL is not installed, and fails where it is but no server is named."""
    if not postgres_installed():
        print("skipped: PostgreSQL is not installed (apt-get install postgresql); "
              "the --postgres run needs a server")
        sys.exit(77)
    file = os.environ.get("KERNELSCAN_TEST_POSTGRES")
    if not file:
        sys.exit("--postgres needs KERNELSCAN_TEST_POSTGRES, a file holding a test server's admin "
                 "URL (ctest starts one; by hand: build/tests/postgres_fixture start DIR)")
    return Path(file).read_text().strip()


def psql(url: str, sql: str) -> None:
    subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_env())


def main() -> None:
    """unittest.main, after taking --binary PATH and --postgres off the command line."""
    global BINARY, POSTGRES
    argv = list(sys.argv)
    if "--binary" in argv:
        at = argv.index("--binary")
        BINARY = argv[at + 1]
        del argv[at : at + 2]
    if "--postgres" in argv:
        argv.remove("--postgres")
        POSTGRES = postgres_admin_url()
    unittest.main(argv=argv)


def store_log_line() -> str:
    """What a daemon of this run logs at start about its store: PostgreSQL with --postgres, else
    SQLite (a test checks it, so that a run meant for PostgreSQL cannot pass on SQLite)."""
    return "store: PostgreSQL at" if POSTGRES else "store: SQLite in"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without KERNELSCAN_* variables (a developer's settings must not leak into
    a test), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELSCAN_")}
    env.update(extra)
    return env


def stream_sweep(points: int, delay_ms: float = 0, step: int = 4096) -> dict:
    """A mock stream-triad job over `points` sizes, each point taking `delay_ms` of wall time."""
    return {
        "kernel": {"op": "stream", "variant": "triad", "n": "N"},
        "sweep": {"N": [step * i for i in range(1, points + 1)]},
        "mock": {"delay_ms": delay_ms},
    }


def closed_port() -> int:
    """A loopback port nothing listens on: bound, read back and closed again."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, *args: str, mock_devices: int = 1, engine: str = "mock") -> None:
        self.args = list(args)
        self.mock_devices = mock_devices
        self.engine = engine
        self.dir = tempfile.mkdtemp(prefix="kernelscan-pytest-")
        self.process: subprocess.Popen | None = None
        self.port = 0
        # Its PostgreSQL database (--postgres), made on first start, dropped by stop().
        self.database: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        try:
            return Path(self.dir, "daemon.log").read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> "Daemon":
        port_file = Path(self.dir, "port")
        port_file.unlink(missing_ok=True)
        store: list[str] = []
        if POSTGRES and "--database" not in self.args:
            if self.database is None:
                name = f"ks_py_{os.getpid()}_{Path(self.dir).name[len('kernelscan-pytest-'):]}"
                name = "".join(c if c.isalnum() else "_" for c in name).lower()
                psql(POSTGRES, f"CREATE DATABASE {name}")
                self.database = POSTGRES[: POSTGRES.rindex("/") + 1] + name
            store = ["--database", self.database]
        command = [
            BINARY, "serve",
            "--listen", "127.0.0.1:0",
            "--data-dir", str(Path(self.dir, "data")),
            "--port-file", str(port_file),
            "--mock-devices", str(self.mock_devices),
            "--engine", self.engine,
            "--log-level", "debug",
            *store,
            *self.args,
        ]
        with open(Path(self.dir, "daemon.log"), "ab") as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=clean_env(),
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the daemon exited during start-up; log:\n{self.log()}")
            try:
                self.port = int(port_file.read_text().strip() or 0)
            except (OSError, ValueError):
                self.port = 0
            if self.port > 0:
                break
            time.sleep(0.02)
        else:
            raise RuntimeError(f"the daemon did not start; log:\n{self.log()}")
        while time.monotonic() < deadline + 15:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the daemon did not become ready; log:\n{self.log()}")

    def get_json(self, path: str):
        """GET straight over urllib, not through the client under test."""
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return json.loads(r.read())

    def wait_for_long_polls(self, count: int, timeout_s: float = 15) -> None:
        """Waits until the daemon reports `count` long polls held (kernelscan_long_polls)."""
        deadline = time.monotonic() + timeout_s
        line = f"kernelscan_long_polls {count}\n"
        while time.monotonic() < deadline:
            with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
                if line in r.read().decode():
                    return
            time.sleep(0.02)
        raise AssertionError(f"the daemon never held {count} long polls")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.database is not None and POSTGRES:
            name = self.database[self.database.rindex("/") + 1 :]
            psql(POSTGRES, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            self.database = None

    def __enter__(self) -> "Daemon":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class DaemonTestCase(unittest.TestCase):
    """One daemon for the whole class, started with DAEMON_ARGS."""

    DAEMON_ARGS: tuple[str, ...] = ()

    @classmethod
    def setUpClass(cls) -> None:
        cls.daemon = Daemon(*cls.DAEMON_ARGS)
        try:
            cls.daemon.start()
        except BaseException:
            cls.daemon.stop()
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.stop()
