"""LedgerCallbackHandler beyond the field cases: streaming, retrievers, nested chains, a
3-branch parallel graph, interrupt/resume, custom events, sync/async parity, robustness."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun, dispatch_custom_event
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

import agentledger.integrations.langchain as module
from agentledger.client import Ledger
from agentledger.integrations.langchain import CUSTOM_EVENT, LedgerCallbackHandler

from .conftest import Stored
from .fakes import EchoModel, StreamingModel, scripted
from .test_field_cases import _weather_agent

pytestmark = pytest.mark.langchain

Read = Callable[[], Stored]


def test_exported_members() -> None:
    assert sorted(module.__all__) == [
        "CUSTOM_EVENT",
        "LedgerCallbackHandler",
        "SupportsLog",
        "instrument",
    ]
    for name in module.__all__:
        assert hasattr(module, name)


def test_streaming_records_time_to_first_token_and_tokens(ledger: Ledger, stored: Read) -> None:
    handler = LedgerCallbackHandler(ledger, capture_tokens=True)
    prompt = ChatPromptTemplate.from_messages([("human", "hi")])
    chunks = list((prompt | StreamingModel()).stream({}, config={"callbacks": [handler]}))
    assert [c.text for c in chunks if c.text] == ["streamed", " ", "answer"]

    events = stored()
    (end,) = events.of("llm_end")
    assert end["data"]["streamed_chunks"] >= 3  # LangChain may add an empty closing chunk
    assert [t[1] for t in end["data"]["tokens"]] == ["streamed", " ", "answer"]
    assert 0 <= end["data"]["ttft_ms"] <= end["data"]["duration_ms"]
    (root,) = events.roots()
    (root_end,) = events.kids(root, "step_end")
    assert root_end["data"]["inputs"] == {}  # streamed runs report inputs at the end


class _KeywordRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(query.lower().split())
        scored = []
        for doc in self.docs:
            score = len(words & set(doc.page_content.lower().split())) / max(len(words), 1)
            if score:
                scored.append(
                    Document(id=doc.id, page_content=doc.page_content, metadata={"score": score})
                )
        return sorted(scored, key=lambda d: -d.metadata["score"])


def test_retriever_logs_query_ids_scores_and_text(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    retriever = _KeywordRetriever(
        docs=[
            Document(id="refunds", page_content="refunds take five business days"),
            Document(id="shipping", page_content="shipping takes two days"),
            Document(id="unrelated", page_content="our office dog is called Pixel"),
        ]
    )
    prompt = ChatPromptTemplate.from_messages([("human", "{context} | {question}")])
    chain = (
        {
            "context": retriever | (lambda docs: " ".join(d.page_content for d in docs)),
            "question": lambda x: x,
        }
        | prompt
        | EchoModel()
        | StrOutputParser()
    )
    answer = chain.invoke("how many days do refunds take", config={"callbacks": [handler]})
    assert answer.startswith("echo: refunds take five business days")

    events = stored()
    (retrieval,) = events.of("retrieval")
    data = retrieval["data"]
    assert data["query"] == "how many days do refunds take"
    assert [d["id"] for d in data["documents"]] == ["refunds", "shipping"]
    assert data["documents"][0]["score"] > data["documents"][1]["score"]
    assert data["documents"][0]["text"] == "refunds take five business days"
    assert data["retriever"] == "_KeywordRetriever"
    assert events.parent(retrieval)["event"] == "step_start"  # the step that asked
    assert handler.open_runs == 0


def test_nested_chains_nest_in_the_tree(handler: LedgerCallbackHandler, stored: Read) -> None:
    inner = (ChatPromptTemplate.from_messages([("human", "{q}")]) | EchoModel()).with_config(
        run_name="inner"
    )

    def middle(x: dict[str, Any], config: RunnableConfig) -> str:
        return inner.invoke({"q": x["q"].upper()}, config=config).text

    outer = RunnableLambda(middle).with_config(run_name="middle") | StrOutputParser()
    assert outer.invoke({"q": "deep"}, config={"callbacks": [handler]}) == "echo: DEEP"

    events = stored()
    (root,) = events.roots()
    middle_start = events.one("step_start", name="middle")
    inner_start = events.one("step_start", name="inner")
    assert events.parent(middle_start) == root
    assert events.parent(inner_start) == middle_start
    (llm,) = events.of("llm_start")
    assert events.parent(events.parent(llm)) == inner_start or events.parent(llm) == inner_start
    assert len({e["session_id"] for e in events.events}) == 1


class _Fan(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]


def _fan_graph(model: Any, checkpointer: Any = None, gate: bool = False) -> Any:
    def branch(name: str) -> Any:
        def run(state: _Fan) -> dict[str, Any]:
            reply = model.invoke([HumanMessage(f"{name} on {state['topic']}")])
            return {"notes": [reply.text]}

        return run

    def approve(state: _Fan) -> dict[str, Any]:
        decision = interrupt({"question": "publish?", "notes": len(state["notes"])})
        return {"notes": [f"approved: {decision}"]}

    graph = StateGraph(_Fan)
    for name in ("a", "b", "c"):
        graph.add_node(name, branch(name))
        graph.add_edge(START, name)
    if gate:
        graph.add_node("approve", approve)
        graph.add_edge(["a", "b", "c"], "approve")
        graph.add_edge("approve", END)
    else:
        for name in ("a", "b", "c"):
            graph.add_edge(name, END)
    return graph.compile(checkpointer=checkpointer, name="fan")


def test_three_parallel_branches_are_siblings_under_the_graph(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    result = _fan_graph(EchoModel()).invoke(
        {"topic": "x", "notes": []}, config={"callbacks": [handler]}
    )
    assert len(result["notes"]) == 3

    events = stored()
    (root,) = events.roots()
    branches = events.kids(root, "step_start")
    assert sorted(b["data"]["name"] for b in branches) == ["a", "b", "c"]
    for branch in branches:
        assert branch["data"]["langgraph_step"] == 1
        (llm,) = events.kids(branch, "llm_start")
        assert branch["data"]["name"] in llm["data"]["messages"][0]["content"]
        assert len(events.kids(llm, "llm_end")) == 1
        assert len(events.kids(branch, "step_end")) == 1


def test_interrupt_is_not_an_error_and_resume_continues_the_session(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    app = _fan_graph(EchoModel(), checkpointer=InMemorySaver(), gate=True)
    config: RunnableConfig = {"callbacks": [handler], "configurable": {"thread_id": "T-42"}}
    first = app.invoke({"topic": "x", "notes": []}, config=config)
    assert "__interrupt__" in first
    final = app.invoke(Command(resume="yes"), config=config)
    assert final["notes"][-1] == "approved: yes"

    events = stored()
    assert {e["session_id"] for e in events.events} == {"T-42"}
    (stop,) = events.of("interrupted")
    assert stop["data"]["reason"] == "interrupt"
    assert stop["data"]["name"] == "approve"
    assert stop["data"]["interrupts"][0]["value"] == {"question": "publish?", "notes": 3}
    assert events.parent(stop)["data"]["name"] == "approve"
    assert events.of("step_error") == []
    (resume,) = events.of("user_message")  # the human's answer to the interrupt
    assert resume["data"]["text"] == "yes" and resume["data"]["resume"] == "yes"
    assert events.parent(resume) == stop
    resumed_root = events.one("step_start", name="fan", inputs={"type": "command", "resume": "yes"})
    assert events.parent(resumed_root) == resume
    assert len(events.roots()) == 1  # the resumed run continues the first run's lineage
    assert len(events.of("step_end", name="approve")) == 1
    assert handler.open_runs == 0


class _Chat(TypedDict):
    messages: Annotated[list[Any], add_messages]


def test_a_run_stopped_by_interrupt_answers_only_when_resumed(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    """integrations.md: "A run stopped by ``interrupt()`` answers only when it is resumed",
    also when the graph state already ends with a model's draft reply before the interrupt."""

    def draft(state: _Chat) -> dict[str, Any]:
        return {"messages": [EchoModel().invoke(state["messages"])]}

    def approve(state: _Chat) -> dict[str, Any]:
        verdict = interrupt({"question": "send this draft?"})
        return {"messages": [EchoModel().invoke([HumanMessage(f"sent ({verdict})")])]}

    graph = StateGraph(_Chat)
    graph.add_node("draft", draft)
    graph.add_node("approve", approve)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "approve")
    graph.add_edge("approve", END)
    app = graph.compile(checkpointer=InMemorySaver(), name="review")
    config: RunnableConfig = {"callbacks": [handler], "configurable": {"thread_id": "R-1"}}

    first = app.invoke({"messages": [("user", "refund A1")]}, config=config)
    assert "__interrupt__" in first and isinstance(first["messages"][-1], AIMessage)
    assert stored().of("assistant_response") == []  # the draft is not an answer

    final = app.invoke(Command(resume="yes"), config=config)
    assert "sent (yes)" in final["messages"][-1].text
    (answer,) = stored().of("assistant_response")
    assert answer["data"]["text"] == final["messages"][-1].text


