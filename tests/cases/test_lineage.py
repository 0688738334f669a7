"""Cases know what each step affected, from the source session's causal edges; a divergent run
names what in the source was computed from the changed step and what in the run was.

Source sessions are logged to a real server the way the causal-edge rules describe a LangChain
agent run (``docs/pages/causal-edges.md``): the graph and node steps are scopes, never causes,
so the answer is reachable from the user message only through causes.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from rich.console import Console

from agentledger.cases import (
    SCHEMA_VERSION,
    Divergence,
    RunTarget,
    load_case,
    load_cases,
    print_summary,
    run_suite,
    write_junit,
)
from agentledger.cases._divergence import divergence_lines
from agentledger.cases._lineage import run_effects
from agentledger.client import EventRef, Ledger
from agentledger.client import vocabulary as v
from agentledger.protocol.vocabulary import EDGE_PRODUCED, EDGE_READ, EDGE_REQUESTED
from agentledger.testing import ScriptedChatModel

from .conftest import cli

pytestmark = pytest.mark.langchain

QUESTION = "Who placed order A1?"
ANSWER = "Order A1 belongs to a gold customer."


@tool
def find_order(order_id: str) -> str:
    """Find an order (never runs in a case run: the stubs answer)."""
    raise AssertionError("the real tool ran")


@tool
def get_customer(customer_id: str) -> str:
    """Read a customer record (never runs in a case run: the stubs answer)."""
    raise AssertionError("the real tool ran")


TOOLS: list[BaseTool] = [find_order, get_customer]


@dataclass
class Run:
    """Logs one agent run by the causal-edge rules; keeps the ids it made."""

    ledger: Ledger
    session: str
    ids: dict[str, EventRef] = field(default_factory=dict)

    def log(self, name: str, event: str, data: dict[str, Any], **links: Any) -> EventRef:
        ref = self.ledger.log(event, data, session_id=self.session, **links)
        self.ids[name] = ref
        return ref

    def model_call(self, name: str, scope: EventRef, inputs: Sequence[EventRef]) -> EventRef:
        """llm_start reading ``inputs`` (its parent the newest), then its llm_end."""
        start = self.log(
            f"{name}_start",
            v.LLM_START,
            {"model": "scripted", "messages": []},
            parent_id=inputs[-1],
            caused_by=[(i, EDGE_READ) for i in inputs],
            scope_id=scope,
        )
        usage = {"input_tokens": 100, "output_tokens": 10}
        return self.log(
            f"{name}_end", v.LLM_END, {"text": "", "token_usage": usage}, parent_id=start
        )

    def tool_step(
        self,
        name: str,
        asked_by: EventRef,
        scope: EventRef,
        tool: str,
        args: dict[str, Any],
        result: Any,
    ) -> EventRef:
        """tool_call requested by ``asked_by`` and its tool_result; returns the result."""
        call = self.log(
            name,
            v.TOOL_CALL,
            {"tool": tool, "args": args, "call_id": name},
            parent_id=asked_by,
            caused_by=[(asked_by, EDGE_REQUESTED)],
            scope_id=scope,
        )
        data = {"tool": tool, "call_id": name, "result": result}
        return self.log(f"{name}_result", v.TOOL_RESULT, data, parent_id=call, scope_id=scope)

    def answer(self, produced_by: EventRef, scope: EventRef, text: str = ANSWER) -> EventRef:
        return self.log(
            "answer",
            v.ASSISTANT_RESPONSE,
            {"text": text},
            parent_id=produced_by,
            caused_by=[(produced_by, EDGE_PRODUCED)],
            scope_id=scope,
        )


def log_chained_session(ledger: Ledger, session: str) -> Run:
    """find_order, then get_customer with the customer id find_order returned, then the answer."""
    run = Run(ledger, session)
    user = run.log("user", v.USER_MESSAGE, {"text": QUESTION})
    graph = run.log("graph", v.STEP_START, {"name": "agent", "kind": "graph"}, parent_id=user)
    node = run.log("node", v.STEP_START, {"name": "model", "kind": "node"}, parent_id=graph)
    first = run.model_call("m1", node, [user])
    found = run.tool_step(
        "c1", first, node, "find_order", {"order_id": "A1"}, {"customer_id": "k7"}
    )
    second = run.model_call("m2", node, [found])
    read = run.tool_step(
        "c2", second, node, "get_customer", {"customer_id": "k7"}, {"tier": "gold"}
    )
    last = run.model_call("m3", node, [read])
    run.answer(last, node)
    run.log("graph_end", v.STEP_END, {"name": "agent", "kind": "graph"}, parent_id=graph)
    assert ledger.flush(10).complete
    return run


def log_parallel_session(ledger: Ledger, session: str) -> Run:
    """One model call asks for both tools at once; the answer reads both results."""
    run = Run(ledger, session)
    user = run.log("user", v.USER_MESSAGE, {"text": QUESTION})
    node = run.log("node", v.STEP_START, {"name": "model", "kind": "node"}, parent_id=user)
    first = run.model_call("m1", node, [user])
    a = run.tool_step("c1", first, node, "find_order", {"order_id": "A1"}, {"customer_id": "k7"})
    b = run.tool_step("c2", first, node, "get_customer", {"customer_id": "k7"}, {"tier": "gold"})
    last = run.model_call("m2", node, [a, b])
    run.answer(last, node)
    assert ledger.flush(10).complete
    return run


def export(server: Any, agent: str, session: str, out: Path) -> Any:
    return cli(
        "cases",
        "export",
        "--url",
        server.url,
        "--api-key",
        server.api_key,
        "--agent",
        agent,
        "--session",
        session,
        "--out",
        out,
    )


@pytest.fixture
def source(ledger_server: Any, agent_name: str) -> Ledger:
    with Ledger(
        ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None, redact=False
    ) as ledger:
        yield ledger


def test_export_records_what_each_step_affected_through_causes_not_scope(
    ledger_server: Any, agent_name: str, source: Ledger, tmp_path: Path
) -> None:
    log_chained_session(source, "chained")
    result = export(ledger_server, agent_name, "chained", tmp_path / "cases")
    assert result.exit_code == 0, result.output
    case = load_case(next((tmp_path / "cases").glob("*.json")))
    assert case.schema_version == SCHEMA_VERSION and case.inputs == [QUESTION]
    assert case.source_answer == ANSWER
    assert case.source_path() == [
        ("find_order", {"order_id": "A1"}),
        ("get_customer", {"customer_id": "k7"}),
    ]
    assert case.tool_stubs["get_customer"][0].result == {"tier": "gold"}
    assert case.lineage is not None and case.lineage.answer_from_input
    first, second = case.lineage.steps
    assert (first.step, first.steps, first.answer) == (0, [1], True)
    assert (second.step, second.steps, second.answer) == (1, [], True)


def test_calls_asked_for_together_do_not_descend_from_each_other(
    ledger_server: Any, agent_name: str, source: Ledger, tmp_path: Path
) -> None:
    log_parallel_session(source, "parallel")
    result = export(ledger_server, agent_name, "parallel", tmp_path / "cases")
    assert result.exit_code == 0, result.output
    case = load_case(next((tmp_path / "cases").glob("*.json")))
    assert case.lineage is not None and case.lineage.answer_from_input
    assert [(s.steps, s.answer) for s in case.lineage.steps] == [([], True), ([], True)]


def test_a_session_without_a_user_message_is_reported_and_not_written(
    ledger_server: Any, agent_name: str, source: Ledger, tmp_path: Path
) -> None:
    run = Run(source, "no-user")
    node = run.log("node", v.STEP_START, {"name": "cron", "kind": "node"})
    run.tool_step("c1", node, node, "find_order", {"order_id": "A1"}, {"customer_id": "k7"})
    assert source.flush(10).complete
    out = tmp_path / "cases"
    result = export(ledger_server, agent_name, "no-user", out)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "no-user" in text and "has no user_message event" in text
    assert "no input to replay" in text and "step_start, tool_call, tool_result" in text
    assert not out.exists() or not list(out.glob("*.json"))


def candidate(order_id: str) -> Any:
    """A factory: find_order(order_id) -> get_customer(the id it read, else k7) -> answer."""

    def respond(messages: Sequence[BaseMessage]) -> AIMessage | str:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            return AIMessage(
                "", tool_calls=[{"name": "find_order", "args": {"order_id": order_id}, "id": "t1"}]
            )
        if len(results) == 1:
            try:
                customer = json.loads(results[0].text)["customer_id"]
            except (ValueError, KeyError, TypeError):
                customer = "k7"
            return AIMessage(
                "",
                tool_calls=[
                    {"name": "get_customer", "args": {"customer_id": customer}, "id": "t2"}
                ],
            )
        return f"Order {order_id} belongs to a gold customer."

    def build(tools: list[BaseTool]) -> Any:
        return create_agent(ScriptedChatModel(model_name="scripted", respond=respond), tools)

    return build


def test_a_changed_first_call_names_step_0_and_what_was_computed_from_it(
    ledger_server: Any, agent_name: str, source: Ledger, tmp_path: Path
) -> None:
    log_chained_session(source, "chained")
    out = tmp_path / "cases"
    assert export(ledger_server, agent_name, "chained", out).exit_code == 0
    target = RunTarget(source, ledger_server.url)

    same = run_suite(load_cases(out), factory=candidate("A1"), tools=TOOLS, target=target)
    assert same.gate_passed, same.cases[0].failure_message()
    assert same.cases[0].first_divergence is None

    changed = run_suite(load_cases(out), factory=candidate("A2"), tools=TOOLS, target=target)
    (case,) = changed.cases
    assert not changed.gate_passed
    found = case.first_divergence
    assert found is not None
    div = found[1]
    assert div.step == 0
    assert div.expected == "find_order(order_id=A1)" and div.actual == "find_order(order_id=A2)"
    assert div.at_risk is not None and div.at_risk_complete
    assert [(e.event, e.step, e.text) for e in div.at_risk] == [
        (v.TOOL_CALL, 1, "get_customer(customer_id=k7)"),
        (v.ASSISTANT_RESPONSE, None, "final answer"),
    ]
    # the run's side: what impact() of its changed call holds, in the run's own session
    assert div.run_effects is not None and div.event_id is not None
    session = case.runs[0].extra["session_id"]
    run_events = {e.event_id: e for e in source.replay(session, limit=1000)}
    assert run_events[div.event_id].event == v.TOOL_CALL
    assert run_events[div.event_id].data["args"] == {"order_id": "A2"}
    impact = source.impact(div.event_id)
    assert [e.event_id for e in div.run_effects] == [e.event_id for e in impact.events]
    closing = [e for e in div.run_effects if e.event in (v.TOOL_RESULT, v.TOOL_ERROR)]
    assert closing and run_events[closing[0].event_id].parent_id == div.event_id

    text = case.failure_message()
    assert "first divergent step 0 (run 1): expected find_order(order_id=A1); " in text
    assert "; actual find_order(order_id=A2)" in text
    at_risk = "step 1 get_customer(customer_id=k7), final answer"
    assert f"at risk in the source session (computed from step 0): {at_risk}" in text
    assert "computed from it in run 1: " in text

    document = case.to_json()["first_divergence"]
    assert document["step"] == 0 and document["at_risk_complete"] is True
    assert document["at_risk"] == [
        {"event": v.TOOL_CALL, "text": "get_customer(customer_id=k7)", "step": 1},
        {"event": v.ASSISTANT_RESPONSE, "text": "final answer", "step": None},
    ]
    assert [e["event_id"] for e in document["run_effects"]] == [e.event_id for e in impact.events]
    assert json.loads(json.dumps(changed.to_json()))["cases"][0]["first_divergence"] == document

    console = Console(record=True, width=400)
    print_summary(changed, console)
    assert (
        f"step 0: expected find_order(order_id=A1), got find_order(order_id=A2); at risk: {at_risk}"
        in console.export_text()
    )

    junit = ET.parse(write_junit(changed, tmp_path / "junit.xml")).getroot()
    failure = junit.find("testcase/failure")
    assert failure is not None
    message = failure.get("message") or ""
    assert "first divergent step 0" in message
    assert f"at risk: {at_risk}" in message
    assert "at risk in the source session" in (failure.text or "")


def test_the_run_side_lists_every_event_computed_from_the_divergent_call(
    source: Ledger,
) -> None:
    run = log_chained_session(source, "as-run")
    events = source.replay("as-run", limit=1000)
    effects = run_effects(source, events, run.ids["c1"].event_id)
    assert effects is not None
    named = [
        (e.event, e.step, e.text) for e in effects if e.event in (v.TOOL_CALL, v.ASSISTANT_RESPONSE)
    ]
    assert named == [
        (v.TOOL_CALL, 1, "get_customer(customer_id=k7)"),
        (v.ASSISTANT_RESPONSE, None, "final answer"),
    ]
    ids = {e.event_id for e in effects}
    assert run.ids["c1_result"].event_id in ids and run.ids["m3_end"].event_id in ids
    not_effects = ("graph", "node", "graph_end", "user", "m1_start")  # scopes, and causes
    assert not {run.ids[name].event_id for name in not_effects} & ids
    shown = divergence_lines(1, Divergence(0, "a", "b", at_risk=(), run_effects=effects))[-1]
    assert shown == (  # as docs/pages/regression-cases.md shows it
        "    computed from it in run 1: step 1 get_customer(customer_id=k7), final answer, "
        "6 other events (tool_result, llm_start, llm_end)"
    )
