"""``replay``, ``sessions``, ``agents``, ``verify``, ``export``, ``import``, ``tail``, ``at``
and ``baseline`` against a real server: the human output, ``--json``, and the common mistakes
with their message and exit status (README: Command line)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli, Seeded


def test_replay_shows_every_event_id_indented_under_its_cause(cli: Cli, seeded: Seeded) -> None:
    """README: Command line (replay prints event ids and the causal indentation)."""
    result = cli("replay", seeded.session, "--agent", seeded.agent, *seeded.args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"session {seeded.session}: 4 events of {seeded.agent}"
    rows = {i: next(x for x in lines if i in x) for i in seeded.ids}
    root, call, end, state = (rows[i] for i in seeded.ids)
    assert "state_set" in state
    assert "user_message" in root and "tool_call lookup_order" in call and "tool_error" in end

    def indent(line: str, event_id: str) -> int:
        rest = line.split(event_id, 1)[1]
        return len(rest) - len(rest.lstrip())

    assert indent(root, seeded.ids[0]) < indent(call, seeded.ids[1]) < indent(end, seeded.ids[2])
    as_json = cli("replay", seeded.session, "--json", env=seeded.env)
    assert as_json.exit_code == 0, as_json.output
    assert [e["event_id"] for e in json.loads(as_json.stdout)] == seeded.ids


def test_replay_of_an_unknown_session_or_agent_is_an_error(cli: Cli, seeded: Seeded) -> None:
    """README: Command line (an unknown agent or session is an error, never an empty table)."""
    result = cli("replay", "no-such-session", *seeded.args)
    assert result.exit_code == 1
    assert result.stderr == (
        "error: no session 'no-such-session': `agentledger sessions` lists them\n"
    )
    assert result.stdout == ""
    other = cli("replay", seeded.session, "--agent", "nobody-here", *seeded.args)
    assert other.exit_code == 1
    assert "no agent 'nobody-here'" in other.stderr and "agentledger agents" in other.stderr
    elsewhere = cli("replay", "no-such-session", env=seeded.env)
    assert elsewhere.exit_code == 1
    assert elsewhere.stderr == (
        f"error: no session 'no-such-session' for agent {seeded.agent!r} (--all-agents: any "
        "agent's): `agentledger sessions` lists them\n"
    )
    # --all-agents overrides AGENTLEDGER_AGENT
    env = {**seeded.env, "AGENTLEDGER_AGENT": "nobody-here"}
    assert cli("replay", seeded.session, "--all-agents", env=env).exit_code == 0


def test_sessions_and_agents(cli: Cli, seeded: Seeded) -> None:
    table = cli("sessions", env=seeded.env)
    assert table.exit_code == 0, table.output
    assert seeded.session in table.stdout
    rows = json.loads(cli("sessions", "--json", env=seeded.env).stdout)
    assert [r["session_id"] for r in rows] == [seeded.session]
    unknown = cli("sessions", "--agent", "nobody-here", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr
    agents = cli("agents", *seeded.args)
    assert agents.exit_code == 0 and seeded.agent in agents.stdout
    listed = json.loads(cli("agents", "--json", *seeded.args).stdout)
    assert {"agent": seeded.agent, "event_count": 4} in [
        {"agent": a["agent"], "event_count": a["event_count"]} for a in listed
    ]


def test_verify(cli: Cli, seeded: Seeded) -> None:
    """README: Command line (verify exits 1 when the chain is not intact)."""
    ok = cli("verify", env=seeded.env)  # the agent from AGENTLEDGER_AGENT
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith(f"chain of {seeded.agent}: intact")
    report = json.loads(cli("verify", "--json", env=seeded.env).stdout)
    assert report["intact"] is True and report["chain_head"]["sequence_no"] == 4
    broken = cli("verify", "--anchor", "0" * 64, env=seeded.env)
    assert broken.exit_code == 1 and "NOT intact" in broken.stdout
    no_agent = cli("verify", *seeded.args)
    assert no_agent.exit_code == 2
    assert no_agent.stderr == (
        "error: no agent: pass --agent NAME or set AGENTLEDGER_AGENT "
        "(`agentledger agents` lists them)\n"
    )
    unknown = cli("verify", "--agent", "nobody-here", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr


def test_export_and_import(cli: Cli, seeded: Seeded, tmp_path: Path) -> None:
    """README: Command line (export writes NDJSON; importing twice stores nothing twice)."""
    piped = cli("export", env=seeded.env)  # AGENTLEDGER_AGENT picks the agent
    assert piped.exit_code == 0, piped.output
    assert [json.loads(x)["event_id"] for x in piped.stdout.splitlines()] == seeded.ids
    target = tmp_path / "out.ndjson"
    to_file = cli("export", "-o", target, env=seeded.env)
    assert to_file.exit_code == 0, to_file.output
    assert f"exported 4 events of {seeded.agent} to {target}" in to_file.stderr
    summary = cli("export", "-o", target, "--json", env=seeded.env)
    assert json.loads(summary.stdout) == {"agent": seeded.agent, "events": 4, "output": str(target)}
    copy = f"{seeded.agent}-copy"
    first = cli("import", target, "--agent", copy, *seeded.args)
    assert first.exit_code == 0, first.output
    assert "imported 4, duplicates 0, failed 0" in first.stdout
    again = json.loads(cli("import", target, "--agent", copy, "--json", *seeded.args).stdout)
    assert again["imported"] == 0 and again["duplicates"] == 4
    missing = cli("import", tmp_path / "nope.ndjson", *seeded.args)
    assert missing.exit_code == 2 and "Usage: agentledger import" in missing.stderr
    unknown = cli("export", "--agent", "nobody-here", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr
    assert cli("export", *seeded.args).exit_code == 2  # no agent


def test_tail(cli: Cli, seeded: Seeded) -> None:
    """README: Command line (tail prints an agent's events, NDJSON with --json)."""
    lines = cli("tail", "--last", "4", "--count", "4", "--json", env=seeded.env)
    assert lines.exit_code == 0, lines.output
    assert [json.loads(x)["event_id"] for x in lines.stdout.splitlines()] == seeded.ids
    text = cli("tail", "--last", "2", "--count", "2", env=seeded.env)
    assert text.exit_code == 0, text.output
    assert seeded.ids[2] in text.stdout and seeded.ids[3] in text.stdout
    unknown = cli("tail", "--agent", "nobody-here", "--count", "1", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr


def test_at(cli: Cli, seeded: Seeded) -> None:
    later = "2100-01-01T00:00:00Z"
    table = cli("at", "--time", later, env=seeded.env)
    assert table.exit_code == 0, table.output
    assert "plan" in table.stdout and "gold" in table.stdout
    state = json.loads(cli("at", "--time", later, "--json", env=seeded.env).stdout)
    assert state["state"] == {"plan": "gold"} and state["event_count"] == 4
    bad = cli("at", "--time", "yesterday", env=seeded.env)
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: bad --time: ") and "[{" not in bad.stderr
    unknown = cli("at", "--time", later, "--agent", "nobody-here", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr


def test_baseline_says_why_there_is_no_verdict_and_what_to_do(cli: Cli, seeded: Seeded) -> None:
    """README: Command line (baseline without enough sessions says why and what to do)."""
    result = cli("baseline", env=seeded.env)
    assert result.exit_code == 0, result.output
    assert "insufficient_data" in result.stdout
    assert (
        "no verdict yet: the recent window is the last 50 sessions (--recent-window) and the "
        "baseline is the sessions before them; the baseline needs at least 10 sessions and "
        "the recent window 10, so a verdict needs 60 sessions and this agent has 1. Log more "
        "sessions: any verdict needs at least 20."
    ) in result.stdout
    report = json.loads(cli("baseline", "--json", env=seeded.env).stdout)
    assert report["verdict"] == "insufficient_data" and report["sessions"]["recent"] == 1
    bad = cli("baseline", "--window", "1y", env=seeded.env)
    assert bad.exit_code == 2
    assert bad.stderr == "error: bad --window: window must be one of 24h, 7d, 30d\n"
    unknown = cli("baseline", "--agent", "nobody-here", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr
