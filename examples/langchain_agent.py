"""A LangChain tool-calling agent logged to agentledger, then asked why() it answered.

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/langchain_agent.py

``AGENTLEDGER_URL`` (default ``http://127.0.0.1:8765``) and ``AGENTLEDGER_AGENT`` are read
too. The chat model is an offline fake that asks for two tools at once (they run in parallel
threads), so the example needs no API key.
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from agentledger.client import Ledger
from agentledger.integrations.langchain import instrument
from agentledger.testing.chat_models import ScriptedChatModel


@tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return {"Paris": "sunny, 21 °C", "Oslo": "rain, 9 °C"}.get(city, "unknown")


@tool
def get_train(origin: str, destination: str) -> str:
    """Next direct train between two cities."""
    return f"{origin} -> {destination}: 08:12, 6 h 40 min"


def main() -> None:
    model = ScriptedChatModel(
        replies=(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "get_weather", "args": {"city": "Oslo"}, "id": "w1"},
                        {
                            "name": "get_train",
                            "args": {"origin": "Paris", "destination": "Oslo"},
                            "id": "t1",
                        },
                    ],
                    usage_metadata={"input_tokens": 40, "output_tokens": 12, "total_tokens": 52},
                ),
                AIMessage(
                    "Take the 08:12 train; pack a raincoat, Oslo has rain at 9 °C.",
                    usage_metadata={"input_tokens": 80, "output_tokens": 16, "total_tokens": 96},
                ),
            ]
        )
    )
    agent = create_agent(model, [get_weather, get_train], name="travel_agent")

    with Ledger(agent=os.environ.get("AGENTLEDGER_AGENT", "travel-example")) as ledger:
        logged = instrument(agent, ledger)  # the same graph, with the ledger's callback handler
        result = logged.invoke(
            {"messages": [{"role": "user", "content": "Paris to Oslo tomorrow: what to pack?"}]}
        )
        print("answer:", result["messages"][-1].text)
        ledger.flush(timeout_s=10)

        (answer,) = ledger.list_events(event_type="assistant_response", limit=1)
        why = ledger.why(answer.event_id, depth=50)
        print(f"why() of the answer, root first ({why.chain_length} events):")
        for depth, event in enumerate(why.chain):
            label = event.data.get("name") or event.data.get("model") or event.data.get("text")
            print(f"{'  ' * depth}{event.event} {label}")
        tool_calls = ledger.list_events(event_type="tool_call", session_id=answer.session_id)
        print("tools called:", sorted(e.data["tool"] for e in tool_calls))


if __name__ == "__main__":
    main()
