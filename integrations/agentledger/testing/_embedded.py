"""A real ``agentledger serve`` as a child process on loopback, for tests, the demo, the
regression runner and the benchmarks.

It imports no agent framework (only httpx and the standard library), so the CrewAI and LiveKit
environments can use it too.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from agentledger.client import child_environment
from agentledger.protocol import LedgerError

__all__ = ["SERVER_START_TIMEOUT_S", "EmbeddedServer", "EmbeddedServerError", "free_port"]

#: Seconds to wait for the embedded server's ``/health``.
SERVER_START_TIMEOUT_S = 30.0


class EmbeddedServerError(LedgerError, RuntimeError):
    """The embedded server could not start (missing extra, bad database, no ``/health``)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class EmbeddedServer:
    """``agentledger serve`` as a child process on 127.0.0.1 with a one-time dev key.

    Args:
        db: SQLite file of the ledger (created if missing) or a ``postgresql://`` URL.
        timeout_s: seconds to wait for ``/health`` before giving up.
        port: TCP port (default: a free one).
        api_key: the dev key (default: a random one).
        dashboard_token: the dashboard's dev-session token (default: a random one); open
            :attr:`dashboard_url` to read the dashboard without a login.
        env: extra environment variables for the server process.
        log: file the server's output is appended to (default: ``<db>.server.log`` next to
            a SQLite file; discarded for a URL).

    Use as a context manager; the process is terminated on exit (the database stays).

    Raises:
        EmbeddedServerError: the server part is not installed, the process exited, or it did
            not answer ``/health`` within ``timeout_s``.
    """

    db: str | Path
    timeout_s: float = SERVER_START_TIMEOUT_S
    port: int = field(default_factory=free_port)
    api_key: str = field(default_factory=lambda: "embedded-" + secrets.token_urlsafe(18))
    env: Mapping[str, str] | None = None
    log: Path | None = None
    dashboard_token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    _proc: subprocess.Popen[bytes] | None = None

    def dashboard_url(self, path: str = "/ui/") -> str:
        """The dashboard page ``path`` with the dev-session link's token (opens without a
        login in a browser on this machine)."""
        joiner = "&" if "?" in path else "?"
        return f"{self.url}{path}{joiner}token={self.dashboard_token}"

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:53117``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """Process id of the running server.

        Raises:
            EmbeddedServerError: the server is not running.
        """
        if self._proc is None:
            raise EmbeddedServerError("the embedded server is not running")
        return self._proc.pid

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _log_path(self) -> Path | None:
        if self.log is not None:
            return self.log
        if "://" in str(self.db):
            return None
        return Path(self.db).with_suffix(".server.log")

    def start(self) -> None:
        """Start the process and wait until it answers ``/health``."""
        try:  # fail with the real reason, not with the CLI's stand-in for a missing part
            from agentledger.server import create_app  # the app and all it imports

            del create_app
        except ImportError as error:
            raise EmbeddedServerError(
                f"the embedded server cannot start: {error}. "
                "Install it with pip install 'agentledger[server]', or pass --url."
            ) from error
        except Exception as error:  # a broken installation: say what broke
            raise EmbeddedServerError(
                f"the embedded server cannot start: {type(error).__name__}: {error}"
            ) from error
        log_path = self._log_path()
        command = [
            sys.executable,
            "-c",
            "from agentledger.cli import main; main()",
            "serve",
            "--db",
            str(self.db),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dev-key",
            self.api_key,
        ]
        env = child_environment(
            {"AGENTLEDGER_DASHBOARD_TOKEN": self.dashboard_token, **(self.env or {})}
        )
        if log_path is None:
            self._proc = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
            )
        else:
            with open(log_path, "ab") as log:
                self._proc = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, env=env
                )
        deadline = time.monotonic() + self.timeout_s
        with httpx.Client(timeout=1.0) as http:
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    tail = log_path.read_text(errors="replace")[-2000:] if log_path else ""
                    raise EmbeddedServerError(
                        f"agentledger serve exited with code {self._proc.returncode}; "
                        f"log: {log_path}\n{tail}"
                    )
                try:
                    if http.get(f"{self.url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        self.stop()
        raise EmbeddedServerError(
            f"agentledger serve did not answer within {self.timeout_s} s ({log_path})"
        )

    def wait(self) -> None:
        """Block until the process exits (Ctrl-C raises ``KeyboardInterrupt`` here)."""
        if self._proc is not None:
            self._proc.wait()

    def stop(self) -> None:
        """Terminate the process (SIGTERM, then SIGKILL after 10 s)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
