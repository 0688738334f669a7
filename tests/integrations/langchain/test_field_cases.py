"""Field cases H01-H06, H11, H12, H15-H17, H21, H22 (docs/pages/field-cases.md).

Real LangChain / LangGraph with offline fake models, a real server on loopback, assertions on
the events read back over the API.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import threading
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, TypedDict

import numpy as np
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import ToolException, tool
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler

from .conftest import Stored
from .fakes import (
    ANTHROPIC_LLM_OUTPUT,
    USAGE,
    EchoModel,
    FailingModel,
    LegacyUsageModel,
    StreamingModel,
    scripted,
)

pytestmark = pytest.mark.langchain

Read = Callable[[], Stored]


def _chain(model: Any) -> Any:
    prompt = ChatPromptTemplate.from_messages([("human", "question {i}")])
    return prompt | model | StrOutputParser()


class _Three(TypedDict):
    text: str
    seen: Annotated[list[str], lambda a, b: a + b]


def test_case_h01_langgraph_ainvoke_three_nodes(
    handler: LedgerCallbackHandler,
    stored: Read,
    caplog: pytest.LogCaptureFixture,
    recwarn: pytest.WarningsRecorder,
) -> None:
    model = EchoModel()

    def node(name: str) -> Any:
        async def run(state: _Three) -> dict[str, Any]:
            reply = await model.ainvoke([HumanMessage(f"{name}: {state['text']}")])
            return {"seen": [reply.text]}

        return run

    graph = StateGraph(_Three)
    for name in ("plan", "act", "report"):
        graph.add_node(name, node(name))
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", "report")
    graph.add_edge("report", END)
    app = graph.compile(name="three_nodes")

    with caplog.at_level(logging.WARNING):
        result = asyncio.run(
            app.ainvoke({"text": "go", "seen": []}, config={"callbacks": [handler]})
        )
    assert len(result["seen"]) == 3

    events = stored()
    assert {e["session_id"] for e in events.events} == {events.events[0]["session_id"]}
    root = events.one("step_start", name="three_nodes")
    assert root["parent_id"] is None and root["data"]["kind"] == "graph"
    assert len(events.roots()) == 1
    nodes = events.kids(root, "step_start")
    assert [n["data"]["name"] for n in nodes] == ["plan", "act", "report"]
    for step, node_event in enumerate(nodes, start=1):
        assert node_event["data"]["kind"] == "graph_node"
        assert node_event["data"]["langgraph_step"] == step
        (llm,) = events.kids(node_event, "llm_start")
        (end,) = events.kids(llm, "llm_end")
        assert end["data"]["token_usage"]["input_tokens"] == USAGE["input_tokens"]
    callback_warnings = [r for r in caplog.records if "callback" in r.getMessage().lower()]
    assert callback_warnings == []
    assert [str(w.message) for w in recwarn if "context" in str(w.message).lower()] == []
    assert handler.open_runs == 0


def test_case_h02_shared_handler_ten_concurrent_chains(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    chain = _chain(EchoModel())

    async def main() -> list[str]:
        runs = [chain.ainvoke({"i": i}, config={"callbacks": [handler]}) for i in range(10)]
        return list(await asyncio.gather(*runs))

    answers = asyncio.run(main())
    assert sorted(answers) == sorted(f"echo: question {i}" for i in range(10))

    events = stored()
    roots = events.roots()
    assert len(roots) == 10
    assert len({r["session_id"] for r in roots}) == 10
    for root in roots:
        starts = [k for k in events.kids(root) if k["event"] in ("step_start", "llm_start")]
        assert len(starts) == 3  # prompt, model, parser
        (llm,) = [k for k in starts if k["event"] == "llm_start"]
        question = llm["data"]["messages"][0]["content"]
        (end,) = events.kids(llm, "llm_end")
        assert end["data"]["text"] == f"echo: {question}"  # no cross-links between trees
        (root_end,) = events.kids(root, "step_end")
        assert root_end["data"]["outputs"] == f"echo: {question}"
        (answer,) = events.kids(end, "assistant_response")  # the chain's string, from its model
        assert answer["data"]["text"] == f"echo: {question}"
        subtree = [e for e in events.events if e["session_id"] == root["session_id"]]
        assert len(subtree) == 9  # 4 starts + 4 ends + the answer, all in this root's session


def test_case_h03_handler_only_on_inner_runnable(
    handler: LedgerCallbackHandler, stored: Read, caplog: pytest.LogCaptureFixture
) -> None:
    inner = _chain(EchoModel()).with_config(callbacks=[handler], run_name="inner")
    outer = RunnableLambda(lambda x: {"i": x["i"] * 2}) | inner

    with caplog.at_level(logging.WARNING):
        assert outer.invoke({"i": 21}) == "echo: question 42"

    events = stored()
    root = events.one("step_start", name="inner")
    assert root["parent_id"] is None  # its parent run never reached the handler
    assert events.roots() == [root]
    assert len(events.kids(root, "llm_start")) == 1
    assert handler.internal_errors == 0
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_case_h04_tool_args_are_an_object(handler: LedgerCallbackHandler, stored: Read) -> None:
    written: dict[str, str] = {}

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        written[path] = content
        return f"wrote {len(content)} chars"

    content = 'line one\n  line "two"\n\tline three\n'
    model = scripted(
        AIMessage(
            "",
            tool_calls=[
                {"name": "write_file", "args": {"path": "a.txt", "content": content}, "id": "w1"}
            ],
        ),
        AIMessage("done"),
    )
    agent = create_agent(model, [write_file])
    agent.invoke({"messages": [HumanMessage("write it")]}, config={"callbacks": [handler]})
    assert written == {"a.txt": content}

    call = stored().one("tool_call", tool="write_file")
    assert call["data"]["args"] == {"path": "a.txt", "content": content}
    assert call["data"]["call_id"] == "w1"


def test_case_h05_streaming_usage_from_aggregate_or_null(ledger: Ledger, stored: Read) -> None:
    with_usage = LedgerCallbackHandler(ledger, session_id="with-usage")
    without = LedgerCallbackHandler(ledger, session_id="without-usage")

    chunks = list(_chain(StreamingModel()).stream({"i": 1}, config={"callbacks": [with_usage]}))
    assert "".join(chunks) == "streamed answer"
    chunks = list(
        _chain(StreamingModel(with_usage=False)).stream({"i": 2}, config={"callbacks": [without]})
    )
    assert "".join(chunks) == "streamed answer"

    events = stored()
    (first,) = [e for e in events.of("llm_end") if e["session_id"] == "with-usage"]
    usage = first["data"]["token_usage"]
    assert usage["input_tokens"] == USAGE["input_tokens"]
    assert usage["output_tokens"] == USAGE["output_tokens"]
    assert usage["cache_read_tokens"] is None  # not reported: unknown, not 0
    assert first["data"]["text"] == "streamed answer"
    assert first["data"]["ttft_ms"] >= 0
    assert first["data"]["ttft_ms"] <= first["data"]["duration_ms"]
    (second,) = [e for e in events.of("llm_end") if e["session_id"] == "without-usage"]
    assert second["data"]["token_usage"] is None


@dataclasses.dataclass
class _Item:
    sku: str
    qty: int


class _Customer(BaseModel):
    name: str
    since: dt.date


class _SelfRef:
    def __init__(self) -> None:
        self.me = self

    def __repr__(self) -> str:
        return "<SelfRef>"


def test_case_h06_non_json_inputs_are_sanitized(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    when = dt.datetime(2026, 11, 29, 12, 30, tzinfo=dt.UTC)
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    inputs = {
        "items": [_Item("a", 1), _Item("b", 2)],
        "customer": _Customer(name="Dana", since=dt.date(2020, 1, 2)),
        "when": when,
        "blob": b"\x00\x01binary",
        "id": ident,
        "price": Decimal("49.90"),
        "tags": {"x"},
        "score": np.float64(0.5),
        "count": np.int64(3),
        "vector": np.array([1.0, 2.0]),
        "loop": loop,
        "obj": _SelfRef(),
    }
    chain = RunnableLambda(lambda x: "ok").with_config(run_name="odd_values")
    assert chain.invoke(inputs, config={"callbacks": [handler]}) == "ok"

    events = stored()
    start = events.one("step_start", name="odd_values")
    data = start["data"]["inputs"]
    assert data["items"] == [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]
    assert data["customer"] == {"name": "Dana", "since": "2020-01-02"}
    assert data["when"].startswith("2026-11-29T12:30:00")
    assert data["blob"]["$bytes"] == 8 and len(data["blob"]["sha256"]) == 64
    assert data["id"] == str(ident)
    assert data["price"] == "49.90"
    assert data["tags"] == ["x"]
    assert data["score"] == 0.5 and data["count"] == 3
    assert data["vector"] == [1.0, 2.0]
    assert data["loop"]["name"] == "loop" and "$cycle" in data["loop"]["self"]
    assert data["obj"] == "<SelfRef>"
    assert len(events.of("step_end", name="odd_values")) == 1  # nothing dropped


class _Counter(TypedDict):
    n: int


def test_case_h11_thousand_graph_runs_leave_the_map_empty(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    graph = StateGraph(_Counter)
    graph.add_node("inc", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "inc")
    graph.add_edge("inc", END)
    app = graph.compile(name="tiny")

    for i in range(1000):
        assert app.invoke({"n": i}, config={"callbacks": [handler]}) == {"n": i + 1}
        if i == 99:
            after_100 = handler.open_runs
    assert after_100 == 0
    assert handler.open_runs == 0
    assert handler.evicted_runs == 0

    counts = stored().types()
    assert counts["step_start"] == 2000 and counts["step_end"] == 2000


def test_case_h12_message_objects_are_nested_json(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    def answer(_: Any) -> dict[str, Any]:
        return {
            "messages": [
                HumanMessage("hi"),
                AIMessage(
                    "calling",
                    tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "t1"}],
                ),
            ]
        }

    RunnableLambda(answer).with_config(run_name="msgs").invoke(
        {"q": 1}, config={"callbacks": [handler]}
    )
    end = stored().one("step_end", name="msgs")
    human, ai = end["data"]["outputs"]["messages"]
    assert human == {"role": "human", "content": "hi"}
    assert ai["role"] == "ai" and ai["content"] == "calling"
    assert ai["tool_calls"] == [{"name": "lookup", "args": {"q": "x"}, "id": "t1"}]


def test_case_h15_model_error_logged_once(handler: LedgerCallbackHandler, stored: Read) -> None:
    prompt = ChatPromptTemplate.from_messages([("human", "hi")])
    with pytest.raises(RuntimeError, match="model is down"):
        (prompt | FailingModel()).invoke({}, config={"callbacks": [handler]})

    events = stored()
    (error,) = events.of("llm_error")
    assert error["data"]["type"] == "RuntimeError"
    assert error["data"]["error"] == "model is down"
    assert events.parent(error)["event"] == "llm_start"
    assert len(events.of("step_error")) == 1  # the sequence itself; not a second llm_error
    assert handler.open_runs == 0


def test_case_h16_usage_from_message_then_llm_output(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    message_usage = scripted(
        AIMessage(
            "cached answer",
            usage_metadata={
                "input_tokens": 100,
                "output_tokens": 9,
                "total_tokens": 109,
                "input_token_details": {"cache_read": 80, "cache_creation": 15},
            },
        )
    )
    message_usage.invoke("q1", config={"callbacks": [handler], "run_name": "message_usage"})
    LegacyUsageModel().invoke("q2", config={"callbacks": [handler]})
    LegacyUsageModel(llm_output=ANTHROPIC_LLM_OUTPUT, text="anthropic").invoke(
        "q3", config={"callbacks": [handler]}
    )

    events = stored()
    by_text = {e["data"]["text"]: e["data"]["token_usage"] for e in events.of("llm_end")}
    assert by_text["cached answer"] == {
        "input_tokens": 100,
        "output_tokens": 9,
        "cache_read_tokens": 80,
        "cache_write_tokens": 15,
        "reasoning_tokens": None,
        "model": by_text["cached answer"]["model"],
    }
    legacy = by_text["legacy"]
    assert (legacy["input_tokens"], legacy["output_tokens"]) == (7, 2)
    assert legacy["cache_read_tokens"] == 3
    assert legacy["model"] == "legacy-1"
    anthropic = by_text["anthropic"]  # cache parts are inside input_tokens, never on top
    assert anthropic["input_tokens"] == 125
    assert (anthropic["cache_read_tokens"], anthropic["cache_write_tokens"]) == (100, 20)
    assert anthropic["model"] == "claude-like-1"


def _weather_agent(delay_s: float = 0.0) -> Any:
    @tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        time.sleep(delay_s)
        return f"sunny in {city} ({threading.current_thread().name})"

    model = scripted(
        AIMessage(
            "",
            tool_calls=[
                {"name": "get_weather", "args": {"city": "Paris"}, "id": "p"},
                {"name": "get_weather", "args": {"city": "Oslo"}, "id": "o"},
            ],
        ),
        AIMessage("Sunny in both."),
    )
    return create_agent(model, [get_weather], name="weather")


def test_case_h17_two_handlers_in_parallel(ledger: Ledger, stored: Read) -> None:
    handlers = {name: LedgerCallbackHandler(ledger, session_id=name) for name in ("left", "right")}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            for _ in range(3):
                _weather_agent(0.01).invoke(
                    {"messages": [HumanMessage(f"from {name}")]},
                    config={"callbacks": [handlers[name]]},
                )
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in handlers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    events = stored()
    for name, handler in handlers.items():
        assert handler.open_runs == 0
        mine = [e for e in events.events if e["session_id"] == name]
        assert len([e for e in mine if e["parent_id"] is None]) == 3
        ids = {e["event_id"] for e in mine}
        assert all(e["parent_id"] is None or e["parent_id"] in ids for e in mine)
        messages = {e["data"]["text"] for e in mine if e["event"] == "user_message"}
        assert messages == {f"from {name}"}


def test_case_h21_parallel_tool_calls_each_result_under_its_call(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    result = _weather_agent(0.05).invoke(
        {"messages": [HumanMessage("weather?")]}, config={"callbacks": [handler]}
    )
    threads = {m.text.split("(")[-1] for m in result["messages"] if m.type == "tool"}
    assert len(threads) == 2  # the two calls really ran on different threads

    events = stored()
    calls = events.of("tool_call", tool="get_weather")
    assert len(calls) == 2
    for call in calls:
        (result_event,) = events.kids(call, "tool_result")
        assert result_event["data"]["call_id"] == call["data"]["call_id"]
        assert call["data"]["args"]["city"] in result_event["data"]["result"]
        requested_by = events.parent(call)
        assert requested_by["event"] == "llm_end"
        ids = [c["id"] for c in requested_by["data"]["tool_calls"]]
        assert call["data"]["call_id"] in ids


def _boom_agent(handled: bool) -> Any:
    @tool
    def boom(x: int) -> str:
        """Always fails."""
        raise ToolException(f"kaboom {x}")

    boom.handle_tool_error = handled
    model = scripted(
        AIMessage("", tool_calls=[{"name": "boom", "args": {"x": 1}, "id": "b1"}]),
        AIMessage("Sorry, that failed."),
    )
    return create_agent(model, [boom], name="boom_agent")


def test_case_h22_handled_tool_error_is_a_tool_error(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    result = _boom_agent(handled=True).invoke(
        {"messages": [HumanMessage("go")]}, config={"callbacks": [handler]}
    )
    assert result["messages"][-1].text == "Sorry, that failed."

    events = stored()
    (error,) = events.of("tool_error")
    assert error["data"]["tool"] == "boom"
    assert error["data"]["error"] == "kaboom 1"
    assert error["data"]["handled"] is True
    assert error["data"]["call_id"] == "b1"
    assert events.parent(error)["event"] == "tool_call"
    assert events.of("tool_result") == []


def test_case_h22_unhandled_tool_error_has_the_tool_name_too(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    agent = _boom_agent(handled=False)
    with pytest.raises(ToolException, match="kaboom 1"):  # the ToolNode re-raises it
        agent.invoke({"messages": [HumanMessage("go")]}, config={"callbacks": [handler]})

    events = stored()
    (error,) = events.of("tool_error")
    assert error["data"]["tool"] == "boom"
    assert "kaboom 1" in str(error["data"]["error"])
    assert events.parent(error)["data"]["tool"] == "boom"
    assert handler.open_runs == 0
