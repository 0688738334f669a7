"""What every network command shares: the same environment variables (``AGENTLEDGER_URL``,
``AGENTLEDGER_API_KEY``, ``AGENTLEDGER_AGENT``), plain-language errors naming the fix with
exit status 1 (the server's answer) or 2 (a usage or configuration mistake), and whole lines
when the output is not a terminal (README: Command line)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from _servers import free_port
from agentledger.cli import app

from .conftest import Cli, Seeded

#: A command for each capability, as it runs with nothing but the environment variables.
ENV_ONLY = {
    "why": lambda s: ["why", s.ids[2]],
    "impact": lambda s: ["impact", s.ids[0]],
    "replay": lambda s: ["replay", s.session],
    "search": lambda s: ["search", s.agent],
    "forget": lambda s: ["forget", "email", "x", "--dry-run"],
    "at": lambda s: ["at", "--time", "2100-01-01T00:00:00Z"],
    "baseline": lambda s: ["baseline"],
    "sessions": lambda s: ["sessions"],
    "agents": lambda s: ["agents"],
    "verify": lambda s: ["verify"],
    "export": lambda s: ["export"],
    "tail": lambda s: ["tail", "--count", "1"],
    "keys": lambda s: ["keys", "list"],
    "cases export": lambda s: ["cases", "export", "--session", s.session, "--out", "cases"],
}


@pytest.mark.parametrize("command", sorted(ENV_ONLY))
def test_every_command_takes_url_key_and_agent_from_the_environment(
    cli: Cli, seeded: Seeded, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: Command line (the same three environment variables everywhere)."""
    monkeypatch.chdir(tmp_path)
    result = cli(*ENV_ONLY[command](seeded), env=seeded.env)
    assert result.exit_code == 0, result.output
    assert result.stdout


NEED_AGENT = ["verify", "export", "at --time 2100-01-01T00:00:00Z", "baseline", "tail"]


@pytest.mark.parametrize("command", NEED_AGENT)
def test_a_command_that_needs_an_agent_says_how_to_give_one(
    cli: Cli, seeded: Seeded, command: str
) -> None:
    result = cli(*command.split(), *seeded.args)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no agent: pass --agent NAME or set AGENTLEDGER_AGENT "
        "(`agentledger agents` lists them)\n"
    )


@pytest.mark.parametrize("command", ["sessions", "agents", "why 0", "why 0 --json", "keys list"])
def test_no_server_says_how_to_start_one(cli: Cli, command: str) -> None:
    """README: Command line (a refused connection names the URL and `agentledger serve`)."""
    url = f"http://127.0.0.1:{free_port()}"
    result = cli(*command.split(), "--url", url, "--api-key", "k")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: no server at {url}: start one with `agentledger serve`, or pass --url "
        "(or set AGENTLEDGER_URL) to the server you use\n"
    )


@pytest.mark.parametrize("command", ["sessions", "verify --agent a", "why 0", "why 0 --json"])
def test_no_key_names_the_option_and_the_variable(cli: Cli, seeded: Seeded, command: str) -> None:
    result = cli(*command.split(), "--url", seeded.url)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no API key: pass --api-key KEY or set AGENTLEDGER_API_KEY (a server started "
        "with `agentledger serve --dev-key KEY` accepts KEY from this machine)\n"
    )
    assert "api_key=" not in result.output


def test_a_wrong_key_a_bad_agent_name_and_a_bad_url(cli: Cli, seeded: Seeded) -> None:
    wrong = cli("sessions", "--url", seeded.url, "--api-key", "not-a-key")
    assert wrong.exit_code == 1
    assert wrong.stderr == (
        f"error: the server at {seeded.url} refused the API key (unknown or revoked API key): "
        "pass a valid key with --api-key or set AGENTLEDGER_API_KEY\n"
    )
    name = cli("sessions", "--agent", "bad agent!", *seeded.args)
    assert name.exit_code == 2
    assert name.stderr == (
        "error: --agent 'bad agent!' is not an agent name: use letters, digits, '.', '_' and "
        "'-', starting with a letter or digit (or fix AGENTLEDGER_AGENT)\n"
    )
    url = cli("agents", "--url", "127.0.0.1:8765", "--api-key", "k")
    assert url.exit_code == 2 and "pass --url http://HOST:PORT" in url.stderr
    event = cli("why", "not-an-id", *seeded.args)
    assert event.exit_code == 2
    assert event.stderr.startswith("error: bad EVENT_ID: ") and "[{" not in event.stderr


def test_piped_output_is_never_cut(cli: Cli, ledger_server: Any, agent_name: str) -> None:
    """README: Command line (off a terminal, lines are written whole)."""
    from agentledger.client import Ledger

    session = f"a-rather-long-session-name-for-{agent_name}-" + "x" * 60
    types = [f"custom_type_number_{i}" for i in range(6)]
    url, key = ledger_server.url, ledger_server.api_key
    with Ledger(url, key, agent_name, spill_dir=None) as ledger:
        refs = [ledger.log(t, {"n": i}, session_id=session) for i, t in enumerate(types)]
        assert ledger.flush(10).complete
    args = ["--agent", agent_name, "--url", url, "--api-key", key]
    replay = cli("replay", session, *args).stdout
    assert f"session {session}: 6 events of {agent_name}" in replay.splitlines()
    for ref, kind in zip(refs, types, strict=True):
        assert any(ref.event_id in x and kind in x for x in replay.splitlines())
    sessions = cli("sessions", *args).stdout
    row = next(x for x in sessions.splitlines() if session in x)
    assert all(t in row for t in types), sessions
    assert len(row) > 200
    rows = json.loads(cli("sessions", "--json", *args).stdout)
    assert rows[0]["session_id"] == session


def test_the_readme_table_names_every_command_and_each_exists(cli: Cli) -> None:
    """README: Command line (one command per capability of the client)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Command line", 1)[1].split("\n## ", 1)[0]
    rows = [x for x in section.splitlines() if x.startswith("| `")]
    named = {
        word
        for row in rows
        for cell in re.findall(r"`([^`]+)`", row.replace("\\|", "/").split("|")[1])
        for word in [cell.split()[0]]
    }
    registered = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    # The server, the demo, the MCP tools, the regression harness and evidence bundles have
    # their own README sections; ``keys-admin`` works on the database, not through the client.
    elsewhere = {"serve", "keys-admin", "demo", "mcp", "mcp-proxy", "cases", "evidence"}
    assert named == registered - elsewhere
    assert all(f"agentledger {x}" in readme for x in elsewhere - {"keys-admin"})
    assert set(ENV_ONLY) - {"cases export"} <= named | {"import"}
    for command in sorted(named):
        shown = cli(command, "--help")
        assert shown.exit_code == 0 and "Usage: agentledger" in shown.stdout, command
