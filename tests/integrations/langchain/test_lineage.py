"""The causes a LangChain / LangGraph run records, read back with the server's ``why()`` and
``impact()`` on SQLite and PostgreSQL.

An answer's ``why()`` reaches the tool results it was computed from, the tool calls behind them,
the model output that requested them and the user's message, without the steps that merely
contained them; a tool result's ``impact()`` reaches the later model call and the answer; the
user message's ``impact()`` is the whole run.

README, "Integrations" (a model call names what it read as its causes) and the README's
opening ("Cause, not containment").
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda, RunnableParallel
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from _events import Stored, read_events
from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.protocol import vocabulary as v
from agentledger.testing.chat_models import ScriptedChatModel

from .fakes import FailingModel

pytestmark = pytest.mark.langchain

STEP_EVENTS = {v.STEP_START, v.STEP_END}


class Lineage:
    """A ledger on one store kind, a handler logging to it, and the server's answers."""

    def __init__(self, server: Any, agent: str) -> None:
        self.server = server
        self.agent = agent
        self.ledger = Ledger(url=server.url, api_key=server.api_key, agent=agent, spill_dir=None)
        self.handler = LedgerCallbackHandler(self.ledger)

    def stored(self) -> Stored:
        assert self.ledger.flush(timeout_s=20.0) is not None
        return Stored(read_events(self.server.url, self.server.headers(), self.agent))

    def why(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        result = self.ledger.why(event["event_id"], depth=1000)
        assert result.chain_complete, result
        return [self._by_id[e.event_id] for e in result.chain]

    def why_edges(self, event: dict[str, Any]) -> set[tuple[str, str, str]]:
        result = self.ledger.why(event["event_id"], depth=1000)
        return {(e.effect, e.cause, e.kind) for e in result.edges}

    def impact(self, event: dict[str, Any]) -> set[str]:
        result = self.ledger.impact(event["event_id"], limit=10_000)
        assert not result.truncated
        return {e.event_id for e in result.events}

    def load(self) -> Stored:
        events = self.stored()
        self._by_id = events.by_id
        return events


@pytest.fixture
def lineage(store_server: Any, agent_name: str) -> Iterator[Lineage]:
    found = Lineage(store_server, agent_name)
    yield found
    found.ledger.close(timeout_s=10.0)


def _ids(events: list[dict[str, Any]]) -> set[str]:
    return {e["event_id"] for e in events}


# --------------------------------------------------------------------- create_agent


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "shipped"}


@tool
def track_parcel(order_id: str) -> str:
    """Where the order's parcel is."""
    return f"{order_id}: out for delivery"


def _two_tool_agent() -> Any:
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                "",
                tool_calls=[
                    {"name": "lookup_order", "args": {"order_id": "A1"}, "id": "call-order"},
                    {"name": "track_parcel", "args": {"order_id": "A1"}, "id": "call-parcel"},
                ],
            ),
            "A1 has shipped and is out for delivery.",
        ]
    )
    return create_agent(model, [lookup_order, track_parcel], name="support")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_agent_answer_is_caused_by_its_tool_results_and_the_user_message(
    lineage: Lineage, mode: str
) -> None:
    agent = _two_tool_agent()
    inputs = {"messages": [("user", "Where is order A1?")]}
    config: RunnableConfig = {"callbacks": [lineage.handler]}
    if mode == "sync":
        agent.invoke(inputs, config=config)
    else:
        asyncio.run(agent.ainvoke(inputs, config=config))
    events = lineage.load()

    (message,) = events.of(v.USER_MESSAGE)
    (answer,) = events.of(v.ASSISTANT_RESPONSE)
    first_start, second_start = events.of(v.LLM_START)
    requesting, answering = events.of(v.LLM_END)
    results = events.of(v.TOOL_RESULT)
    calls = events.of(v.TOOL_CALL)
    assert len(results) == len(calls) == 2

    why = lineage.why(answer)
    held = _ids(why)
    assert _ids(results) <= held
    assert _ids(calls) <= held
    assert {requesting["event_id"], message["event_id"]} <= held
    assert not [e for e in why if e["event"] in STEP_EVENTS]  # scope is not a cause
    assert why[0] == message and why[-1] == answer

    edges = lineage.why_edges(answer)
    assert (answer["event_id"], answering["event_id"], v.EDGE_PRODUCED) in edges
    for call in calls:
        assert (call["event_id"], requesting["event_id"], v.EDGE_REQUESTED) in edges
    for result in results:
        assert (second_start["event_id"], result["event_id"], v.EDGE_READ) in edges
    assert (first_start["event_id"], message["event_id"], v.EDGE_READ) in edges

    first_result = events.one(v.TOOL_RESULT, tool="lookup_order")
    impact = lineage.impact(first_result)
    assert {second_start["event_id"], answering["event_id"], answer["event_id"]} <= impact
    assert message["event_id"] not in impact

    everything = _ids(events.events) - {message["event_id"]}
    assert lineage.impact(message) == everything

    assert events.parent(events.parent(calls[0])) == first_start  # llm_end, then its start
    assert events.parent(first_start) == message
    model_steps = _ids(events.of(v.STEP_START, name="model"))
    assert first_start["scope_id"] in model_steps  # it ran inside the model node
    assert answer["scope_id"] == events.one(v.STEP_START, name="support")["event_id"]
    assert lineage.handler.internal_errors == 0


