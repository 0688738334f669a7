"""The client commands of the ``agentledger`` CLI against a real server."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agentledger.cli import app
from agentledger.client import Ledger

from .conftest import stored_events


@pytest.fixture
def seeded(ledger_server: Any, agent_name: str) -> dict[str, Any]:
    """One session of three chained events."""
    session = f"s-{agent_name}"
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        root = ledger.log("user_message", {"text": "refund order 42"}, session_id=session)
        call = ledger.log_tool("lookup_order", {"id": 42}, parent_id=root, session_id=session)
        end = ledger.log_tool_result(
            "lookup_order", error=ValueError("no such order"), parent_id=call, session_id=session
        )
        assert ledger.flush(10).complete
    return {
        "session": session,
        "ids": [root.event_id, call.event_id, end.event_id],
        "args": ["--url", ledger_server.url, "--api-key", ledger_server.api_key],
    }


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_replay_timeline(seeded: dict[str, Any], agent_name: str) -> None:
    result = run("replay", seeded["session"], "--agent", agent_name, *seeded["args"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("user_message") < out.index("tool_call") < out.index("tool_error")
    assert "refund order 42" in out
    as_json = run("replay", seeded["session"], "--agent", agent_name, "--json", *seeded["args"])
    assert [e["event_id"] for e in orjson.loads(as_json.stdout)] == seeded["ids"]


def test_verify_exit_status(seeded: dict[str, Any], agent_name: str) -> None:
    ok = run("verify", "--agent", agent_name, *seeded["args"])
    assert ok.exit_code == 0, ok.output
    assert "intact" in ok.stdout
    report = orjson.loads(run("verify", "--agent", agent_name, "--json", *seeded["args"]).stdout)
    assert report["intact"] is True and report["chain_head"]["sequence_no"] == 3
    bad = run("verify", "--agent", agent_name, "--anchor", "0" * 64, *seeded["args"])
    assert bad.exit_code == 1
    # each problem is printed with the server's detail of what differs
    assert "truncated_after_anchor" in bad.stdout and "anchored event is gone" in bad.stdout


def test_export_then_import_is_idempotent(
    seeded: dict[str, Any], agent_name: str, ledger_server: Any, tmp_path: Path
) -> None:
    target = tmp_path / "out.ndjson"
    exported = run("export", "--agent", agent_name, "-o", str(target), *seeded["args"])
    assert exported.exit_code == 0, exported.output
    lines = target.read_bytes().splitlines()
    assert [orjson.loads(x)["event_id"] for x in lines] == seeded["ids"]

    copy = f"{agent_name}-copy"
    first = run("import", str(target), "--agent", copy, "--json", *seeded["args"])
    assert first.exit_code == 0, first.output
    assert orjson.loads(first.stdout)["imported"] == 3
    again = run("import", str(target), "--agent", copy, "--json", *seeded["args"])
    assert orjson.loads(again.stdout)["duplicates"] == 3
    copied = stored_events(ledger_server.url, ledger_server.api_key, copy)
    assert [e["event"] for e in copied] == ["user_message", "tool_call", "tool_error"]


def test_export_to_stdout(seeded: dict[str, Any], agent_name: str) -> None:
    result = run("export", "--agent", agent_name, *seeded["args"])
    assert result.exit_code == 0, result.output
    assert [orjson.loads(x)["event_id"] for x in result.stdout.splitlines()] == seeded["ids"]


def test_sessions_agents_tail(seeded: dict[str, Any], agent_name: str) -> None:
    sessions = orjson.loads(
        run("sessions", "--agent", agent_name, "--json", *seeded["args"]).stdout
    )
    assert [s["session_id"] for s in sessions] == [seeded["session"]]
    agents = orjson.loads(run("agents", "--json", *seeded["args"]).stdout)
    assert agent_name in {a["agent"] for a in agents}
    table = run("sessions", "--agent", agent_name, *seeded["args"])
    assert seeded["session"] in table.stdout
    tail = run(
        "tail", "--agent", agent_name, "--last", "3", "--count", "3", "--json", *seeded["args"]
    )
    assert tail.exit_code == 0, tail.output
    assert [orjson.loads(x)["event_id"] for x in tail.stdout.splitlines()] == seeded["ids"]


def test_errors_are_one_line_and_exit_1(seeded: dict[str, Any]) -> None:
    missing = str(uuid.uuid4())
    result = run("why", missing, *seeded["args"])
    assert result.exit_code == 1
    assert result.output == f"error: no event {missing}\n"
    assert "Traceback" not in result.output


def test_mcp_proxy_flush_timeout_default_is_the_proxys() -> None:
    """The CLI states the default without importing the proxy; the two must agree."""
    import inspect

    from agentledger.cli._mcp_commands import mcp_proxy
    from agentledger.mcp_proxy import DEFAULT_FLUSH_TIMEOUT_S

    default = inspect.signature(mcp_proxy).parameters["flush_timeout"].default
    assert default == DEFAULT_FLUSH_TIMEOUT_S
