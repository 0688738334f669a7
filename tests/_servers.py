"""Real ``agentledger serve`` processes for tests: :class:`ServerProcess` (start, SIGKILL,
restart on the same port and file) and :class:`ServerFactory`, plus :func:`free_port` and
:func:`agentledger_executable`.

Imported by ``tests/conftest.py`` (the fixtures) and by test modules that need the classes
themselves (``from _servers import ...``): a module named ``conftest`` is ambiguous when
several test folders have one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "DEV_KEY",
    "ServerFactory",
    "ServerNotReady",
    "ServerProcess",
    "agentledger_executable",
    "free_port",
    "wait_for_health",
]

DEV_KEY = "dev-test-key-0123456789"
#: The dashboard dev-session token the test servers are started with.
DASHBOARD_TOKEN = "dev-session-test-token"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerNotReady(RuntimeError):
    """A server process exited, or did not answer ``/health``, before it was ready."""


def wait_for_health(url: str, proc: subprocess.Popen[Any], timeout_s: float = 30.0) -> None:
    """Poll ``GET {url}/health`` every 50 ms until it answers 200.

    Raises:
        ServerNotReady: ``proc`` exited first (its exit code in the message), or
            ``timeout_s`` seconds passed (``proc`` is left running).
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerNotReady(f"exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise ServerNotReady(f"did not answer /health within {timeout_s} s")


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
    #: the dashboard's dev-session token (``AGENTLEDGER_DASHBOARD_TOKEN``)
    dashboard_token: str = DASHBOARD_TOKEN
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    #: a command the server runs under (e.g. ``unshare ... sh -c '...; exec "$@"' --``)
    wrapper: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        args = [
            *self.wrapper,
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
        env = {**os.environ, "AGENTLEDGER_DASHBOARD_TOKEN": self.dashboard_token, **self.env}
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for_health(self.url, self.proc, timeout_s)
        except ServerNotReady as error:
            self.stop()
            tail = self.log_path.read_text()[-3000:] if self.log_path else ""
            raise ServerNotReady(f"agentledger serve {error}\n{tail}") from None

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

    def ui_cookies(self) -> dict[str, str]:
        """The dev-session cookie a browser gets from the link ``serve`` prints."""
        return {"agentledger_ui_dev": self.dashboard_token}


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