# --------------------------------------------------------------------- LangGraph


class _Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@tool
def stock(sku: str) -> str:
    """Units of a product in stock."""
    return f"{sku}: 3 left"


@tool
def price(sku: str) -> str:
    """Price of a product."""
    return f"{sku}: 9 EUR"


def _shop_graph(model: BaseChatModel) -> Any:
    """agent (asks for two tools at once) -> tools (run in parallel) -> review, a subgraph
    that waits for a human (``interrupt()``) and then answers."""

    def agent(state: _Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: _Chat) -> dict[str, Any]:
        decision = interrupt({"question": "send the answer?"})
        return {"messages": [HumanMessage(f"reviewer: {decision}")]}

    def answer(state: _Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    review = StateGraph(_Chat)
    review.add_node("approve", approve)
    review.add_node("answer", answer)
    review.add_edge(START, "approve")
    review.add_edge("approve", "answer")
    review.add_edge("answer", END)

    graph = StateGraph(_Chat)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([stock, price]))
    graph.add_node("review", review.compile(name="review"))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=InMemorySaver(), name="shop")


def test_a_graph_with_parallel_tools_a_subgraph_and_a_resume_keeps_one_lineage(
    lineage: Lineage,
) -> None:
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                "",
                tool_calls=[
                    {"name": "stock", "args": {"sku": "A"}, "id": "call-stock"},
                    {"name": "price", "args": {"sku": "A"}, "id": "call-price"},
                ],
            ),
            "A: 3 left at 9 EUR.",
        ]
    )
    app = _shop_graph(model)
    config: RunnableConfig = {
        "callbacks": [lineage.handler],
        "configurable": {"thread_id": f"shop-{lineage.agent}"},
    }
    first = app.invoke({"messages": [("user", "Is A in stock, and at what price?")]}, config)
    assert "__interrupt__" in first
    final = app.invoke(Command(resume="approved"), config)
    assert final["messages"][-1].text == "A: 3 left at 9 EUR."
    events = lineage.load()

    message, resume = events.of(v.USER_MESSAGE)
    assert resume["data"]["resume"] == "approved"
    stop = events.one(v.INTERRUPTED, name="approve")
    assert events.parent(resume) == stop  # the human answered this interrupt
    (answer,) = events.of(v.ASSISTANT_RESPONSE)
    requesting, answering = events.of(v.LLM_END)
    calls = events.of(v.TOOL_CALL)
    results = events.of(v.TOOL_RESULT)
    assert {c["data"]["call_id"] for c in calls} == {"call-stock", "call-price"}
    for call in calls:  # the parallel calls were both requested by the first model output
        assert events.parent(call) == requesting

    subgraph_nodes = [e for e in events.of(v.STEP_START) if e["data"]["name"] == "approve"]
    assert len(subgraph_nodes) == 2  # the first run's and the resumed run's
    for node in subgraph_nodes:  # nested steps hang under their enclosing steps
        assert events.ancestors(node)[-3:] == [v.STEP_START, v.STEP_START, v.STEP_START]

    why = lineage.why(answer)
    held = _ids(why)
    assert _ids(results) | _ids(calls) | {requesting["event_id"], message["event_id"]} <= held
    assert {resume["event_id"], stop["event_id"]} <= held  # ... and the human's go-ahead
    assert why[0] == message

    later_start = events.parent(answering)
    impact = lineage.impact(events.one(v.TOOL_RESULT, tool="stock"))
    assert {later_start["event_id"], answering["event_id"], answer["event_id"]} <= impact
    assert lineage.impact(message) == _ids(events.events) - {message["event_id"]}
    assert lineage.handler.open_runs == 0 and lineage.handler.internal_errors == 0


