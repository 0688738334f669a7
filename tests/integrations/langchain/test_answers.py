"""Every way a run finishes yields exactly one ``assistant_response``, caused by the model output
that produced it; tool artifacts and ``Command`` results are kept in the ``tool_result``.

README, "Integrations" (LangChain and LangGraph: one assistant_response per finished run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain.tools import InjectedToolCallId
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langgraph.types import Command
from pydantic import BaseModel

from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.testing.chat_models import ScriptedChatModel

from .conftest import Stored

pytestmark = pytest.mark.langchain

Read = Callable[[], Stored]
Config = dict[str, Any]


class Weather(BaseModel):
    city: str
    celsius: int


def _structured_call() -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": "Weather", "args": {"city": "Oslo", "celsius": 4}, "id": "w1"}]
    )


def _lookup_then(answer: str) -> ScriptedChatModel:
    return ScriptedChatModel(
        replies=[
            AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "a"}, "id": "l1"}]),
            answer,
        ]
    )


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def _agent_invoke(config: Config) -> None:
    create_agent(_lookup_then("the answer"), [lookup]).invoke(
        {"messages": [("user", "q")]}, config=config
    )


def _agent_stream(config: Config) -> None:
    agent = create_agent(_lookup_then("the answer"), [lookup])
    for _ in agent.stream({"messages": [("user", "q")]}, config=config, stream_mode="updates"):
        pass


def _agent_astream_events(config: Config) -> None:
    async def run() -> None:
        agent = create_agent(_lookup_then("the answer"), [lookup])
        async for _ in agent.astream_events({"messages": [("user", "q")]}, config=config):  # type: ignore[arg-type]
            pass

    asyncio.run(run())


def _agent_structured(config: Config) -> None:
    model = ScriptedChatModel(replies=[_structured_call()])
    agent = create_agent(model, [], response_format=ToolStrategy(Weather))
    result = agent.invoke({"messages": [("user", "q")]}, config=config)
    assert result["structured_response"] == Weather(city="Oslo", celsius=4)


def _chain_string(config: Config) -> None:
    prompt = ChatPromptTemplate.from_messages([("human", "{q}")])
    chain = prompt | ScriptedChatModel(replies=["the answer"]) | StrOutputParser()
    assert chain.invoke({"q": "q"}, config=config) == "the answer"


def _chain_stream(config: Config) -> None:
    prompt = ChatPromptTemplate.from_messages([("human", "{q}")])
    chain = prompt | ScriptedChatModel(replies=["the answer"]) | StrOutputParser()
    assert "".join(chain.stream({"q": "q"}, config=config)) == "the answer"


def _with_structured_output(config: Config) -> None:
    model = ScriptedChatModel(replies=[_structured_call()]).with_structured_output(Weather)
    assert model.invoke("q", config=config) == Weather(city="Oslo", celsius=4)


def _model_invoke(config: Config) -> None:
    ScriptedChatModel(replies=["the answer"]).invoke("q", config=config)


def _model_stream(config: Config) -> None:
    chunks = list(ScriptedChatModel(replies=["the answer"]).stream("q", config=config))
    assert "".join(c.text for c in chunks) == "the answer"


def _model_ainvoke(config: Config) -> None:
    asyncio.run(ScriptedChatModel(replies=["the answer"]).ainvoke("q", config=config))


FINISHES: dict[str, tuple[Callable[[Config], None], Any]] = {
    "agent-invoke": (_agent_invoke, "the answer"),
    "agent-stream": (_agent_stream, "the answer"),
    "agent-astream-events": (_agent_astream_events, "the answer"),
    "agent-response-format": (_agent_structured, {"city": "Oslo", "celsius": 4}),
    "chain-string": (_chain_string, "the answer"),
    "chain-stream": (_chain_stream, "the answer"),
    "with-structured-output": (_with_structured_output, {"city": "Oslo", "celsius": 4}),
    "model-invoke": (_model_invoke, "the answer"),
    "model-stream": (_model_stream, "the answer"),
    "model-ainvoke": (_model_ainvoke, "the answer"),
}


@pytest.mark.parametrize("finish", sorted(FINISHES))
def test_every_finish_yields_one_answer_from_its_model_output(
    finish: str, handler: LedgerCallbackHandler, stored: Read
) -> None:
    run, expected = FINISHES[finish]
    run({"callbacks": [handler]})

    events = stored()
    (answer,) = events.of("assistant_response")
    producer = events.parent(answer)
    assert producer["event"] == "llm_end"
    assert producer == events.of("llm_end")[-1]  # the last model output, not an earlier one
    if isinstance(expected, str):
        assert answer["data"]["text"] == expected
        assert "structured" not in answer["data"]
    else:
        assert answer["data"]["structured"] == expected
        assert answer["data"]["text"] == '{"city":"Oslo","celsius":4}'
    assert handler.open_runs == 0 and handler.internal_errors == 0


def test_batch_yields_one_answer_per_run(handler: LedgerCallbackHandler, stored: Read) -> None:
    model = ScriptedChatModel(respond=lambda messages: f"re: {messages[-1].text}")
    model.batch(["a", "b", "c"], config={"callbacks": [handler]})
    events = stored()
    answers = events.of("assistant_response")
    assert sorted(a["data"]["text"] for a in answers) == ["re: a", "re: b", "re: c"]
    for answer in answers:
        (message,) = [
            e for e in events.of("user_message") if e["session_id"] == answer["session_id"]
        ]
        assert answer["data"]["text"] == f"re: {message['data']['text']}"


def test_runs_that_did_not_finish_yield_no_answer(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    asks = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "a"}, "id": "l1"}])
    ScriptedChatModel(replies=[asks]).invoke("q", config={"callbacks": [handler]})
    from langchain_core.runnables import RunnableLambda

    RunnableLambda(lambda text: text.upper()).invoke("no model", config={"callbacks": [handler]})
    assert stored().of("assistant_response") == []


@tool(response_format="content_and_artifact")
def search(q: str) -> tuple[str, dict[str, Any]]:
    """Search with rows as artifact."""
    return f"2 rows for {q}", {"rows": [{"id": 1}, {"id": 2}]}


@tool
def set_city(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Set the city and say so."""
    return Command(
        update={"messages": [ToolMessage(f"city set to {city}", tool_call_id=tool_call_id)]}
    )


def test_artifacts_and_commands_are_kept_in_the_tool_result(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    model = ScriptedChatModel(
        replies=[
            AIMessage(
                "",
                tool_calls=[
                    {"name": "search", "args": {"q": "x"}, "id": "s1"},
                    {"name": "set_city", "args": {"city": "Oslo"}, "id": "c1"},
                ],
            ),
            "done",
        ]
    )
    agent = create_agent(model, [search, set_city])
    agent.invoke({"messages": [HumanMessage("go")]}, config={"callbacks": [handler]})

    events = stored()
    found = events.one("tool_result", tool="search")["data"]
    assert found["result"] == "2 rows for x"
    assert found["artifact"] == {"rows": [{"id": 1}, {"id": 2}]}
    command = events.one("tool_result", tool="set_city")["data"]
    assert command["result"] == "city set to Oslo"
    assert command["command"]["type"] == "command"
    (message,) = command["command"]["update"]["messages"]
    assert message == {"role": "tool", "content": "city set to Oslo", "tool_call_id": "c1"}
    assert "Command(" not in str(command)
    assert len(events.of("assistant_response")) == 1
