"""Corpus gates, run ids and the Markdown summary on their own (docs/pages/regression-cases.md
"5. Gate a prompt or model change"; README "Regression tests from production sessions")."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

from agentledger.cases import (
    Case,
    CaseReport,
    GateOptions,
    SimilarityStats,
    SpecError,
    SuiteReport,
    check,
    default_run_id,
    looks_like_refusal,
    markdown_summary,
    suite_run_id,
)
from agentledger.cases._gate import evaluate_gates

pytestmark = pytest.mark.langchain


def _events(answer: str, finish: str | None) -> list[dict[str, Any]]:
    end: dict[str, Any] = {"text": answer, "token_usage": {"input_tokens": 10}}
    if finish is not None:
        end["finish_reason"] = finish
    return [
        {"event": "user_message", "data": {"text": "q"}, "sequence_no": 1},
        {"event": "llm_start", "data": {"model": "m"}, "sequence_no": 2},
        {"event": "llm_end", "data": end, "sequence_no": 3},
        {"event": "assistant_response", "data": {"text": answer}, "sequence_no": 4},
    ]


def test_a_truncated_final_answer_fails_unless_the_case_allows_it() -> None:
    case = Case.model_validate({"case_id": "t", "inputs": ["q"]})
    cut = {c.check_id: c for c in check(case, _events("I refunded the", "length")).checks}
    assert cut["answer:not_truncated"].passed is False and cut["answer:not_truncated"].safety
    done = {c.check_id: c for c in check(case, _events("Done.", "stop")).checks}
    assert done["answer:not_truncated"].passed is True
    unknown = {c.check_id: c for c in check(case, _events("Done.", None)).checks}
    assert unknown["answer:not_truncated"].passed is None  # not recorded: not evaluated
    allowed = Case.model_validate(
        {"case_id": "t", "inputs": ["q"], "expect": {"allow_truncation": True}}
    )
    assert "answer:not_truncated" not in {
        c.check_id for c in check(allowed, _events("I refunded the", "length")).checks
    }
    # Anthropic's and Gemini's names for the same stop
    for reason in ("max_tokens", "MAX_TOKENS", "max_output_tokens"):
        result = {c.check_id: c for c in check(case, _events("x", reason)).checks}
        assert result["answer:not_truncated"].passed is False, reason


def test_gates_fail_closed_when_nothing_was_measured() -> None:
    every = GateOptions(min_mean_similarity=0.5, min_similarity=0.5, max_truncations=0)
    off = evaluate_gates(every, None, [None])
    assert [g.passed for g in off] == [False, False, False]
    assert all(g.measured.startswith("cannot compute") for g in off)
    unscored = SimilarityStats("e", unscored=[("c", 1, "embeddings failed: refused")])
    gates = evaluate_gates(every, unscored, ["stop"])
    assert not gates[0].passed and "refused" in gates[0].measured
    assert gates[2].passed  # 0 of 1 truncated
    # a partly scored suite cannot pass a similarity gate either
    partial = SimilarityStats("e", scores=[("c", 1, 0.99)], unscored=[("c", 2, "no answer")])
    assert [g.passed for g in evaluate_gates(every, partial, ["stop", "stop"])[:2]] == [
        False,
        False,
    ]


def test_gates_measure_mean_floor_and_truncations() -> None:
    stats = SimilarityStats("e", scores=[("a", 1, 0.95), ("b", 1, 0.9), ("c", 1, 0.4)])
    mean, floor, cut = evaluate_gates(
        GateOptions(min_mean_similarity=0.7, min_similarity=0.5, max_truncations=1),
        stats,
        ["stop", "length", None],
    )
    assert mean.passed and mean.measured == "0.750 over 3 runs"
    assert not floor.passed and floor.measured.startswith("lowest 0.400 (c run 1); 1 runs below")
    assert cut.passed and cut.measured == "1 of 2 runs (1 runs recorded no finish_reason)"
    histogram = stats.histogram()
    assert len(histogram) == 10 and sum(b["runs"] for b in histogram) == 3
    assert histogram[9]["runs"] == 2 and histogram[4]["runs"] == 1
    summary = stats.to_json()
    assert summary["p10"] == pytest.approx(0.5) and summary["median"] == 0.9


def test_run_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    assert suite_run_id("pr 12/attempt#1") == "pr-12-attempt-1"
    with pytest.raises(SpecError, match="--run-id"):
        suite_run_id("///")
    for name in ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "BUILDKITE_BUILD_ID", "CIRCLE_WORKFLOW_ID"):
        monkeypatch.delenv(name, raising=False)
    assert default_run_id("mod:f", "agent") is None  # outside CI: a fresh id per run
    monkeypatch.setenv("GITHUB_RUN_ID", "987")
    first = default_run_id("mod:f", "agent")
    assert first is not None and first.startswith("987-")
    assert default_run_id("mod:f", "agent") == first  # a retried job: the same id
    assert default_run_id("mod:g", "agent") != first  # another candidate in the same pipeline


def test_markdown_summary_escapes_answers() -> None:
    case = Case.model_validate({"case_id": "c1", "inputs": ["q"]})
    report = SuiteReport("s1", 1)
    case_report = CaseReport("c1", "c1.json", source_answer="a | b")
    run = check(case, _events("<script>x</script> | `y`", "stop"), embed=None)
    run.extra["similarity"] = 0.3
    case_report.add(run)
    report.cases.append(case_report)
    text = markdown_summary(report)
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "a \\| b" in text and "\\`y\\`" in text
    assert "| c1 | 1 | 0.300 | stop |" in text


def test_the_offline_model_leaves_the_hosts_logging_alone() -> None:
    """The offline model's package configures the root logger when imported; the host's
    logging must look the same before and after similarity is computed with it (a fresh
    interpreter: pytest's own handlers on the root logger would hide the change)."""
    program = (
        "import logging\n"
        "from agentledger.cases import local_embedder\n"
        "embed = local_embedder()\n"
        "vectors = embed(['the refund is done', 'the refund is done'])\n"
        "root = logging.getLogger()\n"
        "print(len(vectors[0]), vectors[0] == vectors[1], len(root.handlers), root.level)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["256", "True", "0", str(logging.WARNING)], done.stderr


@pytest.mark.parametrize(
    ("answer", "declines"),
    [
        ("I'm sorry, but I can't help with that.", True),
        ("I\u2019m sorry, but I cannot share account details.", True),
        ("As an AI language model, I cannot give legal advice.", True),
        ("I am unable to assist with this request.", True),
        ("I refunded the duplicate charge. Sorry for the trouble!", False),
        ("I can help: your order ships today.", False),
        ("We can't refund twice, but I issued one refund re_1.", False),
    ],
)
def test_refusal_heuristic(answer: str, declines: bool) -> None:
    assert looks_like_refusal(answer) is declines


def test_the_refusal_gate_fails_closed_without_answers() -> None:
    (gate,) = evaluate_gates(GateOptions(max_refusal_rate=0.1), None, [None], [None])
    assert not gate.passed and gate.measured.startswith("cannot compute")
    (gate,) = evaluate_gates(GateOptions(max_refusal_rate=0.5), None, [], [True, False, None])
    assert gate.passed and gate.measured == "50% (1 of 2 answers)"
