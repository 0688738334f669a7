"""A LangGraph graph with three parallel branches and a human approval (interrupt / resume).

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/langgraph_graph.py

The graph fans out to three research branches that run in parallel threads, joins them in a
``review`` node that calls ``interrupt()`` to ask a human, and is resumed with
``Command(resume=...)``. Both runs use ``thread_id`` ``"article-7"``, so the handler files them
under one session; the interrupt is logged as ``interrupted``, not as an error.
"""

from __future__ import annotations

import operator
import os
import uuid
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler


class Article(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    verdict: str


def build_graph() -> Any:
    model = FakeListChatModel(responses=["a finding"])  # offline; cycles through responses

    def research(angle: str) -> Any:
        def node(state: Article) -> dict[str, Any]:
            reply = model.invoke(f"Research {state['topic']} from the {angle} angle.")
            return {"notes": [f"{angle}: {reply.text}"]}

        return node

    def review(state: Article) -> dict[str, Any]:
        answer = interrupt({"question": "Publish this?", "notes": state["notes"]})
        return {"verdict": f"published ({answer})"}

    graph = StateGraph(Article)
    for angle in ("history", "economics", "technology"):
        graph.add_node(angle, research(angle))
        graph.add_edge(START, angle)
    graph.add_node("review", review)
    graph.add_edge(["history", "economics", "technology"], "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=InMemorySaver(), name="article_graph")


def main() -> None:
    graph = build_graph()
    thread_id = f"article-{uuid.uuid4().hex[:8]}"
    with Ledger(agent=os.environ.get("AGENTLEDGER_AGENT", "graph-example")) as ledger:
        handler = LedgerCallbackHandler(ledger)
        config: Any = {"callbacks": [handler], "configurable": {"thread_id": thread_id}}

        first = graph.invoke({"topic": "tidal power", "notes": [], "verdict": ""}, config)
        print("paused with:", first["__interrupt__"][0].value["question"])
        final = graph.invoke(Command(resume="approved by Ana"), config)
        print("verdict:", final["verdict"])
        ledger.flush(timeout_s=10)

        events = ledger.replay(thread_id)
        print(f"session {thread_id}: {len(events)} events")
        branches = [
            e.data["name"]
            for e in events
            if e.event == "step_start" and e.data.get("langgraph_step") == 1
        ]
        print("parallel branches:", sorted(branches))
        for event in events:
            if event.event == "interrupted":
                print("interrupted at:", event.data["name"], "-", event.data["reason"])
        print("step errors:", sum(e.event == "step_error" for e in events))


if __name__ == "__main__":
    main()
