"""``instrument()``: the one-line LangChain integration, its options and the missing extra."""

from __future__ import annotations

import subprocess
import sys
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler, instrument
from agentledger.protocol import LedgerError

from .conftest import Stored
from .test_field_cases import _weather_agent

pytestmark = pytest.mark.langchain

Read = Callable[[], Stored]


def test_a_runnable_comes_back_bound_to_a_handler(ledger: Ledger, stored: Read) -> None:
    chain = RunnableLambda(lambda text: text.upper())
    logged = instrument(chain, ledger, session_id="case-9", metadata={"config": "v4"})
    assert isinstance(logged, Runnable) and logged is not chain
    assert logged.invoke("hi") == "HI"
    assert chain.invoke("plain") == "PLAIN"  # the original is left as it was
    events = stored()
    assert [e["event"] for e in events.events] == ["user_message", "step_start", "step_end"]
    assert events.one("step_start")["data"]["inputs"] == "hi"
    assert events.parent(events.one("step_start")) == events.one("user_message", text="hi")
    assert {e["session_id"] for e in events.events} == {"case-9"}
    assert all(e["metadata"] == {"config": "v4"} for e in events.events)


def test_a_compiled_graph_stays_a_graph(ledger: Ledger, stored: Read) -> None:
    agent = _weather_agent()
    logged = instrument(agent, ledger)
    assert isinstance(logged, Pregel)
    result = logged.invoke({"messages": [HumanMessage("weather in Paris and Oslo?")]})
    assert result["messages"][-1].text == "Sunny in both."
    events = stored()
    assert len(events.of("tool_call")) == 2
    (root,) = events.roots()
    assert root["event"] == "user_message"
    assert root["data"]["text"] == "weather in Paris and Oslo?"
    (graph,) = events.kids(root, "step_start")
    assert graph["data"]["kind"] == "graph"


def test_a_graph_keeps_its_checkpointer_and_thread_session(ledger: Ledger, stored: Read) -> None:
    agent = _weather_agent()
    agent.checkpointer = InMemorySaver()
    logged: Any = instrument(agent, ledger)
    config: Any = {"configurable": {"thread_id": "thread-3"}}
    logged.invoke({"messages": [HumanMessage("weather?")]}, config=config)
    assert logged.get_state(config).values["messages"][-1].text == "Sunny in both."
    assert {e["session_id"] for e in stored().events} == {"thread-3"}


def test_call_time_callbacks_still_run(ledger: Ledger, stored: Read) -> None:
    seen: list[str] = []
    other = LedgerCallbackHandler(ledger, session_id="other")
    logged = instrument(RunnableLambda(lambda x: seen.append(x) or x), ledger, session_id="mine")
    logged.invoke("x", config={"callbacks": [other]})
    sessions = [e["session_id"] for e in stored().of("step_start")]
    assert sorted(sessions) == ["mine", "other"]
    assert seen == ["x"]


def test_none_gives_the_handler(ledger: Ledger, stored: Read) -> None:
    handler = instrument(None, ledger, session_id="case-10", capture_tokens=True)
    assert isinstance(handler, LedgerCallbackHandler)
    RunnableLambda(lambda x: x).invoke("y", config={"callbacks": [handler]})
    assert {e["session_id"] for e in stored().events} == {"case-10"}
    assert handler.open_runs == 0


def test_max_scopes_bounds_open_runs(ledger: Ledger) -> None:
    handler = instrument(None, ledger, max_scopes=2)
    for _ in range(3):  # runs that never end (e.g. abandoned streams)
        handler.on_chain_start(None, {}, run_id=uuid.uuid4())
    assert (handler.open_runs, handler.evicted_runs) == (2, 1)


def test_max_runs_is_a_deprecated_alias(ledger: Ledger) -> None:
    with pytest.warns(DeprecationWarning, match="max_scopes") as caught:
        handler = LedgerCallbackHandler(ledger, max_runs=5)
    assert caught[0].filename == __file__  # the warning points at the caller
    with pytest.warns(DeprecationWarning, match="max_scopes") as caught:
        instrument(None, ledger, max_runs=5)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LedgerCallbackHandler(ledger, max_scopes=5)
    assert handler.open_runs == 0


def test_bad_options_are_value_errors_and_ledger_errors(ledger: Ledger) -> None:
    with pytest.raises(ValueError, match="max_scopes") as raised:
        instrument(None, ledger, max_scopes=0)
    assert isinstance(raised.value, LedgerError)
    with pytest.raises(LedgerError, match="max_scopes only"):
        LedgerCallbackHandler(ledger, max_scopes=5, max_runs=5)
    with pytest.raises(TypeError, match="Runnable or None") as wrong:
        instrument("not a runnable", ledger)  # type: ignore[call-overload]
    assert isinstance(wrong.value, LedgerError)


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("agentledger.integrations.langchain", "langchain_core", "langchain"),
        ("agentledger.integrations.crewai", "crewai", "crewai"),
        ("agentledger.integrations.livekit", "livekit", "livekit"),
    ],
)
def test_import_without_the_framework_names_the_extra(
    module: str, framework: str, extra: str
) -> None:
    """Runs in the main environment, where CrewAI and LiveKit are not installed at all."""
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        "from agentledger.protocol import LedgerError\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as error:\n"
        "    assert isinstance(error, LedgerError), type(error)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert f"pip install 'agentledger[{extra}]'" in done.stdout


def test_instrument_has_the_shape_of_every_integration() -> None:
    """README, "Integrations": (target, ledger) plus session_id=, metadata=, max_scopes=."""
    from ..shape import assert_one_shape

    assert_one_shape("agentledger.integrations.langchain")
