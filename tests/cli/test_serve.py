"""``agentledger serve`` as a process: it names the address it listens on (the real port for
``--port 0``) only once it listens, and a port it cannot bind is one clear error line with a
non-zero exit, never a "serving" line first (README: Command line)."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import httpx

from _servers import DEV_KEY, agentledger_executable


def test_port_0_prints_the_real_port_once_listening(tmp_path: Path) -> None:
    """README: Command line (`serve --port 0` prints the port it got)."""
    proc = subprocess.Popen(
        [
            agentledger_executable(),
            "serve",
            "--db",
            str(tmp_path / "l.db"),
            "--port",
            "0",
            "--dev-key",
            DEV_KEY,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.fullmatch(r"agentledger serving \S+ on (http://127\.0\.0\.1:(\d+))\n", line)
        assert found is not None, line
        assert int(found.group(2)) != 0
        # Printed once listening: the very first request is answered.
        assert httpx.get(f"{found.group(1)}/health", timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.wait(20)


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run(
            [
                agentledger_executable(),
                "serve",
                "--db",
                str(tmp_path / "l.db"),
                "--port",
                str(port),
                "--dev-key",
                DEV_KEY,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr == (
        f"error: agentledger serve: cannot listen on 127.0.0.1:{port}: the address is in use "
        "(another server?): stop it or pick another --port\n"
    )
    assert done.stdout == "" and time.monotonic() - started < 60
    assert "serving" not in done.stderr