def test_custom_events_hang_under_their_run(handler: LedgerCallbackHandler, stored: Read) -> None:
    def work(x: int) -> int:
        dispatch_custom_event("progress", {"pct": 50, "stage": "halfway"})
        return x + 1

    assert (
        RunnableLambda(work)
        .with_config(run_name="worker")
        .invoke(1, config={"callbacks": [handler]})
        == 2
    )
    events = stored()
    (custom,) = events.of(CUSTOM_EVENT)
    assert custom["data"] == {"name": "progress", "data": {"pct": 50, "stage": "halfway"}}
    assert events.parent(custom)["data"]["name"] == "worker"


def _agent_shape(events: Stored) -> tuple[Any, ...]:
    (root,) = events.roots()
    return events.shape(root)


def test_sync_and_async_runs_give_the_same_tree(ledger_server: Any, agent_name: str) -> None:
    from .conftest import read_events

    shapes = []
    for mode in ("sync", "async"):
        name = f"{agent_name}-{mode}"
        client = Ledger(
            url=ledger_server.url, api_key=ledger_server.api_key, agent=name, spill_dir=None
        )
        handler = LedgerCallbackHandler(client)
        agent = _weather_agent()
        inputs = {"messages": [HumanMessage("weather?")]}
        config: RunnableConfig = {"callbacks": [handler]}
        if mode == "sync":
            agent.invoke(inputs, config=config)
        else:
            asyncio.run(agent.ainvoke(inputs, config=config))
        client.close(timeout_s=10.0)
        stored = Stored(read_events(ledger_server.url, ledger_server.headers(), name))
        shapes.append(_agent_shape(stored))
    assert shapes[0] == shapes[1]


