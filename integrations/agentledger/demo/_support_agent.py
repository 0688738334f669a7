"""The support-case agent behind ``agentledger demo``: a real LangChain ``create_agent`` graph.

A customer writes that order ``A1234`` was charged twice. The agent looks the order up,
verifies the duplicate charge, refunds it and answers. The tools are plain Python over an
in-memory order book; the model is either a :class:`~agentledger.testing.ScriptedChatModel`
answering through :func:`next_support_reply` (offline, deterministic) or any
OpenAI-compatible chat model (``langchain-openai``, imported only when asked for).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph.state import CompiledStateGraph

from agentledger.client import resolve_openai_model
from agentledger.testing.chat_models import ScriptedChatModel

__all__ = [
    "CUSTOMER_MESSAGE",
    "SCRIPTED_MODEL_NAME",
    "build_support_agent",
    "chat_model",
    "next_support_reply",
    "support_tools",
]

#: The customer's message that starts the demo session.
CUSTOMER_MESSAGE = "Hi, I was charged twice for my order A1234 (49.90 EUR). Can you fix it, please?"

#: Model id the scripted model reports (``llm_start.data.model``).
SCRIPTED_MODEL_NAME = "scripted-support-v1"

SYSTEM_PROMPT = (
    "You are a payments support agent. Look the order up, verify a reported duplicate charge "
    "before refunding anything, refund only the duplicate, then answer the customer briefly."
)

_ORDERS: dict[str, dict[str, Any]] = {
    "A1234": {
        "order_id": "A1234",
        "customer": "Dana Reyes",
        "amount": 49.90,
        "currency": "EUR",
        "charges": [
            {"charge_id": "ch_3Pq1", "amount": 49.90, "at": "2026-11-28T10:02:11Z"},
            {"charge_id": "ch_3Pq2", "amount": 49.90, "at": "2026-11-28T10:02:13Z"},
        ],
    }
}


def support_tools() -> list[BaseTool]:
    """The agent's three tools: ``lookup_order``, ``verify_duplicate_charge``,
    ``issue_refund``. Each returns a JSON string (a fresh in-memory order book per call)."""
    refunds: list[dict[str, Any]] = []

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by id: customer, amount and the card charges made for it."""
        order = _ORDERS.get(order_id.strip().upper())
        return json.dumps(order if order else {"error": f"no order {order_id}"})

    @tool
    def verify_duplicate_charge(order_id: str) -> str:
        """Check whether an order was charged more than once for the same amount."""
        order = _ORDERS.get(order_id.strip().upper())
        if not order:
            return json.dumps({"error": f"no order {order_id}"})
        charges = order["charges"]
        duplicate = len(charges) > 1 and len({c["amount"] for c in charges}) == 1
        return json.dumps(
            {
                "order_id": order["order_id"],
                "duplicate": duplicate,
                "kept_charge": charges[0]["charge_id"],
                "duplicate_charges": [c["charge_id"] for c in charges[1:]] if duplicate else [],
                "amount": order["amount"],
            }
        )

    @tool
    def issue_refund(order_id: str, charge_id: str, amount: float, reason: str) -> str:
        """Refund one card charge of an order. Only refund a verified duplicate."""
        refund = {
            "refund_id": f"re_{len(refunds) + 1:04d}",
            "order_id": order_id,
            "charge_id": charge_id,
            "amount": amount,
            "reason": reason,
            "status": "succeeded",
        }
        refunds.append(refund)
        return json.dumps(refund)

    return [lookup_order, verify_duplicate_charge, issue_refund]


def _tool_results(messages: Sequence[BaseMessage]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        if isinstance(message, ToolMessage) and message.name:
            try:
                value = json.loads(message.text)
            except ValueError:
                value = {"raw": message.text}
            results[message.name] = value if isinstance(value, dict) else {"value": value}
    return results


def next_support_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted model's part: the next tool (lookup -> verify -> refund) from the tool
    results already in the conversation, or the final answer from them."""
    question = next((m.text for m in messages if isinstance(m, HumanMessage)), "")
    found = re.search(r"\b[A-Z]\d{4}\b", question)
    order_id = found.group(0) if found else "A1234"
    done = _tool_results(messages)
    step = sum(1 for m in messages if isinstance(m, AIMessage)) + 1

    def call(name: str, **args: Any) -> AIMessage:
        return AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args, "id": f"call_{step}_{name}"}],
        )

    if "lookup_order" not in done:
        return call("lookup_order", order_id=order_id)
    order = done["lookup_order"]
    if "error" in order:
        return AIMessage(content=f"I could not find order {order_id}. Could you check it?")
    if "verify_duplicate_charge" not in done:
        return call("verify_duplicate_charge", order_id=order_id)
    check = done["verify_duplicate_charge"]
    if not check.get("duplicate"):
        return AIMessage(
            content=f"I checked order {order_id}: there is only one charge, so no refund "
            "is due. Your bank may show a pending authorization for a few days."
        )
    if "issue_refund" not in done:
        return call(
            "issue_refund",
            order_id=order_id,
            charge_id=check["duplicate_charges"][0],
            amount=check["amount"],
            reason="duplicate charge",
        )
    refund = done["issue_refund"]
    return AIMessage(
        content=(
            f"You were indeed charged twice for order {order_id}. I refunded the duplicate "
            f"charge {refund.get('charge_id')} of {float(refund.get('amount') or 0):.2f} "
            f"{order.get('currency', '')} (refund {refund.get('refund_id')}); it shows on "
            "your statement within 5 business days. Your other charge stays in place."
        )
    )


def chat_model(model: str | None) -> BaseChatModel:
    """The demo's chat model.

    Args:
        model: an OpenAI-compatible model id. ``None`` means: use ``OPENAI_MODEL`` when
            ``OPENAI_BASE_URL`` is set, else the offline scripted model.

    Raises:
        RuntimeError: a real model was asked for and ``langchain-openai`` is not installed or
            the model cannot be created (e.g. no ``OPENAI_API_KEY``).
    """
    model = resolve_openai_model(model)
    if model is None:
        return ScriptedChatModel(model_name=SCRIPTED_MODEL_NAME, respond=next_support_reply)
    try:
        from langchain_openai import ChatOpenAI  # type: ignore[import-not-found,unused-ignore]
    except ImportError as error:
        raise RuntimeError(
            "a real model needs langchain-openai: pip install langchain-openai "
            "(and set OPENAI_API_KEY, plus OPENAI_BASE_URL for a compatible server)"
        ) from error
    try:
        real: BaseChatModel = ChatOpenAI(model=model, temperature=0)
    except Exception as error:  # e.g. no OPENAI_API_KEY
        raise RuntimeError(f"cannot create model {model!r}: {error}") from error
    return real


def build_support_agent(model: BaseChatModel) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A ``langchain.agents.create_agent`` graph named ``support_agent`` with the three tools."""
    graph: CompiledStateGraph[Any, Any, Any, Any] = create_agent(
        model, support_tools(), system_prompt=SYSTEM_PROMPT, name="support_agent"
    )
    return graph
