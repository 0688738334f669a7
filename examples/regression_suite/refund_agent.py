"""Candidate refund agents: ``factory(tools) -> create_agent graph`` (offline scripted model).

* :func:`build_agent`: looks the order up, verifies the duplicate charge, refunds, answers
  (the agent that ran in production);
* :func:`build_agent_skipping_verify`: a "new prompt" that refunds without verifying;
* :func:`build_flaky_agent`: skips the verification on every third build.

The scripted model stands in for an LLM (``shared/docs/frameworks.md``, fake-model recipe):
it reads the tool results already in the conversation and asks for the next tool.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool

__all__ = ["RefundModel", "build_agent", "build_agent_skipping_verify", "build_flaky_agent"]

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


class RefundModel(GenericFakeChatModel):
    """Scripted model: lookup_order -> verify_charge (unless ``verify`` is off) ->
    issue_refund -> answer. Reports token usage like a provider."""

    messages: Iterator[AIMessage | str] = iter(())
    verify: bool = True

    @property
    def _llm_type(self) -> str:
        return "scripted-refund-v1"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RefundModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._next(messages)
        prompt = sum(max(1, len(m.text) // 4) for m in messages)
        out = max(1, len(reply.text) // 4) + 8 * len(reply.tool_calls)
        reply.usage_metadata = {
            "input_tokens": prompt,
            "output_tokens": out,
            "total_tokens": prompt + out,
        }
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _next(self, messages: Sequence[BaseMessage]) -> AIMessage:
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
        if self.verify:
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


def build_agent(tools: list[BaseTool]) -> Any:
    """The production agent."""
    return create_agent(RefundModel(), tools, system_prompt=PROMPT, name="refund_agent")


def build_agent_skipping_verify(tools: list[BaseTool]) -> Any:
    """A candidate whose new prompt makes it refund without ``verify_charge``."""
    return create_agent(
        RefundModel(verify=False), tools, system_prompt=PROMPT_FAST, name="refund_agent"
    )


_builds = itertools.count()


def build_flaky_agent(tools: list[BaseTool]) -> Any:
    """Skips ``verify_charge`` on every third build (builds 3, 6, ...)."""
    verify = next(_builds) % 3 != 2
    return create_agent(
        RefundModel(verify=verify), tools, system_prompt=PROMPT, name="refund_agent"
    )
