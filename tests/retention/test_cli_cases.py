"""``agentledger retention ...`` and ``agentledger forget --cases-dir`` on a real server (README
"Retention", "Command line"): set,
list, dry run, run, log; the case files exported from erased sessions (or, for forget, from
the subject's sessions) are deleted and listed, the others stay (docs/pages/retention.md,
"Case files")."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from _servers import ServerFactory, ServerProcess
from agentledger.cli import app

from ._helpers import ago, chain

pytestmark = pytest.mark.langchain


def cli(server: ServerProcess, *args: Any) -> Any:
    """The real ``agentledger`` app in-process, pointed at ``server``."""
    env = {"AGENTLEDGER_URL": server.url, "AGENTLEDGER_API_KEY": server.api_key}
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def session(client: httpx.Client, agent: str, session_id: str, at: str) -> None:
    """A user turn and its answer at ``at``, the user named by ``user_id``."""
    root = str(uuid.uuid4())
    items = [
        {
            "event_id": root,
            "agent": agent,
            "event": "user_message",
            "timestamp": at,
            "session_id": session_id,
            "data": {"text": "where is my refund?", "user_id": f"user-{session_id}"},
        },
        {
            "agent": agent,
            "event": "assistant_response",
            "timestamp": at,
            "session_id": session_id,
            "parent_id": root,
            "data": {"text": "on its way"},
        },
    ]
    response = client.post("/v1/events/batch", json={"events": items})
    assert response.status_code == 200 and response.json()["failed"] == 0, response.text


def export(server: ServerProcess, agent: str, session_id: str, out: Path) -> Path:
    result = cli(server, "cases", "export", "--agent", agent, "--session", session_id, "--out", out)
    assert result.exit_code == 0, result.output
    (path,) = out.glob("*.json")
    return path


def test_retention_cli_with_cases_dir(server_factory: ServerFactory, tmp_path: Path) -> None:
    server = server_factory(env={"AGENTLEDGER_RETENTION_INTERVAL_S": "0"})
    agent = f"cli-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        session(client, agent, "s-old", ago(days=3))
        session(client, agent, "s-new", ago(minutes=2))
        cases = tmp_path / "cases"
        old_case = export(server, agent, "s-old", cases / "old")
        new_case = export(server, agent, "s-new", cases / "new")

        bad = cli(server, "retention", "set", "--agent", agent, "--keep", "30x")
        assert bad.exit_code == 2 and "--keep" in bad.output, bad.output
        assert cli(server, "retention", "set", "--keep", "1d").exit_code == 2  # no target
        done = cli(server, "retention", "set", "--agent", agent, "--keep", "1d")
        assert done.exit_code == 0 and "keep 1d" in done.output, done.output
        listed = json.loads(cli(server, "retention", "list", "--json").stdout)
        assert {"agent": agent, "keep": "1d"}.items() <= listed["policies"][0].items()

        dry = cli(server, "retention", "run", "--dry-run", "--cases-dir", cases, "--json")
        assert dry.exit_code == 0, dry.output
        report = json.loads(dry.stdout)
        assert report["erased"] == 2 and report["agents"][0]["sessions"] == ["s-old"]
        assert [Path(c["path"]) for c in report["cases"]["removed"]] == [old_case]
        assert old_case.exists() and new_case.exists()

        ran = cli(server, "retention", "run", "--cases-dir", cases)
        assert ran.exit_code == 0, ran.output
        assert f"deleted case file {old_case}" in ran.output
        assert not old_case.exists() and new_case.exists()
        assert chain(client, agent)["erased"] == 2 and chain(client, agent)["intact"]

        log = json.loads(cli(server, "retention", "log", "--agent", agent, "--json").stdout)
        [entry] = log["entries"]
        assert entry["erased"] == 2 and entry["rule"] == "agent" and entry["keep"] == "1d"
        shown = cli(server, "retention", "log")
        assert shown.exit_code == 0 and agent in shown.output

        # forget --cases-dir: the subject's case goes with its events
        forgot = cli(
            server, "forget", "user_id", "user-s-new", "--agent", agent, "--yes",
            "--cases-dir", cases, "--json",
        )  # fmt: skip
        assert forgot.exit_code == 0, forgot.output
        answer = json.loads(forgot.stdout)
        assert answer["deleted_events"] == 1
        assert [Path(c["path"]) for c in answer["cases"]["removed"]] == [new_case]
        assert not new_case.exists()
        missing = cli(server, "retention", "run", "--cases-dir", tmp_path / "nowhere")
        assert missing.exit_code == 2 and "--cases-dir" in missing.output