# --------------------------------------------------------------------- parallel, retries


def test_parallel_model_calls_each_read_the_user_message(lineage: Lineage) -> None:
    both = RunnableParallel(
        short=ScriptedChatModel(replies=["short"]), long=ScriptedChatModel(replies=["long"])
    )
    both.invoke("summarise this", config={"callbacks": [lineage.handler]})
    events = lineage.load()

    (message,) = events.of(v.USER_MESSAGE)
    starts = events.of(v.LLM_START)
    assert len(starts) == 2
    for start in starts:
        assert events.parent(start) == message
    assert lineage.impact(message) == _ids(events.events) - {message["event_id"]}


@pytest.mark.parametrize("recovery", ["fallback", "retry"])
def test_a_retried_model_call_reads_the_same_inputs(lineage: Lineage, recovery: str) -> None:
    answer = ScriptedChatModel(replies=["recovered"])
    if recovery == "fallback":
        model: Any = FailingModel().with_fallbacks([answer])
    else:
        calls = iter([FailingModel(), answer])
        model = RunnableLambda(
            lambda messages, config: next(calls).invoke(messages, config=config)
        ).with_retry(stop_after_attempt=2, wait_exponential_jitter=False)
    model.invoke([("user", "try twice")], config={"callbacks": [lineage.handler]})
    events = lineage.load()

    (message,) = events.of(v.USER_MESSAGE)
    failed, succeeded = events.of(v.LLM_START)
    assert events.parent(failed) == message and events.parent(succeeded) == message
    (answer_event,) = events.of(v.ASSISTANT_RESPONSE)
    assert answer_event["data"]["text"] == "recovered"
    held = _ids(lineage.why(answer_event))
    assert message["event_id"] in held and failed["event_id"] not in held


class _ParentsOnlyLedger:
    """A hand-written ledger adapter whose ``log`` predates ``caused_by`` and ``scope_id``."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def log(
        self,
        event: str,
        data: dict[str, Any],
        *,
        session_id: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        return self.ledger.log(
            event, data, session_id=session_id, parent_id=parent_id, metadata=metadata
        )


def test_a_ledger_without_causes_still_gets_every_event_with_its_parent(
    lineage: Lineage,
) -> None:
    handler = LedgerCallbackHandler(_ParentsOnlyLedger(lineage.ledger))
    _two_tool_agent().invoke(
        {"messages": [("user", "Where is order A1?")]}, config={"callbacks": [handler]}
    )
    events = lineage.load()
    assert handler.internal_errors == 0
    assert events.types()[v.TOOL_RESULT] == 2 and len(events.of(v.ASSISTANT_RESPONSE)) == 1
    assert all(not e.get("caused_by") and e.get("scope_id") is None for e in events.events)
    (message,) = events.of(v.USER_MESSAGE)
    assert lineage.impact(message) == _ids(events.events) - {message["event_id"]}


def test_a_rag_answer_is_caused_by_the_retrieved_documents(lineage: Lineage) -> None:
    from langchain_core.documents import Document
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    from .test_handler import _KeywordRetriever

    retriever = _KeywordRetriever(
        docs=[Document(id="refunds", page_content="refunds take five business days")]
    )
    prompt = ChatPromptTemplate.from_messages([("human", "{context} | {question}")])
    chain = (
        {
            "context": retriever | (lambda docs: " ".join(d.page_content for d in docs)),
            "question": lambda question: question,
        }
        | prompt
        | ScriptedChatModel(replies=["Five business days."])
        | StrOutputParser()
    )
    chain.invoke("how long do refunds take", config={"callbacks": [lineage.handler]})
    events = lineage.load()

    (message,) = events.of(v.USER_MESSAGE)
    (retrieval,) = events.of(v.RETRIEVAL)
    (start,) = events.of(v.LLM_START)
    (answer,) = events.of(v.ASSISTANT_RESPONSE)
    assert answer["data"]["text"] == "Five business days."
    edges = lineage.why_edges(answer)
    assert (start["event_id"], retrieval["event_id"], v.EDGE_READ) in edges
    assert (start["event_id"], message["event_id"], v.EDGE_READ) in edges
    assert {retrieval["event_id"], message["event_id"]} <= _ids(lineage.why(answer))
    assert answer["event_id"] in lineage.impact(retrieval)
