"""``agentledger cases replay``: recorded sessions picked on a real ``agentledger serve``,
exported and run against a candidate on the tests' local OpenAI-compatible model server, in
one command: README "Regression tests from production sessions" and docs/pages/
regression-cases.md "Replay recorded sessions in one command".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

from . import model_server, replay_agent
from .conftest import cli

pytestmark = pytest.mark.langchain

INTENTS = {"prod-a": "refund", "prod-b": "refund", "prod-c": "billing"}


@pytest.fixture
def recorded(ledger_server: Any, model: model_server.ModelServer, agent_name: str) -> list[str]:
    """Three production sessions of the refund agent, each with an ``intent`` label in its
    metadata; the model server's call log is emptied afterwards."""
    ledger = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    try:
        for session, intent in INTENTS.items():
            handler = LedgerCallbackHandler(ledger, session_id=session, metadata={"intent": intent})
            replay_agent.build(replay_agent.TOOLS).invoke(
                {"messages": [{"role": "user", "content": "I was charged twice for order A1234"}]},
                config={"callbacks": [handler]},
            )
        assert ledger.flush(timeout_s=10).complete
    finally:
        ledger.close(timeout_s=5)
    model.calls.clear()
    return list(INTENTS)


def _source(server: Any, agent: str) -> list[str]:
    return ["--url", server.url, "--api-key", server.api_key, "--agent", agent]


def _replay(
    tmp_path: Path, model: Any, *args: Any, report: bool = True
) -> tuple[int, dict[str, Any], str]:
    path = tmp_path / "report.json"
    path.unlink(missing_ok=True)
    extra = ["--report", path] if report else []
    result = cli("cases", "replay", *args, "--embeddings-url", model.base_url, *extra)
    body = json.loads(path.read_text()) if path.exists() else {}
    return result.exit_code, body, result.output


def _prompt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prompt.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_named_sessions_replay_against_a_factory_with_a_new_prompt(
    recorded: list[str],
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
) -> None:
    source = _source(ledger_server, agent_name)
    factory = ["--factory", "cases.replay_agent:build", "--tools", "cases.replay_agent:TOOLS"]
    picked = ["--session", "prod-a", "--session", "prod-c"]
    code, report, output = _replay(tmp_path, model, *source, *picked, *factory)
    assert code == 0, output
    assert "replaying 2 sessions" in output
    assert sorted(c["source_session"] for c in report["cases"]) == ["prod-a", "prod-c"]
    assert len(model.calls) == 6  # three model calls per session: lookup, verify, answer
    prompt = _prompt(tmp_path, "You are a refund agent.")
    code, report, output = _replay(
        tmp_path, model, *source, *picked, *factory, "--system-prompt", prompt
    )
    assert code == 1, output
    for case in report["cases"]:
        failed = {c["check_id"] for c in case["checks"] if not c["met"]}
        assert "must_call:verify_charge" in failed


def test_a_stratum_of_a_label_replays_through_the_built_in_candidate(
    recorded: list[str],
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No agent code: the default candidate re-sends each recording to the endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    draw = ["--stratify-by", "intent", "--stratum", "refund", "--fraction", "1"]
    candidate = ["--base-url", model.base_url, "--tools", "cases.replay_agent:TOOLS"]
    source = _source(ledger_server, agent_name)
    code, report, output = _replay(tmp_path, model, *source, *draw, *candidate)
    assert code == 0, output
    assert sorted(c["source_session"] for c in report["cases"]) == ["prod-a", "prod-b"]
    assert "1 session in other strata" in output
    assert all(p.endswith("/chat/completions") for p in model.paths)
    terse = _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT + " Be terse.")
    code, report, output = _replay(
        tmp_path,
        model,
        *source,
        *draw,
        *candidate,
        "--system-prompt",
        terse,
        "--max-truncations",
        "0",
    )
    assert code == 1, output
    (gate,) = report["gates"]
    assert gate["gate"] == "max_truncations" and gate["measured"] == "2 of 2 runs"


def test_runs_kept_under_a_run_id_are_read_back_on_a_retry(
    recorded: list[str],
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
) -> None:
    runs_agent = "replays-" + tmp_path.name[-12:].strip("_-")
    args = [
        *_source(ledger_server, agent_name),
        "--session",
        "prod-b",
        "--factory",
        "cases.replay_agent:build",
        "--tools",
        "cases.replay_agent:TOOLS",
        "--runs-url",
        ledger_server.url,
        "--runs-key",
        ledger_server.api_key,
        "--runs-agent",
        runs_agent,
        "--run-id",
        "nightly-7",
    ]

    def stored() -> int:
        reply = httpx.get(f"{ledger_server.url}/v1/agents", headers=ledger_server.headers())
        rows = [r for r in reply.json() if r["agent"] == runs_agent]
        return int(rows[0]["event_count"]) if rows else 0

    code, first, output = _replay(tmp_path, model, *args)
    assert code == 0, output
    calls, events = len(model.calls), stored()
    assert events > 0 and first["ledger_url"] == ledger_server.url
    code, again, output = _replay(tmp_path, model, *args)
    assert code == 0, output
    assert len(model.calls) == calls and stored() == events
    assert again["cases"][0]["run_details"][0]["reused"] is True