def test_explicit_session_and_metadata(ledger: Ledger, stored: Read) -> None:
    handler = LedgerCallbackHandler(ledger, session_id="case-7", metadata={"config": "v3"})
    scripted(AIMessage("a"), AIMessage("b")).batch(["x", "y"], config={"callbacks": [handler]})
    events = stored()
    assert {e["session_id"] for e in events.events} == {"case-7"}
    assert all(e["metadata"] == {"config": "v3"} for e in events.events)
    assert len(events.roots()) == 2


def test_long_strings_are_cut_with_their_size(ledger: Ledger, stored: Read) -> None:
    handler = LedgerCallbackHandler(ledger, max_field_chars=100)
    RunnableLambda(lambda s: len(s)).invoke("x" * 5000, config={"callbacks": [handler]})
    (start,) = stored().of("step_start")
    assert start["data"]["inputs"].startswith("x" * 100)
    assert "5000" in start["data"]["inputs"] and len(start["data"]["inputs"]) < 150


class _BrokenLedger:
    """A user-supplied ledger whose ``log`` raises: the agent must not notice."""

    calls = 0

    def log(self, event: str, data: dict[str, Any], **kwargs: Any) -> Any:
        self.calls += 1
        raise OSError("disk full")


@pytest.mark.allow_internal_errors
def test_a_failing_ledger_never_breaks_the_run(caplog: pytest.LogCaptureFixture) -> None:
    broken = _BrokenLedger()
    handler = LedgerCallbackHandler(broken)
    agent = _weather_agent()
    result = agent.invoke({"messages": [HumanMessage("weather?")]}, config={"callbacks": [handler]})
    baseline = _weather_agent().invoke({"messages": [HumanMessage("weather?")]})
    assert [m.text for m in result["messages"]][-1] == [m.text for m in baseline["messages"]][-1]
    assert handler.internal_errors == broken.calls > 0
    assert any("agentledger internal error" in r.getMessage() for r in caplog.records)


