"""Candidate refund agents: ``factory(tools) -> create_agent graph`` (offline scripted model).

* :func:`build_agent`: looks the order up, verifies the duplicate charge, refunds, answers
  (the agent that ran in production);
* :func:`build_agent_skipping_verify`: a "new prompt" that refunds without verifying;
* :func:`build_flaky_agent`: skips the verification on every third build.

The model is agentledger's offline :class:`~agentledger.testing.ScriptedChatModel` standing
in for an LLM: :func:`next_refund_step` reads the tool results already in the conversation and
asks for the next tool.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from agentledger.testing import ScriptedChatModel

__all__ = [
    "build_agent",
    "build_agent_skipping_verify",
    "build_flaky_agent",
    "next_refund_step",
    "refund_model",
]

PROMPT = (
    "You are a payments support agent. Look the order up, verify a reported duplicate charge "
    "before refunding anything, refund only the duplicate, then answer briefly."
)
PROMPT_FAST = "You are a payments support agent. Refund reported duplicate charges quickly."


def _results(messages: Sequence[BaseMessage]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for m in messages:
        if isinstance(m, ToolMessage) and m.name:
            try:
                value = json.loads(m.text)
            except ValueError:
                value = {"error": m.text}
            found[m.name] = value if isinstance(value, dict) else {"value": value}
    return found


def next_refund_step(messages: Sequence[BaseMessage], *, verify: bool = True) -> AIMessage:
    """lookup_order -> verify_charge (unless ``verify`` is off) -> issue_refund -> answer."""
    question = next((m.text for m in messages if isinstance(m, HumanMessage)), "")
    found = re.search(r"\b[A-Z]\d{4}\b", question)
    order_id = found.group(0) if found else "A1234"
    done = _results(messages)
    step = sum(1 for m in messages if isinstance(m, AIMessage)) + 1

    def call(name: str, **args: Any) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{step}"}])

    if "lookup_order" not in done:
        return call("lookup_order", order_id=order_id)
    order = done["lookup_order"]
    if "error" in order:
        return AIMessage(f"I could not find order {order_id}.")
    charges = order.get("charges") or [{}]
    check = {"duplicate": True, "duplicate_charges": [charges[-1].get("charge_id")]}
    if verify:
        if "verify_charge" not in done:
            return call("verify_charge", order_id=order_id)
        check = done["verify_charge"]
        if not check.get("duplicate"):
            return AIMessage(f"Order {order_id} was charged once; no refund is due.")
    if "issue_refund" not in done:
        return call(
            "issue_refund",
            order_id=order_id,
            charge_id=check["duplicate_charges"][0],
            amount=order.get("amount"),
            reason="duplicate charge",
        )
    refund = done["issue_refund"]
    return AIMessage(
        f"{order.get('customer', 'Hello')}, you were charged twice for order {order_id}. "
        f"I refunded the duplicate charge {refund.get('charge_id')} "
        f"(refund {refund.get('refund_id')}); it shows within 5 business days."
    )


def refund_model(verify: bool = True) -> ScriptedChatModel:
    """The scripted model; it reports token usage like a provider."""
    return ScriptedChatModel(
        model_name="scripted-refund-v1", respond=functools.partial(next_refund_step, verify=verify)
    )


def build_agent(tools: list[BaseTool], system_prompt: str = PROMPT) -> Any:
    """The production agent; ``cases run --system-prompt FILE`` hands a candidate prompt in.
    The scripted model stands in for a real one: it verifies the charge only when the prompt
    asks it to."""
    verify = "verify" in system_prompt.lower()
    return create_agent(
        refund_model(verify=verify), tools, system_prompt=system_prompt, name="refund_agent"
    )


def build_agent_skipping_verify(tools: list[BaseTool]) -> Any:
    """A candidate whose new prompt makes it refund without ``verify_charge``."""
    return create_agent(
        refund_model(verify=False), tools, system_prompt=PROMPT_FAST, name="refund_agent"
    )


_builds = itertools.count()


def build_flaky_agent(tools: list[BaseTool]) -> Any:
    """Skips ``verify_charge`` on every third build (builds 3, 6, ...)."""
    verify = next(_builds) % 3 != 2
    return create_agent(
        refund_model(verify=verify), tools, system_prompt=PROMPT, name="refund_agent"
    )
