"""Turn-level replay of a multi-turn session on its recorded prefix, end to end: a two-turn
production session of the refund agent (LangChain ``create_agent`` on ``ChatOpenAI`` against
the tests' local OpenAI-compatible server) on a real ``agentledger serve``, exported, and one
turn re-run with ``cases run --turn``: docs/pages/regression-cases.md "Replay one turn of a
conversation" and README "Regression tests from production sessions".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentledger.cases import expand_turns, load_cases
from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

from . import model_server, replay_agent
from .conftest import cli, record_and_export

pytestmark = pytest.mark.langchain

FIRST = "I was charged twice for order A1234"
SECOND = "Thanks! When will the refund arrive?"
AGENT = ["--factory", "cases.replay_agent:build", "--tools", "cases.replay_agent:TURN_TOOLS"]


@pytest.fixture
def two_turns(
    ledger_server: Any, model: model_server.ModelServer, agent_name: str, tmp_path: Path
) -> Path:
    """A two-turn production session (the second turn asks when the refund arrives),
    exported as one case; the model server's call log is emptied afterwards."""

    def record(ledger: Ledger) -> None:
        handler = LedgerCallbackHandler(ledger, session_id="prod-2t")
        agent = replay_agent.build(replay_agent.TURN_TOOLS)
        config: Any = {"callbacks": [handler]}
        state = agent.invoke({"messages": [{"role": "user", "content": FIRST}]}, config=config)
        messages = [*state["messages"], {"role": "user", "content": SECOND}]
        agent.invoke({"messages": messages}, config=config)

    out = tmp_path / "cases"
    result = record_and_export(ledger_server, agent_name, out, ["prod-2t"], record)
    assert len(result.files) == 1, result.skipped
    model.calls.clear()
    return out


def _run(cases: Path, tmp_path: Path, model: Any, *args: Any) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    result = cli(
        "cases", "run", cases, *args, "--embeddings-url", model.base_url, "--report", report
    )
    body = json.loads(report.read_text()) if report.exists() else {}
    return result.exit_code, body, result.output


def _prompt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prompt.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _checks(case: dict[str, Any]) -> dict[str, bool]:
    return {c["check_id"]: c["met"] for c in case["checks"]}


def test_the_export_keeps_each_turns_calls_and_answer(two_turns: Path) -> None:
    ((path, case),) = load_cases(two_turns)
    document = json.loads(path.read_text())
    assert document["schema_version"] == 3
    assert case.inputs == [FIRST, SECOND]
    assert case.turn_answers == [model_server.ANSWER, model_server.ARRIVAL]
    turns = {name: [c.turn for c in calls] for name, calls in case.tool_stubs.items()}
    assert turns == {"lookup_order": [0], "verify_charge": [0], "refund_status": [1]}
    assert case.source_answer == model_server.ARRIVAL


def test_the_last_turn_runs_alone_on_the_recorded_conversation(
    two_turns: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    code, report, output = _run(two_turns, tmp_path, model, *AGENT, "--turn", "last")
    assert code == 0, output
    (case,) = report["cases"]
    assert case["case_id"].endswith(".t2")
    assert case["source_answer"] == model_server.ARRIVAL
    checks = _checks(case)
    assert checks["must_call:refund_status"]
    assert not any("lookup_order" in c or "verify_charge" in c for c in checks)
    (run,) = case["run_details"]
    assert run["answer"] == model_server.ARRIVAL and run["similarity"] == pytest.approx(1.0)
    # only the second turn was generated: one call asking for the tool, one answering
    assert len(model.calls) == 2
    sent = model.calls[0]["messages"]
    roles = [m["role"] for m in sent]
    prefix = ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert roles == ["system", *prefix, "user"]
    assert sent[1]["content"] == FIRST and sent[-1]["content"] == SECOND
    requested = [c["function"]["name"] for m in sent for c in m.get("tool_calls") or []]
    assert requested == ["lookup_order", "verify_charge"]
    assert json.loads(sent[3]["content"]) == {"order_id": "A1234", "status": "paid", "amount": 49.9}
    assert sent[6]["content"] == model_server.ANSWER


def test_each_turn_is_judged_on_its_own(
    two_turns: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    """A prompt that drops the verification fails the first turn and only that turn."""
    prompt = _prompt(tmp_path, "You are a refund agent.")
    code, report, output = _run(
        two_turns, tmp_path, model, *AGENT, "--turn", "each", "--system-prompt", prompt
    )
    assert code == 1, output
    first, second = report["cases"]
    assert first["case_id"].endswith(".t1") and second["case_id"].endswith(".t2")
    assert not _checks(first)["must_call:verify_charge"]
    assert all(_checks(second).values()), second["checks"]
    assert first["source_answer"] == model_server.ANSWER


def test_without_turn_every_turn_is_regenerated(
    two_turns: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    code, report, output = _run(two_turns, tmp_path, model, *AGENT)
    assert code == 0, output
    (case,) = report["cases"]
    assert not case["case_id"].endswith(".t2")
    assert len(model.calls) == 5  # three calls for the first turn, two for the second


@pytest.mark.parametrize("api", ["chat.completions", "responses"])
def test_the_built_in_candidate_sends_the_recorded_prefix(
    two_turns: Path,
    model: model_server.ModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    api: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    (path,) = two_turns.glob("*.json")
    document = json.loads(path.read_text())
    document["captured_with"]["api"] = api
    path.write_text(json.dumps(document))
    code, report, output = _run(
        two_turns,
        tmp_path,
        model,
        "--factory",
        "agentledger.cases:openai_candidate",
        "--tools",
        "cases.replay_agent:TURN_TOOLS",
        "--base-url",
        model.base_url,
        "--turn",
        "2",
    )
    assert code == 0, output
    (case,) = report["cases"]
    assert case["run_details"][0]["answer"] == model_server.ARRIVAL
    assert model.paths[-1].endswith("/responses" if api == "responses" else "/chat/completions")
    first = model.calls[0]
    if api == "responses":
        kinds = [item.get("type") or item.get("role") for item in first["input"]]
        assert kinds.count("function_call") == 2 and kinds.count("function_call_output") == 2
    else:
        assert [m["role"] for m in first["messages"]].count("tool") == 2


def test_a_turn_the_case_does_not_have_or_a_bad_choice_is_refused(
    two_turns: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    code, _, output = _run(two_turns, tmp_path, model, *AGENT, "--turn", "3")
    assert code == 2 and "no turn 3" in output, output
    code, _, output = _run(two_turns, tmp_path, model, *AGENT, "--turn", "second")
    assert code == 2 and "--turn" in output, output
    assert model.calls == []


def test_a_case_exported_without_its_turns_says_to_export_it_again(
    two_turns: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    (path,) = two_turns.glob("*.json")
    document = json.loads(path.read_text())
    document["schema_version"] = 2
    del document["turn_answers"]
    for calls in document["tool_stubs"].values():
        for call in calls:
            del call["turn"]
    path.write_text(json.dumps(document))
    code, _, output = _run(two_turns, tmp_path, model, *AGENT, "--turn", "last")
    assert code == 2 and "export it again" in output, output
    # the whole conversation still replays as before
    assert len(expand_turns(load_cases(two_turns), "all")) == 1