def test_max_scopes_caps_open_runs(ledger: Ledger) -> None:
    handler = LedgerCallbackHandler(ledger, max_scopes=5)
    import uuid

    for _ in range(20):  # starts whose ends never come (e.g. abandoned streams)
        handler.on_chain_start(None, {}, run_id=uuid.uuid4(), name="dangling")
    assert handler.open_runs == 5
    assert handler.evicted_runs == 15


def test_async_ledger_in_an_async_agent_run(ledger_server: Any, agent_name: str) -> None:
    from agentledger.client import AsyncLedger

    async def main() -> list[Any]:
        async with AsyncLedger(
            url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
        ) as ledger:
            handler = LedgerCallbackHandler(ledger)
            await _weather_agent().ainvoke(
                {"messages": [HumanMessage("weather?")]},
                config={"callbacks": [handler], "configurable": {"thread_id": "async-1"}},
            )
            await ledger.flush(timeout_s=10.0)
            return await ledger.replay("async-1")

    events = asyncio.run(main())
    kinds = [e.event for e in events]
    assert kinds.count("tool_call") == 2 and kinds.count("tool_result") == 2
    assert kinds[-1] == "step_end" and "assistant_response" in kinds


async def _count_chunks(inputs: Any, config: RunnableConfig) -> int:
    chunks = 0
    async for _ in _weather_agent().astream(inputs, config=config):
        chunks += 1
    return chunks


def test_astream_gives_the_same_tree_as_invoke(ledger_server: Any, agent_name: str) -> None:
    from .conftest import read_events

    shapes = []
    for mode in ("invoke", "astream"):
        name = f"{agent_name}-{mode}"
        client = Ledger(
            url=ledger_server.url, api_key=ledger_server.api_key, agent=name, spill_dir=None
        )
        handler = LedgerCallbackHandler(client)
        inputs = {"messages": [HumanMessage("weather?")]}
        config: RunnableConfig = {"callbacks": [handler]}
        if mode == "invoke":
            _weather_agent().invoke(inputs, config=config)
        else:
            assert asyncio.run(_count_chunks(inputs, config)) > 0
        assert handler.open_runs == 0 and handler.internal_errors == 0
        client.close(timeout_s=10.0)
        stored = Stored(read_events(ledger_server.url, ledger_server.headers(), name))
        shapes.append(_agent_shape(stored))
    assert shapes[0] == shapes[1]


def test_a_tool_returning_json_is_stored_as_an_object(
    handler: LedgerCallbackHandler, stored: Callable[[], Stored]
) -> None:
    """LangChain hands the model a dict result as JSON text; the ledger keeps the object, so
    its keys stay queryable (forget by key, regression checks on the result)."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look an order up."""
        return {"order_id": order_id, "customer": {"email": "dana@example.com"}}

    @tool
    def motto() -> str:
        """A motto in braces that is not JSON."""
        return "{be kind}"

    model = scripted(
        AIMessage(
            "",
            tool_calls=[
                {"name": "lookup_order", "args": {"order_id": "A1"}, "id": "c1"},
                {"name": "motto", "args": {}, "id": "c2"},
            ],
        ),
        "done",
    )
    agent = create_agent(model, [lookup_order, motto])
    agent.invoke({"messages": [HumanMessage("order A1?")]}, config={"callbacks": [handler]})
    results = {e["data"]["tool"]: e["data"]["result"] for e in stored().of("tool_result")}
    assert results == {
        "lookup_order": {"order_id": "A1", "customer": {"email": "dana@example.com"}},
        "motto": "{be kind}",
    }
