"""Cases know what each step affected, from the source session's causal edges.

Source sessions are logged to a real server the way the causal-edge rules describe a LangChain
agent run (``docs/pages/causal-edges.md``): the graph and node steps are scopes, never causes,
so the answer is reachable from the user message only through causes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool

from agentledger.cases import load_case
from agentledger.client import EventRef, Ledger
from agentledger.client import vocabulary as v
from agentledger.protocol.vocabulary import EDGE_PRODUCED, EDGE_READ, EDGE_REQUESTED

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
    assert case.schema_version == 2 and case.inputs == [QUESTION]
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
