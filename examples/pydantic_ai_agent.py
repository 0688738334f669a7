"""A Pydantic AI agent with one tool, logged to agentledger, and why() of its answer.

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/pydantic_ai_agent.py

The model is Pydantic AI's ``FunctionModel`` scripted offline: first a tool call, then the
answer. ``LedgerCapability`` records the run; ``why()`` walks from the answer back to the
user's message through the tool result it was computed from.
"""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentledger.client import Ledger
from agentledger.integrations.pydantic_ai import LedgerCapability


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("get_train", {"city": "Lyon"}, tool_call_id="t1")])
    return ModelResponse(parts=[TextPart("Take the 08:12 train to Lyon.")])


def main() -> None:
    ledger = Ledger(agent=os.environ.get("AGENTLEDGER_AGENT", "pydantic-ai-example"))
    agent = Agent(
        FunctionModel(scripted),
        name="travel",
        instructions="You plan trips.",
        capabilities=[LedgerCapability(ledger, session_id="trip-1")],
    )

    @agent.tool_plain
    def get_train(city: str) -> str:
        """The next train to a city."""
        return f"08:12 to {city}"

    print("answer:", agent.run_sync("When is the next train to Lyon?").output)
    ledger.flush(timeout_s=10.0)
    answer = [e for e in ledger.replay("trip-1") if e.event == "assistant_response"][-1]
    print("why:", " <- ".join(e.event for e in reversed(ledger.why(answer.event_id).chain)))
    ledger.close()


if __name__ == "__main__":
    main()