def test_a_dry_run_lists_the_pick_and_out_keeps_the_cases(
    recorded: list[str],
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
) -> None:
    source = _source(ledger_server, agent_name)
    draw = ["--stratify-by", "intent", "--per-stratum", "1", "--seed", "3"]
    code, _, output = _replay(tmp_path, model, *source, *draw, "--dry-run", report=False)
    assert code == 0, output
    listed = [line for line in output.splitlines() if line.startswith("prod-")]
    assert len(listed) == 2 and "prod-c" in listed and model.calls == []
    code, _, again = _replay(tmp_path, model, *source, *draw, "--dry-run", report=False)
    assert [line for line in again.splitlines() if line.startswith("prod-")] == listed
    kept = tmp_path / "kept"
    factory = ["--factory", "cases.replay_agent:build", "--tools", "cases.replay_agent:TOOLS"]
    code, report, output = _replay(
        tmp_path, model, *source, "--session", "prod-a", *factory, "--out", kept
    )
    assert code == 0, output
    (file,) = kept.glob("*.json")
    assert json.loads(file.read_text())["source_session"] == "prod-a"
    assert [Path(c["file"]) for c in report["cases"]] == [file]  # the report names the kept file
    assert cli("cases", "run", kept, *factory).exit_code == 0
    # a directory that already holds cases is refused (cases run would run those too)
    code, _, output = _replay(
        tmp_path, model, *source, "--session", "prod-b", *factory, "--out", kept
    )
    assert code == 2 and "already holds case files" in " ".join(output.split()), output
    assert [p.name for p in kept.glob("*.json")] == [file.name]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "nothing picked"),
        (["--stratum", "refund", "--fraction", "1"], "--stratum needs --stratify-by"),
        (["--session", "prod-a", "--stratum", "refund"], "need --sample"),
        (["--session", "no-such-session"], "no session to replay"),
    ],
)
def test_bad_picks_exit_2_before_anything_runs(
    recorded: list[str],
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
    args: list[str],
    message: str,
) -> None:
    code, _, output = _replay(
        tmp_path, model, *_source(ledger_server, agent_name), *args, report=False
    )
    assert code == 2 and message in " ".join(output.split()), output
    assert model.calls == []


def test_no_agent_code_and_no_tools_module_the_recorded_definitions_are_offered(
    recorded: list[str],
    ledger_server: Any,
    model: model_server.ModelServer,
    agent_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without --tools, the tool definitions the production model was offered are offered
    again, and the case's stubs answer them: the replay needs no code of the agent at all."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    kept = tmp_path / "kept"
    code, report, output = _replay(
        tmp_path,
        model,
        *_source(ledger_server, agent_name),
        "--session",
        "prod-a",
        "--base-url",
        model.base_url,
        "--out",
        kept,
    )
    assert code == 0, output
    (file,) = kept.glob("*.json")
    recorded_schemas = json.loads(file.read_text())["captured_with"]["tool_schemas"]
    names = [s["function"]["name"] for s in recorded_schemas]
    assert names == ["lookup_order", "verify_charge"]
    assert all(call["tools"] == recorded_schemas for call in model.calls)
    (case,) = report["cases"]
    assert all(c["met"] for c in case["checks"]), case["checks"]
    assert case["run_details"][0]["answer"] == model_server.ANSWER


def test_recorded_definitions_of_every_provider_shape_become_tools() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from agentledger.cases._recorded_tools import recorded_tools

    params = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = recorded_tools(
        [
            {
                "type": "function",
                "function": {"name": "a", "description": "A.", "parameters": params},
            },
            {"type": "function", "name": "b", "description": "B.", "parameters": params},
            {"name": "c", "description": "C.", "input_schema": params},
            {"type": "web_search"},  # a provider's built-in tool: nothing to stub
            {"type": "function", "function": {"name": "a", "parameters": {}}},  # a repeat
            "not a definition",
        ]
    )
    assert [t.name for t in tools] == ["a", "b", "c"]
    assert convert_to_openai_tool(tools[1])["function"]["parameters"] == params
    with pytest.raises(RuntimeError, match="only its stub answers"):
        tools[0].invoke({"q": "x"})
