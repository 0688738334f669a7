"""Start a real ``agentledger serve`` for a benchmark (shared by every ``bench_*.py``).

Only the standard library and httpx, so it also works in the CrewAI and LiveKit venvs, which
lack LangChain (``agentledger.integrations._demo.EmbeddedServer`` imports it).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["Served", "free_port", "serve"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A running server: its base URL, dev key and process id (for ``psutil.Process``)."""

    url: str
    key: str
    pid: int


@contextmanager
def serve(
    db: str | Path,
    key: str,
    *,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    extra_args: Sequence[str] = (),
    timeout_s: float = 60.0,
) -> Iterator[Served]:
    """Run ``agentledger serve --db DB`` (the console script of this interpreter's venv) on a
    free loopback port until the block ends (SIGTERM, then SIGKILL after 15 s).

    Args:
        db: SQLite path or ``postgresql://`` URL.
        key: the dev key.
        env: extra environment variables for the server.
        log: append the server's output here (default: discarded).
        extra_args: more ``serve`` options.
        timeout_s: seconds to wait for ``/health``.

    Raises:
        RuntimeError: the server exited or did not answer within ``timeout_s``.
    """
    port = free_port()
    exe = Path(sys.executable).parent / "agentledger"
    args = [str(exe), "serve", "--db", str(db), "--port", str(port), "--dev-key", key]
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            [*args, *extra_args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    finally:
        if log:
            out.close()  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                where = f"; see {log}" if log else ""
                raise RuntimeError(f"agentledger serve did not start{where}")
            time.sleep(0.05)
        yield Served(url, key, proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
