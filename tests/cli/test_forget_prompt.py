"""``forget`` on a terminal asks before erasing; "no" erases nothing (docs: Command line,
forget)."""

from __future__ import annotations

import json
import os
import subprocess

from _servers import agentledger_executable

from .conftest import Cli, Seeded


def _answer(seeded: Seeded, reply: str) -> subprocess.CompletedProcess[str]:
    """``agentledger forget`` with a pseudo-terminal as stdin, answering ``reply``."""
    leader, follower = os.openpty()
    try:
        os.write(leader, reply.encode() + b"\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
        return subprocess.run(
            [agentledger_executable(), "forget", "email", f"{seeded.agent}@example.com"],
            stdin=follower,
            capture_output=True,
            text=True,
            env=env | seeded.env,
            timeout=60,
        )
    finally:
        os.close(follower)
        os.close(leader)


def test_forget_asks_on_a_terminal(cli: Cli, seeded: Seeded) -> None:
    refused = _answer(seeded, "n")
    assert f"erase {seeded.agent}'s events where email ==" in refused.stdout
    assert refused.returncode == 1 and refused.stderr == "error: nothing erased\n"
    kept = json.loads(cli("replay", seeded.session, "--json", env=seeded.env).stdout)
    assert kept[0]["data"]["email"] == f"{seeded.agent}@example.com"
    done = _answer(seeded, "y")
    assert done.returncode == 0, done.stderr
    assert "erased 1 event(s); tombstones keep the chain verifiable\n" in done.stdout
    again = cli("forget", "email", f"{seeded.agent}@example.com", "--dry-run", env=seeded.env)
    assert again.stdout.startswith("would erase 0 event(s)")
