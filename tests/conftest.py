"""Fixtures shared by every suite.

* ``ledger_server``: a real ``agentledger serve`` (the console script) on a free loopback port
  with a fresh SQLite file, started once per test session.
* ``server_factory``: start extra servers (own DB, own options) that are stopped after the test;
  they can be killed (SIGKILL) and restarted on the same port and file for chaos tests.
* ``internal_errors_are_loud`` (autouse): fails a test when any guarded callback swallowed an
  exception (records at ERROR on the ``agentledger`` logger that carry a traceback).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

DEV_KEY = "dev-test-key-0123456789"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def agentledger_executable() -> str:
    """The ``agentledger`` console script of the running interpreter's environment."""
    candidate = Path(sys.executable).parent / "agentledger"
    if candidate.exists():
        return str(candidate)
    raise RuntimeError(f"agentledger console script not found next to {sys.executable}")


@dataclass
class ServerProcess:
    """A real ``agentledger serve`` child process on loopback."""

    db: str
    port: int
    api_key: str = DEV_KEY
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        args = [
            agentledger_executable(),
            "serve",
            "--db",
            self.db,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dev-key",
            self.api_key,
            *self.extra_args,
        ]
        env = {**os.environ, **self.env}
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text()[-3000:] if self.log_path else ""
                raise RuntimeError(f"agentledger serve exited with {self.proc.returncode}\n{tail}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"agentledger serve did not answer /health within {timeout_s} s")

    def kill(self) -> None:
        """SIGKILL: no shutdown handlers run (chaos tests)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.stop()
        self.start()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


class ServerFactory:
    def __init__(self, tmp_path: Path) -> None:
        self._tmp = tmp_path
        self._servers: list[ServerProcess] = []

    def __call__(
        self,
        *extra_args: str,
        db: str | None = None,
        env: dict[str, str] | None = None,
        start: bool = True,
    ) -> ServerProcess:
        name = uuid.uuid4().hex[:8]
        server = ServerProcess(
            db=db or str(self._tmp / f"ledger-{name}.db"),
            port=free_port(),
            extra_args=list(extra_args),
            env=env or {},
            log_path=self._tmp / f"server-{name}.log",
        )
        self._servers.append(server)
        if start:
            server.start()
        return server

    def stop_all(self) -> None:
        for server in self._servers:
            server.stop()


@pytest.fixture(scope="session")
def ledger_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server for the whole test session; tests isolate by unique agent names."""
    factory = ServerFactory(tmp_path_factory.mktemp("ledger-server"))
    server = factory()
    yield server
    factory.stop_all()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[ServerFactory]:
    """Start servers of the test's own; all are stopped when the test ends."""
    factory = ServerFactory(tmp_path)
    yield factory
    factory.stop_all()


@pytest.fixture
def agent_name(request: pytest.FixtureRequest) -> str:
    """A unique, valid agent name per test."""
    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60].strip("-")
    return f"{base or 'agent'}-{uuid.uuid4().hex[:8]}"


class _InternalErrorCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture(autouse=True)
def internal_errors_are_loud(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a guard swallowed an exception (style.md point 8).

    A test that provokes an internal error on purpose marks itself
    ``@pytest.mark.allow_internal_errors``.
    """
    collector = _InternalErrorCollector()
    log = logging.getLogger("agentledger")
    log.addHandler(collector)
    try:
        yield
    finally:
        log.removeHandler(collector)
    if collector.records and not request.node.get_closest_marker("allow_internal_errors"):
        first = collector.records[0]
        detail = logging.Formatter().formatException(first.exc_info) if first.exc_info else ""
        pytest.fail(
            f"{len(collector.records)} internal error(s) swallowed by agentledger guards; "
            f"first: {first.getMessage()}\n{detail}"
        )
