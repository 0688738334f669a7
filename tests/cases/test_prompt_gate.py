"""Gate a prompt change on recorded production sessions, end to end, against a real local
OpenAI-compatible model server (chat completions with tool calls, embeddings) and a real
``agentledger serve``: README "Regression tests from production sessions" and docs/pages/
regression-cases.md "5. Gate a prompt or model change".
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

from . import model_server, replay_agent
from .conftest import cli, record_and_export

pytestmark = pytest.mark.langchain

RUN = ["--factory", "cases.replay_agent:build", "--tools", "cases.replay_agent:TOOLS"]


def _prompt(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"prompt-{abs(hash(text))}.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _run(case_dir: Path, tmp_path: Path, *args: Any) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "report.json"
    result = cli("cases", "run", case_dir, *RUN, "--report", report, *args)
    body = json.loads(report.read_text()) if report.exists() else {}
    return result.exit_code, body, result.output


def _free_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there once the socket is closed


def test_export_freezes_what_the_model_saw(case_dir: Path) -> None:
    (file,) = case_dir.glob("*.json")
    case = json.loads(file.read_text())
    setup = case["captured_with"]
    assert setup["system_prompt"] == replay_agent.PRODUCTION_PROMPT
    assert setup["prompt_hash"].startswith("sha256:")
    assert setup["served_models"] == ["gpt-test-served"]
    assert setup["parameters"]["temperature"] == 0.0
    assert setup["finish_reason"] == "stop"
    assert case["source_answer"] == model_server.ANSWER
    # the exported case checks the candidate's answer against the source answer by default
    assert {"similar_to": model_server.ANSWER, "threshold": 0.7} in [
        {k: o[k] for k in ("similar_to", "threshold") if k in o} for o in case["expect"]["outcome"]
    ]


def test_unchanged_prompt_passes_with_scores_pairs_and_a_markdown_summary(
    case_dir: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    code, report, output = _run(
        case_dir,
        tmp_path,
        "--system-prompt",
        _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT),
        "--embeddings-url",
        model.base_url,
        "--min-mean-similarity",
        "0.9",
        "--min-similarity",
        "0.9",
        "--max-truncations",
        "0",
        "--runs",
        "2",
        "--markdown",
        summary,
    )
    assert code == 0, output
    assert report["report_version"] == 2 and report["gate_passed"]
    assert [g["gate"] for g in report["gates"]] == [
        "min_mean_similarity",
        "min_similarity",
        "max_truncations",
    ]
    assert all(g["passed"] for g in report["gates"])
    similarity = report["similarity"]
    assert similarity["runs_scored"] == 2 and similarity["mean"] == pytest.approx(1.0)
    assert "gpt-test" in similarity["embedder"] or model.base_url in similarity["embedder"]
    assert sum(b["runs"] for b in similarity["histogram"]) == 2
    (case,) = report["cases"]
    assert case["source_answer"] == model_server.ANSWER
    for run in case["run_details"]:
        assert run["answer"] == model_server.ANSWER and run["finish_reason"] == "stop"
        assert run["similarity"] == pytest.approx(1.0)
    text = summary.read_text()
    assert "gate passed" in text and "min_mean_similarity" in text
    assert model_server.ANSWER[:40] in text


def test_a_prompt_that_skips_a_required_tool_fails(case_dir: Path, tmp_path: Path) -> None:
    code, report, output = _run(
        case_dir, tmp_path, "--system-prompt", _prompt(tmp_path, "You are a refund agent.")
    )
    assert code == 1, output
    failed = {c["check_id"] for c in report["cases"][0]["checks"] if not c["met"]}
    assert "must_call:verify_charge" in failed


def test_a_truncating_candidate_fails_the_case_and_the_truncation_gate(
    case_dir: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    prompt = _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT + " Be terse.")
    code, report, output = _run(
        case_dir,
        tmp_path,
        "--system-prompt",
        prompt,
        "--embeddings-url",
        model.base_url,
        "--max-truncations",
        "0",
    )
    assert code == 1, output
    checks = {c["check_id"]: c for c in report["cases"][0]["checks"]}
    assert not checks["answer:not_truncated"]["met"]
    assert checks["answer:not_truncated"]["actual"].startswith("finish_reason length")
    assert report["cases"][0]["run_details"][0]["finish_reason"] == "length"
    (gate,) = report["gates"]
    assert gate["gate"] == "max_truncations" and not gate["passed"]
    assert gate["measured"] == "1 of 1 runs"


def test_very_different_wording_fails_on_similarity(
    case_dir: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    prompt = _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT + " Be chatty.")
    code, report, output = _run(
        case_dir,
        tmp_path,
        "--system-prompt",
        prompt,
        "--embeddings-url",
        model.base_url,
        "--min-mean-similarity",
        "0.8",
    )
    assert code == 1, output
    checks = {c["check_id"]: c for c in report["cases"][0]["checks"]}
    similar = next(c for k, c in checks.items() if k.endswith(":similar_to"))
    assert not similar["met"]
    assert report["cases"][0]["run_details"][0]["similarity"] < 0.5
    (gate,) = report["gates"]
    assert not gate["passed"] and gate["measured"].endswith("over 1 runs")
    # the same candidate judged by the offline model (no endpoint configured) fails too
    code, report, output = _run(case_dir, tmp_path, "--system-prompt", prompt)
    assert code == 1, output
    assert report["similarity"]["embedder"].endswith("(offline)")
    assert report["similarity"]["mean"] < 0.5


def test_no_embeddings_fails_closed_unless_similarity_is_turned_off(
    case_dir: Path, tmp_path: Path
) -> None:
    down = _free_port_url()
    code, report, output = _run(
        case_dir, tmp_path, "--embeddings-url", down, "--min-mean-similarity", "0.5"
    )
    assert code == 1, output
    checks = {c["check_id"]: c for c in report["cases"][0]["checks"]}
    similar = next(c for k, c in checks.items() if k.endswith(":similar_to"))
    assert not similar["met"] and similar["actual"].startswith("cannot compute")
    (gate,) = report["gates"]
    assert not gate["passed"] and gate["measured"].startswith("cannot compute")
    assert report["similarity"]["runs_scored"] == 0
    # turned off explicitly: the similarity check is not evaluated and the rest passes
    code, report, output = _run(case_dir, tmp_path, "--embeddings-url", down, "--no-similarity")
    assert code == 0, output
    checks = {c["check_id"]: c for c in report["cases"][0]["checks"]}
    similar = next(c for k, c in checks.items() if k.endswith(":similar_to"))
    assert similar["evaluated"] == 0 and similar["skipped"] == 1
    assert report["similarity"] is None
    # ... but a similarity gate cannot be asked for with similarity off
    code, _, output = _run(case_dir, tmp_path, "--no-similarity", "--min-similarity", "0.5")
    assert code == 2 and "--no-similarity" in output


def test_a_rerun_with_the_same_run_id_stores_nothing_twice(
    case_dir: Path, model: model_server.ModelServer, ledger_server: Any, tmp_path: Path
) -> None:
    agent = "replay-" + tmp_path.name[-20:].strip("_-")
    target = [
        "--url",
        ledger_server.url,
        "--api-key",
        ledger_server.api_key,
        "--agent-name",
        agent,
        "--run-id",
        "ci-4242",
    ]

    def stored() -> int:
        reply = httpx.get(f"{ledger_server.url}/v1/agents", headers=ledger_server.headers())
        rows = [r for r in reply.json() if r["agent"] == agent]
        return int(rows[0]["event_count"]) if rows else 0

    code, first, output = _run(case_dir, tmp_path, *target, "--runs", "2")
    assert code == 0, output
    calls, events = len(model.calls), stored()
    assert events > 0
    code, again, output = _run(case_dir, tmp_path, *target, "--runs", "2")
    assert code == 0, output
    assert len(model.calls) == calls and stored() == events  # read back, not run again
    runs = again["cases"][0]["run_details"]
    assert [r["reused"] for r in runs] == [True, True]
    assert [r["session_id"] for r in runs] == [
        r["session_id"] for r in first["cases"][0]["run_details"]
    ]
    assert [r["answer"] for r in runs] == [model_server.ANSWER] * 2
    # another prompt under the same run id is another candidate: it runs
    prompt = _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT + " Be chatty.")
    code, other, output = _run(case_dir, tmp_path, *target, "--system-prompt", prompt)
    assert code == 1, output
    assert len(model.calls) > calls and stored() > events
    assert other["cases"][0]["run_details"][0]["reused"] is False


def test_an_override_the_factory_cannot_take_is_refused(case_dir: Path, tmp_path: Path) -> None:
    result = cli(
        "cases",
        "run",
        case_dir,
        "--factory",
        "cases.replay_agent:build_without_prompt",
        "--tools",
        "cases.replay_agent:TOOLS",
        "--model",
        "gpt-new",
    )
    assert result.exit_code == 2
    assert "--model" in result.output and "build_without_prompt" in result.output


def test_a_bare_chat_model_is_a_source_and_a_candidate(
    ledger_server: Any, model: model_server.ModelServer, agent_name: str, tmp_path: Path
) -> None:

    def record(ledger: Ledger) -> None:
        chat = replay_agent.build_chat_model([])
        handler = LedgerCallbackHandler(ledger, session_id="chat-1")
        chat.invoke(
            [("system", "You are a refund agent."), ("user", "Refund my duplicate charge")],
            config={"callbacks": [handler]},
        )

    out = tmp_path / "cases"
    result = record_and_export(ledger_server, agent_name, out, ["chat-1"], record)
    assert len(result.files) == 1, result.skipped
    case = json.loads(result.files[0].read_text())
    assert case["inputs"] == ["Refund my duplicate charge"]
    assert case["captured_with"]["system_prompt"] == "You are a refund agent."
    bare = ["--factory", "cases.replay_agent:build_chat_model"]
    tools = ["--tools", "cases.replay_agent:TOOLS"]
    report = tmp_path / "chat.json"
    ok = cli("cases", "run", out, *bare, *tools, "--report", report, "--max-truncations", "0")
    assert ok.exit_code == 0, ok.output
    body = json.loads(report.read_text())
    assert body["cases"][0]["run_details"][0]["answer"] == model_server.ANSWER
    sent = model.calls[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are a refund agent."}
    # a new prompt reaches the bare model as its system message
    prompt = _prompt(tmp_path, "You are a refund agent. Be terse.")
    bad = cli("cases", "run", out, *bare, *tools, "--system-prompt", prompt)
    assert bad.exit_code == 1 and "answer:not_truncated" in bad.output
    assert model.calls[-1]["messages"][0]["content"].endswith("Be terse.")


def test_a_raw_openai_sdk_chatbot_is_a_source_and_a_candidate(
    ledger_server: Any, model: model_server.ModelServer, agent_name: str, tmp_path: Path
) -> None:
    from openai import OpenAI

    from agentledger.integrations.openai import instrument_openai

    def record(ledger: Ledger) -> None:
        client = instrument_openai(
            OpenAI(base_url=model.base_url, api_key="k", max_retries=0), ledger, session_id="sdk-1"
        )
        client.chat.completions.create(
            model="gpt-test",
            messages=[
                {"role": "system", "content": "You are a refund agent."},
                {"role": "user", "content": "Refund my duplicate charge"},
            ],
        )

    out = tmp_path / "cases"
    result = record_and_export(ledger_server, agent_name, out, ["sdk-1"], record)
    assert len(result.files) == 1, result.skipped
    case = json.loads(result.files[0].read_text())
    assert case["inputs"] == ["Refund my duplicate charge"]
    assert case["source_answer"] == model_server.ANSWER
    assert case["captured_with"]["system_prompt"] == "You are a refund agent."
    assert case["captured_with"]["finish_reason"] == "stop"
    bot = ["--factory", "cases.replay_agent:build_openai_bot"]
    tools = ["--tools", "cases.replay_agent:TOOLS"]
    report = tmp_path / "sdk.json"
    ok = cli("cases", "run", out, *bot, *tools, "--report", report, "--max-truncations", "0")
    assert ok.exit_code == 0, ok.output
    run = json.loads(report.read_text())["cases"][0]["run_details"][0]
    assert run["answer"] == model_server.ANSWER and run["finish_reason"] == "stop"
    assert run["model_calls"] == 1  # logged by instrument_openai into the run's session
    prompt = _prompt(tmp_path, "You are a refund agent. Be terse.")
    bad = cli("cases", "run", out, *bot, *tools, "--system-prompt", prompt)
    assert bad.exit_code == 1 and "answer:not_truncated" in bad.output


def test_the_built_in_candidate_resends_the_recording_to_an_openai_compatible_endpoint(
    case_dir: Path,
    model: model_server.ModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No agent code: the recorded conversation goes to the endpoint with the recorded model,
    the case's stubs answer the tool calls, and a prompt change is gated as with a factory."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    candidate = ["--factory", "agentledger.cases:openai_candidate", "--base-url", model.base_url]
    tools = ["--tools", "cases.replay_agent:TOOLS"]
    report = tmp_path / "builtin.json"
    ok = cli("cases", "run", case_dir, *candidate, *tools, "--report", report)
    assert ok.exit_code == 0, ok.output
    run = json.loads(report.read_text())["cases"][0]["run_details"][0]
    assert run["path"][:2] == ["lookup_order(order_id=A1234)", "verify_charge(order_id=A1234)"]
    assert run["answer"] == model_server.ANSWER
    sent = model.calls[-1]
    assert sent["model"] == "gpt-test"  # the model the case recorded
    assert sent["messages"][0]["content"] == replay_agent.PRODUCTION_PROMPT
    assert sent["temperature"] == 0.0  # the recorded sampling parameter
    assert {t["function"]["name"] for t in sent["tools"]} == {"lookup_order", "verify_charge"}
    prompt = _prompt(tmp_path, "You are a refund agent.")  # no verification asked for
    bad = cli(
        "cases",
        "run",
        case_dir,
        *candidate,
        *tools,
        "--system-prompt",
        prompt,
        "--model",
        "gpt-new",
    )
    assert bad.exit_code == 1 and "must_call:verify_charge" in bad.output
    assert model.calls[-1]["model"] == "gpt-new"
    assert run["models"] == ["gpt-test"] and run["model_changed"] is False
    changed = tmp_path / "changed.json"
    cli("cases", "run", case_dir, *candidate, *tools, "--model", "gpt-new", "--report", changed)
    run = json.loads(changed.read_text())["cases"][0]["run_details"][0]
    assert run["models"] == ["gpt-new"] and run["served_models"] == ["gpt-new-served"]
    assert run["model_changed"] is True


def test_the_histogram_shows_this_run_next_to_the_baseline(
    case_dir: Path, model: model_server.ModelServer, tmp_path: Path
) -> None:
    from agentledger.cases import baseline_scores

    embeddings = ["--embeddings-url", model.base_url]
    before = tmp_path / "before.json"
    ok = cli("cases", "run", case_dir, *RUN, *embeddings, "--runs", "2", "--report", before)
    assert ok.exit_code == 0, ok.output
    assert baseline_scores(json.loads(before.read_text())) == pytest.approx([1.0, 1.0])
    chart = tmp_path / "similarity.png"
    prompt = _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT + " Be chatty.")
    bad = cli(
        "cases",
        "run",
        case_dir,
        *RUN,
        *embeddings,
        "--system-prompt",
        prompt,
        "--baseline",
        before,
        "--histogram",
        chart,
        "--min-mean-similarity",
        "0.8",
    )
    assert bad.exit_code == 1, bad.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 5_000


def test_a_candidate_that_declines_fails_the_refusal_gate(case_dir: Path, tmp_path: Path) -> None:
    code, report, output = _run(case_dir, tmp_path, "--max-refusal-rate", "0")
    assert code == 0, output
    assert report["gates"][0]["measured"] == "0% (0 of 1 answers)"
    prompt = _prompt(tmp_path, replay_agent.PRODUCTION_PROMPT + " Refuse politely.")
    code, report, output = _run(
        case_dir, tmp_path, "--system-prompt", prompt, "--max-refusal-rate", "0"
    )
    assert code == 1, output
    (gate,) = report["gates"]
    assert gate["gate"] == "max_refusal_rate" and not gate["passed"]
    assert report["cases"][0]["run_details"][0]["refused"] is True


def test_long_inputs_are_kept_whole_and_a_cut_one_is_labelled(
    ledger_server: Any, model: model_server.ModelServer, agent_name: str, tmp_path: Path
) -> None:
    """The user's turn is kept up to 65,000 characters whatever max_field_chars is; beyond,
    the integration cuts it and the exported case says so (``inputs-cut``)."""
    long_text = ("Please refund order A1234. " + "context " * 633).rstrip()  # 5,090 characters
    huge_text = "x" * 65_001

    def record(ledger: Ledger) -> None:
        chat = replay_agent.build_chat_model([])
        for session, text in (("long-1", long_text), ("huge-1", huge_text)):
            handler = LedgerCallbackHandler(ledger, session_id=session, max_field_chars=100)
            chat.invoke([("user", text)], config={"callbacks": [handler]})

    sessions = ["long-1", "huge-1"]
    result = record_and_export(ledger_server, agent_name, tmp_path / "cases", sessions, record)
    cases = {
        json.loads(f.read_text())["source_session"]: json.loads(f.read_text()) for f in result.files
    }
    assert cases["long-1"]["inputs"] == [long_text]
    assert "inputs-cut" not in cases["long-1"]["labels"]
    assert cases["huge-1"]["inputs"][0].endswith("…[cut, 65001 chars]")
    assert "inputs-cut" in cases["huge-1"]["labels"]


def test_long_tool_results_are_kept_whole_and_a_cut_one_is_labelled(
    ledger_server: Any, model: model_server.ModelServer, agent_name: str, tmp_path: Path
) -> None:
    """A tool result is what the model read and what the case's stub answers with: it is kept
    up to 65,000 characters whatever max_field_chars is; beyond, the exported case says so
    (``results-cut``): docs/pages/regression-cases.md "5. Gate a prompt or model change"."""
    from langchain_core.tools import tool

    def tools(size: int) -> list[Any]:
        @tool
        def lookup_order(order_id: str) -> str:
            """Look an order up."""
            return ("history " * (size // 8 + 1))[:size]

        return [lookup_order, replay_agent.verify_charge]

    def record(ledger: Ledger) -> None:
        for session, size in (("tool-long", 10_000), ("tool-huge", 70_000)):
            handler = LedgerCallbackHandler(ledger, session_id=session)
            replay_agent.build(tools(size)).invoke(
                {"messages": [{"role": "user", "content": "I was charged twice for A1234"}]},
                config={"callbacks": [handler]},
            )

    sessions = ["tool-long", "tool-huge"]
    result = record_and_export(ledger_server, agent_name, tmp_path / "cases", sessions, record)
    cases = {
        json.loads(f.read_text())["source_session"]: json.loads(f.read_text()) for f in result.files
    }
    (long_call,) = cases["tool-long"]["tool_stubs"]["lookup_order"]
    assert long_call["result"] == ("history " * 1251)[:10_000]
    assert "results-cut" not in cases["tool-long"]["labels"]
    (huge_call,) = cases["tool-huge"]["tool_stubs"]["lookup_order"]
    assert huge_call["result"].endswith("…[cut, 70000 chars]")
    assert "results-cut" in cases["tool-huge"]["labels"]
