"""Every way a user's words reach a run yields one ``user_message`` with their text, the root
cause of the run: graph state in every message form, chains, prompt values, the legacy
``{"input": ...}``, and a chat model called on its own.

README, "Integrations" (LangChain and LangGraph: the user's turn in any input form).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langgraph.types import Command

from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.testing.chat_models import ScriptedChatModel

from .conftest import Stored

pytestmark = pytest.mark.langchain

Read = Callable[[], Stored]
TEXT = "Where is my order A1234?"


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(replies=["It ships today."])


def _agent(inputs: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda config: create_agent(_model(), []).invoke(inputs, config=config)


def _chain(inputs: Any, to_prompt: Callable[[Any], Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda config: (RunnableLambda(to_prompt) | _model()).invoke(inputs, config=config)


def _model_call(inputs: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda config: _model().invoke(inputs, config=config)


def _model_acall(inputs: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda config: asyncio.run(_model().ainvoke(inputs, config=config))


def _agent_astream(inputs: Any) -> Callable[[dict[str, Any]], Any]:
    async def run(config: dict[str, Any]) -> None:
        async for _ in create_agent(_model(), []).astream(inputs, config=config):
            pass

    return lambda config: asyncio.run(run(config))


def _agent_command(inputs: Any) -> Callable[[dict[str, Any]], Any]:
    from langgraph.checkpoint.memory import InMemorySaver

    def run(config: dict[str, Any]) -> Any:
        agent = create_agent(_model(), [], checkpointer=InMemorySaver())
        threaded = {**config, "configurable": {"thread_id": "command-update"}}
        return agent.invoke(inputs, config=threaded)  # type: ignore[arg-type]

    return run


_PROMPT_VALUE = ChatPromptTemplate.from_messages([("system", "be brief"), ("human", "{q}")])

FORMS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "graph-tuple": _agent({"messages": [("user", TEXT)]}),
    "graph-plain-string": _agent({"messages": TEXT}),
    "graph-role-dict": _agent({"messages": [{"role": "user", "content": TEXT}]}),
    "graph-type-dict": _agent({"messages": [{"type": "human", "content": TEXT}]}),
    "graph-content-blocks": _agent(
        {"messages": [{"role": "user", "content": [{"type": "text", "text": TEXT}]}]}
    ),
    "graph-message": _agent({"messages": [HumanMessage(TEXT)]}),
    "graph-history": _agent(
        {"messages": [HumanMessage("hi"), AIMessage("hello"), SystemMessage("x"), ("user", TEXT)]}
    ),
    "graph-astream": _agent_astream({"messages": [("user", TEXT)]}),
    "graph-command-update": _agent_command(Command(update={"messages": [("user", TEXT)]})),
    "chain-plain-string": _chain(TEXT, lambda text: [HumanMessage(text)]),
    "chain-legacy-input": _chain({"input": TEXT}, lambda x: x["input"]),
    "chain-message-list": _chain([("user", TEXT)], lambda x: x),
    "chain-prompt-value": _chain(_PROMPT_VALUE.invoke({"q": TEXT}), lambda x: x),
    "chain-role-dict": _chain({"role": "user", "content": TEXT}, lambda x: [x]),
    "model-string": _model_call(TEXT),
    "model-tuples": _model_call([("system", "be brief"), ("user", TEXT)]),
    "model-messages": _model_call([HumanMessage(TEXT)]),
    "model-dicts": _model_call([{"role": "user", "content": TEXT}]),
    "model-prompt-value": _model_call(_PROMPT_VALUE.invoke({"q": TEXT})),
    "model-async": _model_acall([("user", TEXT)]),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_input_form_yields_the_user_message(
    form: str, handler: LedgerCallbackHandler, stored: Read
) -> None:
    FORMS[form]({"callbacks": [handler]})

    events = stored()
    (message,) = events.of("user_message")
    assert message["data"]["text"] == TEXT
    assert message["data"]["role"] == "user"
    assert message["parent_id"] is None  # a root cause: nothing earlier in this conversation
    assert events.roots() == [message]
    first = events.kids(message)[0]  # the run's root step, or the model called on its own
    assert first["event"] in ("step_start", "llm_start")
    assert first["data"].get("kind", "graph") in ("graph", "chain")
    (first_call, *_) = events.of("llm_start")
    assert first_call["parent_id"] == message["event_id"]  # the first model call read it
    assert handler.open_runs == 0 and handler.internal_errors == 0


@pytest.mark.parametrize(
    "inputs",
    [
        {"messages": [HumanMessage(TEXT), AIMessage("", tool_calls=[])]},
        {
            "messages": [
                HumanMessage(TEXT),
                AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
                ToolMessage("done", tool_call_id="c1"),
            ]
        },
        {"topic": TEXT},
        {"messages": ""},
        ["a list of", "plain strings"],
        ("two", "strings"),
    ],
    ids=["ends-with-ai", "ends-with-tool", "no-message-key", "empty", "strings", "pair"],
)
def test_inputs_without_a_new_user_turn_log_none(
    inputs: Any, handler: LedgerCallbackHandler, stored: Read
) -> None:
    RunnableLambda(lambda x: "ok").invoke(inputs, config={"callbacks": [handler]})
    events = stored()
    assert events.of("user_message") == []
    assert [e["event"] for e in events.events] == ["step_start", "step_end"]


def test_a_streamed_chain_logs_its_input_when_it_is_known(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    """A streamed chain reports its input only at its end: the user's words are still kept."""
    chain = RunnableLambda(lambda text: [HumanMessage(text)]) | _model()
    chunks = list(chain.stream(TEXT, config={"callbacks": [handler]}))
    assert "".join(c.text for c in chunks) == "It ships today."

    events = stored()
    (message,) = events.of("user_message")
    assert message["data"]["text"] == TEXT and message["data"]["late"] is True
    assert len(events.of("assistant_response")) == 1


def test_the_next_turn_of_a_thread_is_caused_by_the_previous_answer(
    handler: LedgerCallbackHandler, stored: Read
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    agent = create_agent(
        ScriptedChatModel(replies=["first answer", "second answer"]),
        [],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": "turns-1"}}
    agent.invoke({"messages": [("user", "one")]}, config=config)
    agent.invoke({"messages": [("user", "two")]}, config=config)

    events = stored()
    first, second = events.of("user_message")
    answer_one, answer_two = events.of("assistant_response")
    assert first["parent_id"] is None
    assert events.parent(second) == answer_one
    assert answer_two["data"]["text"] == "second answer"
    second_call = events.of("llm_start")[-1]
    assert events.parent(second_call) == second  # it reads the new turn
    assert {e["session_id"] for e in events.events} == {"turns-1"}
