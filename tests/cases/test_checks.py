"""``check(case, events)``: the framework-neutral checks, on CrewAI-shaped and plain events."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pytest

from agentledger.cases import Case, CaseReport, build_case, check
from agentledger.client import Event
from agentledger.client import vocabulary as v

pytestmark = pytest.mark.langchain


def crew_session(tools: list[tuple[str, dict[str, Any], str]], answer: str) -> list[Event]:
    """Events as ``LedgerCrewListener`` writes them (shared vocabulary, CrewAI kinds)."""
    events: list[Event] = []

    def add(event: str, data: dict[str, Any], parent: str | None) -> str:
        event_id = f"e{len(events)}"
        stamp = f"2026-11-29T10:00:{len(events):02d}+00:00"
        events.append(
            Event(
                event_id, "crew", event, data, stamp, "crew-s1", parent, sequence_no=len(events) + 1
            )
        )
        return event_id

    crew = add(v.STEP_START, {"name": "support crew", "kind": "crew"}, None)
    add(
        v.USER_MESSAGE,
        {"text": "Customer Ana Ruiz (ana@example.com) reports a double charge on order B7777."},
        crew,
    )
    task = add(v.STEP_START, {"name": "resolve ticket", "kind": "task"}, crew)
    for name, args, result in tools:
        start = add(v.LLM_START, {"model": "gpt-4o-mini", "messages": []}, task)
        add(
            v.LLM_END,
            {
                "text": "",
                "token_usage": {
                    "input_tokens": 1200,
                    "cache_read_tokens": 1000,
                    "output_tokens": 40,
                },
            },
            start,
        )
        call = add(v.TOOL_CALL, {"tool": name, "args": args, "agent_role": "Support"}, task)
        add(v.TOOL_RESULT, {"tool": name, "result": result, "status": "ok"}, call)
    add(v.ASSISTANT_RESPONSE, {"text": answer}, task)
    add(v.STEP_END, {"name": "support crew", "kind": "crew"}, crew)
    return events


SOURCE_TOOLS = [
    ("find_order", {"order_id": "B7777"}, '{"customer": "Ana Ruiz", "amount": 20}'),
    ("check_charges", {"order_id": "B7777"}, '{"duplicate": true}'),
    ("refund", {"order_id": "B7777", "amount": 20}, '{"refund_id": "re_9"}'),
]


@pytest.fixture
def crew_case() -> Case:
    case = build_case(
        crew_session(SOURCE_TOOLS, "Refunded re_9 to you, Ana."), agent="crew", session="crew-s1"
    )
    case.expect.must_not_call = (
        type(case.expect).model_validate({"must_not_call": ["close_account"]}).must_not_call
    )
    return case


def test_crewai_case_passes_on_the_same_path_and_fails_on_another(crew_case: Case) -> None:
    assert crew_case.inputs[0].startswith("Customer Alex Morgan (user1@example.com)")
    assert [m.tool for m in crew_case.expect.must_call] == ["find_order", "check_charges", "refund"]
    good = check(crew_case, crew_session(SOURCE_TOOLS, "Refunded re_9."))
    assert good.passed, [c for c in good.checks if not c.passed]
    assert good.divergence is None
    assert {c.check_id for c in good.checks} >= {
        "must_call:check_charges",
        "must_call_in_order",
        "must_not_call",
        "max_tool_calls",
        "max_added_input_tokens",
        "stubs:no_unexpected_calls",
    }
    bad_tools = [
        SOURCE_TOOLS[0],
        ("refund", {"order_id": "B7777", "amount": 20}, "{}"),
        ("close_account", {"order_id": "B7777"}, "{}"),
    ]
    bad = check(crew_case, [dataclasses.asdict(e) for e in crew_session(bad_tools, "Done.")])
    failed = {c.check_id: c for c in bad.failures}
    assert set(failed) == {
        "must_call:check_charges",
        "must_call_in_order",
        "must_not_call",
        "stubs:no_unexpected_calls",
        "outcome[0]:similar_to",  # the export's default check: "Done." is unlike the source
    }
    assert failed["must_not_call"].actual == "called close_account"
    assert failed["must_call:check_charges"].min_pass_rate == 1.0  # safety default
    assert bad.divergence is not None and bad.divergence.step == 1
    assert bad.divergence.expected == "check_charges(order_id=B7777)"
    assert bad.path[-1] == "answer" and bad.path[1].startswith("refund(")


def test_a_session_logged_by_containment_says_its_at_risk_list_may_be_short(
    crew_case: Case,
) -> None:
    """The crew events above hang every event under its enclosing step: no causal path runs
    from the user message to the answer, and the report says so instead of "nothing"."""
    assert crew_case.lineage is not None and not crew_case.lineage.answer_from_input
    assert [s.steps for s in crew_case.lineage.steps] == [[], [], []]
    bad = check(crew_case, crew_session([SOURCE_TOOLS[0], SOURCE_TOOLS[2]], "Done."))
    assert bad.divergence is not None and bad.divergence.step == 1
    assert bad.divergence.at_risk == () and not bad.divergence.at_risk_complete
    report = CaseReport(crew_case.case_id, "crew.json")
    report.add(bad)
    text = report.failure_message()
    assert "(computed from step 1): nothing in the source session as far as" in text
    assert "some effects may be missing" in text
    old = check(crew_case.model_copy(update={"lineage": None}), crew_session([], "Done."))
    assert old.divergence is not None and old.divergence.at_risk is None
    report = CaseReport(crew_case.case_id, "crew.json")
    report.add(old)
    assert "at risk in the source session (computed from step 0): not known" in (
        report.failure_message()
    )


def test_added_input_tokens_ignore_cache_reads() -> None:
    case = Case.model_validate(
        {
            "case_id": "t",
            "inputs": ["x"],
            "expect": {"max_added_input_tokens": 600, "max_output_tokens": 119},
        }
    )
    events = crew_session(SOURCE_TOOLS, "ok")  # 3 calls x (1200 - 1000 cached), 3 x 40 out
    result = {c.check_id: c for c in check(case, events).checks}
    assert (
        result["max_added_input_tokens"].passed and result["max_added_input_tokens"].actual == "600"
    )
    assert not result["max_output_tokens"].passed and result["max_output_tokens"].actual == "120"
    unknown = [e for e in events if e.event != v.LLM_END] + [
        Event("u", "crew", v.LLM_END, {"text": "", "token_usage": None}, "", "s", None)
    ]
    # nothing measured: a ceiling cannot be said to hold, so it fails (never passes blind)
    note = {c.check_id: c for c in check(case, unknown).checks}["max_added_input_tokens"]
    assert note.passed is False and note.actual.startswith("not measured")
    assert "1 model calls with unknown usage" in note.actual
    # one call measured, one not: the measured part is checked and the gap is named
    unmeasured = Event("u2", "crew", v.LLM_END, {"text": "", "token_usage": None}, "", "s", None)
    mixed = [*events, unmeasured]
    note = {c.check_id: c for c in check(case, mixed).checks}["max_added_input_tokens"]
    assert note.passed and "1 model calls with unknown usage" in note.actual


def plain(answer: str, calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> list[dict[str, Any]]:
    events = [{"event": "user_message", "data": {"text": "q"}, "sequence_no": 1}]
    for i, (tool, args) in enumerate(calls):
        events.append(
            {"event": "tool_call", "data": {"tool": tool, "args": args}, "sequence_no": 2 + i}
        )
    events.append({"event": "assistant_response", "data": {"text": answer}, "sequence_no": 99})
    return events


def test_outcome_validators_and_arg_matchers() -> None:
    case = Case.model_validate(
        {
            "case_id": "o",
            "inputs": ["q"],
            "expect": {
                "outcome": [
                    {"contains": "REFUNDED", "ignore_case": True},
                    {"regex": r"re_\d+"},
                    {"not_contains": "card"},
                    {"json_path": "$.refund.items[0]['the id']", "equals": 7},
                    {"similar_to": "we refunded you", "threshold": 0.9},
                ],
                "must_call": [
                    {
                        "tool": "issue_refund",
                        "args": {
                            "amount": {"$approx": 49.9},
                            "reason": {"$regex": "^dup"},
                            "note": {"$contains": "twice"},
                            "charge_id": {"$any": True},
                        },
                    }
                ],
            },
        }
    )
    answer = json.dumps({"refund": {"items": [{"the id": 7}]}, "msg": "Refunded re_1"})
    args = {
        "amount": 49.90000001,
        "reason": "duplicate",
        "note": "charged twice",
        "charge_id": "ch_2",
    }
    ok = check(case, plain(answer, [("issue_refund", args)]), embed=None)
    by_id = {c.check_id: c for c in ok.checks}
    assert all(c.passed for k, c in by_id.items() if k != "outcome[4]:similar_to"), by_id
    assert by_id["outcome[4]:similar_to"].passed is None  # similarity turned off: not evaluated
    assert "turned off" in by_id["outcome[4]:similar_to"].actual
    assert ok.passed
    embedded = check(
        case, plain(answer, [("issue_refund", args)]), embed=lambda texts: [[1.0, 0.0], [0.0, 1.0]]
    )
    assert {c.check_id: c for c in embedded.checks}["outcome[4]:similar_to"].passed is False
    wrong = check(
        case, plain("card 4000", [("issue_refund", {**args, "reason": "goodwill"})]), embed=None
    )
    failed = {c.check_id: c for c in wrong.failures}
    assert set(failed) == {
        "outcome[0]:contains",
        "outcome[1]:regex",
        "outcome[2]:not_contains",
        "outcome[3]:json_path",
        "must_call:issue_refund",
    }
    assert "reason=goodwill" in failed["must_call:issue_refund"].actual
    assert failed["outcome[3]:json_path"].actual == "answer is not JSON"
    silent = check(case, [{"event": "user_message", "data": {"text": "q"}}])
    assert {c.actual for c in silent.failures} >= {"no assistant_response"}
