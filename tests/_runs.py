"""An agent run logged as the lineage contract says an integration logs it, shared by the suites
of the surfaces that show ``why()``/``impact()`` (CLI, dashboard, MCP tools).

A user asks; the model requests two tools in one answer (``lookup_order``, ``verify_charge``);
the second model call reads both results and produces the answer. Every event runs inside a
graph step and a node step (``scope_id``), which are causes of nothing but their own closings.
"""

from __future__ import annotations

from typing import Any

from agentledger.client import Ledger
from agentledger.client import vocabulary as v

#: Roles of the events ``why(answer)`` must hold, and of those it must not.
WHY_ANSWER = (
    "user",
    "llm1",
    "llm1_end",
    "call_a",
    "call_b",
    "result_a",
    "result_b",
    "llm2",
    "llm2_end",
    "answer",
)
NOT_CAUSES_OF_ANSWER = ("graph", "node1", "node2", "node1_end")

#: Strings in the tool results and the user's message (to find them on a page).
LOOKUP_RESULT = "order A-1001 charged twice"
VERIFY_RESULT = "charge ch_2 is a duplicate"
USER_TEXT = "I was charged twice for order A-1001"


def log_two_tool_run(ledger: Ledger, session_id: str) -> dict[str, str]:
    """Log the run under ``ledger``'s agent in ``session_id`` and wait until it is stored.

    Returns:
        ``{role: event_id}``.
    """
    ids: dict[str, str] = {}

    def log(role: str, event: str, data: dict[str, Any], parent: str | None, **more: Any) -> str:
        ref = ledger.log(event, data, session_id=session_id, parent_id=parent, **more)
        ids[role] = ref.event_id
        return ref.event_id

    user = log("user", v.USER_MESSAGE, {"text": USER_TEXT}, None)
    graph = log("graph", v.STEP_START, {"name": "support", "kind": "graph"}, user)
    node1 = log("node1", v.STEP_START, {"name": "model", "kind": "graph_node"}, graph)
    llm1 = log(
        "llm1",
        v.LLM_START,
        {"model": "scripted", "messages": [{"role": "user", "content": USER_TEXT}]},
        user,
        caused_by=[(user, "read")],
        scope_id=node1,
    )
    calls = [
        {"name": "lookup_order", "args": {"order_id": "A-1001"}, "id": "c1"},
        {"name": "verify_charge", "args": {"charge_id": "ch_2"}, "id": "c2"},
    ]
    said = log("llm1_end", v.LLM_END, {"text": "", "tool_calls": calls}, llm1, scope_id=node1)
    log("node1_end", v.STEP_END, {"name": "model", "kind": "graph_node"}, node1)
    for suffix, tool, args, result in (
        ("a", "lookup_order", {"order_id": "A-1001"}, LOOKUP_RESULT),
        ("b", "verify_charge", {"charge_id": "ch_2"}, VERIFY_RESULT),
    ):
        call = log(
            f"call_{suffix}",
            v.TOOL_CALL,
            {"tool": tool, "args": args},
            said,
            caused_by=[(said, "requested")],
            scope_id=graph,
        )
        log(f"result_{suffix}", v.TOOL_RESULT, {"tool": tool, "result": result}, call)
    node2 = log("node2", v.STEP_START, {"name": "model", "kind": "graph_node"}, graph)
    llm2 = log(
        "llm2",
        v.LLM_START,
        {"model": "scripted", "messages": []},
        ids["result_b"],
        caused_by=[(ids["result_a"], "read"), (ids["result_b"], "read")],
        scope_id=node2,
    )
    done = log("llm2_end", v.LLM_END, {"text": "Refund issued."}, llm2, scope_id=node2)
    log(
        "answer",
        v.ASSISTANT_RESPONSE,
        {"text": "Refund issued for the duplicate charge."},
        done,
        caused_by=[(done, "produced")],
        scope_id=node2,
    )
    assert ledger.flush(timeout_s=20).complete
    return ids
