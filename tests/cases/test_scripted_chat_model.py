"""The one scripted chat model of the tests, examples and demo, driving a real agent graph."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool

from agentledger.testing import ScriptedChatModel
from agentledger.testing.chat_models import ScriptExhaustedError

pytestmark = pytest.mark.langchain


@tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: paid"


def test_replies_drive_tool_calls_and_report_usage() -> None:
    model = ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "lookup", "args": {"order_id": "A1"}, "id": "c1"}]),
            "Order A1 is paid.",
        ]
    )
    result = create_agent(model, [lookup]).invoke({"messages": [("user", "status of A1?")]})
    messages = result["messages"]
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert messages[2].text == "order A1: paid"
    assert messages[-1].text == "Order A1 is paid."
    usage = messages[-1].usage_metadata
    assert usage is not None and usage["input_tokens"] > usage["input_token_details"]["cache_read"]
    with pytest.raises(ScriptExhaustedError):
        model.invoke("once more")


def test_respond_reads_the_conversation() -> None:
    def respond(messages: Sequence[BaseMessage]) -> AIMessage | str:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        if not seen:
            return AIMessage(
                "", tool_calls=[{"name": "lookup", "args": {"order_id": "B2"}, "id": "x"}]
            )
        return f"done after {seen[-1].text}"

    model = ScriptedChatModel(model_name="policy-v1", respond=respond)
    result = create_agent(model, [lookup]).invoke({"messages": [("user", "B2?")]})
    assert result["messages"][-1].text == "done after order B2: paid"
    assert result["messages"][-1].response_metadata["model_name"] == "policy-v1"
    with pytest.raises(ValueError, match="not both"):
        ScriptedChatModel(replies=["x"], respond=respond).invoke("hi")
