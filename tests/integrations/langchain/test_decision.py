"""The decision-time view (``GET /v1/events/{id}/decision``) of real LangChain and LangGraph
runs, on a real ``agentledger serve`` over SQLite and PostgreSQL, through the typed client.

* a ``create_agent`` run with a tool and a scripted model: the view of the answer holds the
  exact messages the final model call received, the tool result it read and its tool call;
* a LangGraph ``StateGraph`` with ``interrupt()`` and ``Command(resume=...)``: the view of the
  step after the resume names the interrupt, the value and who resumed (from the resumed run's
  ``metadata``: ``resumed_by``, ``langgraph_auth_user_id`` or ``user_id``);
* an unknown id is a 404, a key of another agent is refused like an unknown id, and an event
  no model call is behind (the user's message) gets a clear answer.

docs/pages/query.md, "The decision behind an event"; docs/pages/integrations.md, "Who resumed
an interrupted run".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, TypedDict

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from _events import Stored, read_events
from agentledger.client import Ledger, NotFoundError
from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.protocol import vocabulary as v
from agentledger.testing.chat_models import ScriptedChatModel

pytestmark = pytest.mark.langchain


class Run:
    """A ledger of one agent on one store kind and a handler logging to it."""

    def __init__(self, server: Any, agent: str) -> None:
        self.server = server
        self.agent = agent
        self.ledger = Ledger(url=server.url, api_key=server.api_key, agent=agent, spill_dir=None)
        self.handler = LedgerCallbackHandler(self.ledger)

    def stored(self) -> Stored:
        assert self.ledger.flush(timeout_s=20.0) is not None
        return Stored(read_events(self.server.url, self.server.headers(), self.agent))


@pytest.fixture
def run(store_server: Any, agent_name: str) -> Iterator[Run]:
    found = Run(store_server, agent_name)
    yield found
    found.ledger.close(timeout_s=10.0)


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "shipped <b>today</b>"}


class Recorder:
    """A scripted model's ``respond``: asks for ``lookup_order`` once, then answers, and keeps
    every conversation it was called with (what the model really received)."""

    def __init__(self) -> None:
        self.received: list[list[BaseMessage]] = []

    def __call__(self, messages: Sequence[BaseMessage]) -> AIMessage | str:
        self.received.append(list(messages))
        if len(self.received) == 1:
            call = {"name": "lookup_order", "args": {"order_id": "A1"}, "id": "call-a1"}
            return AIMessage("", tool_calls=[call])
        return "A1 has shipped today."


def _roles_and_text(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in messages]


def _stored_roles_and_text(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        out.append((str(m.get("role") or m.get("type")), text))
    return out


def test_the_answer_shows_the_final_model_calls_messages_and_the_tool_result_it_read(
    run: Run,
) -> None:
    """query.md, "The decision behind an event": the answer's view holds the exact messages
    of the model call that produced it, the tool results it read with their tool calls, and
    the agent's state at the answer's time."""
    run.ledger.log(v.STATE_SET, {"key": "plan", "value": "pro"})
    assert run.ledger.flush(timeout_s=20.0) is not None
    recorder = Recorder()
    model = ScriptedChatModel(respond=recorder, usage=False)
    agent = create_agent(model, [lookup_order], system_prompt="You are the order desk.")
    config: RunnableConfig = {"callbacks": [run.handler]}
    agent.invoke({"messages": [("user", "Where is order A1?")]}, config=config)
    events = run.stored()
    (answer,) = events.of(v.ASSISTANT_RESPONSE)
    first_start, second_start = events.of(v.LLM_START)
    (result,) = events.of(v.TOOL_RESULT)
    (call,) = events.of(v.TOOL_CALL)

    view = run.ledger.decision(answer["event_id"])

    assert view.event.event == v.ASSISTANT_RESPONSE and view.agent == run.agent
    model_call = view.model_call
    assert model_call is not None and model_call.event_id == second_start["event_id"]
    # exactly what the final call received: the system prompt, the question, the model's tool
    # request and the tool's answer, in order
    assert model_call.messages == second_start["data"]["messages"]
    received = _roles_and_text(recorder.received[1])
    assert _stored_roles_and_text(model_call.messages) == received
    assert [role for role, _ in received] == ["system", "human", "ai", "tool"]
    assert model_call.system_prompt == "You are the order desk."
    assert model_call.prompt_hash is not None and model_call.prompt_hash.startswith("sha256:")
    assert model_call.model == "scripted-chat-model"
    assert model_call.end is not None and model_call.end.event == v.LLM_END
    assert model_call.output is not None and model_call.output["text"] == "A1 has shipped today."
    # the tool result it read, with the tool call behind it
    (read,) = view.tool_results
    assert read.event_id == result["event_id"] and read.kind == v.EDGE_READ
    assert read.tool == "lookup_order" and read.event is not None
    assert "shipped <b>today</b>" in str(read.event.data["result"])
    assert read.tool_call is not None and read.tool_call.event_id == call["event_id"]
    assert read.tool_call.data["args"] == {"order_id": "A1"}
    # the state at the answer's time; no human approval in this run
    assert view.state.state == {"plan": "pro"} and view.state.agent == run.agent
    assert view.approvals == () and view.approval is None
    assert view.lineage_complete

    # the tool call's view: the model call that asked for it (the first one)
    asked = run.ledger.decision(call["event_id"])
    assert asked.model_call is not None
    assert asked.model_call.event_id == first_start["event_id"]
    assert _stored_roles_and_text(asked.model_call.messages) == _roles_and_text(
        recorder.received[0]
    )
    # a model call's own view: itself, and what it read
    own = run.ledger.decision(second_start["event_id"])
    assert own.model_call is not None and own.model_call.event_id == second_start["event_id"]
    assert own.model_call.found == "the event is the model call"
    assert [r.event_id for r in own.tool_results] == [result["event_id"]]


def test_a_user_message_has_no_model_call_and_says_so(run: Run) -> None:
    """query.md, "The decision behind an event": an event no model call is behind answers
    with ``model_call: null`` and a note, not an error."""
    model = ScriptedChatModel(replies=["hello"], usage=False)
    create_agent(model, []).invoke({"messages": [("user", "hi")]}, {"callbacks": [run.handler]})
    events = run.stored()
    (message,) = events.of(v.USER_MESSAGE)
    view = run.ledger.decision(message["event_id"])
    assert view.model_call is None and view.raw["has_model_call"] is False
    assert view.reads == () and view.tool_results == ()
    assert "user_message" in view.notes[0] and "not the output of a model call" in view.notes[0]


def test_unknown_ids_are_404_and_another_agents_key_is_refused(run: Run) -> None:
    """query.md, "The decision behind an event": 404 for an id never stored, and a key bound
    to another agent gets exactly the answer of an id never stored."""
    model = ScriptedChatModel(replies=["hello"], usage=False)
    create_agent(model, []).invoke({"messages": [("user", "hi")]}, {"callbacks": [run.handler]})
    (answer,) = run.stored().of(v.ASSISTANT_RESPONSE)
    unknown = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(NotFoundError):
        run.ledger.decision(unknown)
    base = run.server.url
    other = f"other-{run.agent}"
    created = httpx.post(
        f"{base}/v1/keys",
        json={"name": f"k-{other}", "agent": other, "scope": "read_only"},
        headers=run.server.headers(),
        timeout=10,
    )
    assert created.status_code == 201, created.text
    headers = {"Authorization": f"Bearer {created.json()['key']}"}
    theirs = httpx.get(f"{base}/v1/events/{answer['event_id']}/decision", headers=headers)
    never = httpx.get(f"{base}/v1/events/{unknown}/decision", headers=headers)
    assert theirs.status_code == never.status_code == 404
    assert theirs.json()["detail"].replace(answer["event_id"], "ID") == never.json()[
        "detail"
    ].replace(unknown, "ID")
    bad = httpx.get(f"{base}/v1/events/not-an-id/decision", headers=run.server.headers())
    assert bad.status_code == 422 and "event_id" in bad.text
    schema = httpx.get(f"{base}/openapi.json", timeout=30).json()
    route = schema["paths"]["/v1/events/{event_id}/decision"]["get"]
    assert set(route["responses"]) >= {"200", "404", "422"}
    assert "DecisionOut" in str(route["responses"]["200"])
    assert {"model_call", "approvals", "state"} <= set(
        schema["components"]["schemas"]["DecisionOut"]["properties"]
    )


# --------------------------------------------------------------------- interrupt and resume


class _Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _review_graph(model: ScriptedChatModel) -> Any:
    """draft (a model call) -> approve (waits for a human: ``interrupt()``) -> send (a model
    call that reads the reviewer's verdict)."""

    def draft(state: _Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: _Chat) -> dict[str, Any]:
        verdict = interrupt({"question": "send this refund?"})
        return {"messages": [HumanMessage(f"reviewer: {verdict}")]}

    def send(state: _Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(_Chat)
    graph.add_node("draft", draft)
    graph.add_node("approve", approve)
    graph.add_node("send", send)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "approve")
    graph.add_edge("approve", "send")
    graph.add_edge("send", END)
    return graph.compile(checkpointer=InMemorySaver(), name="refunds")


@pytest.mark.parametrize(
    ("resume_config", "who", "source"),
    [
        ({"metadata": {"user_id": "alice"}}, "alice", "metadata.user_id"),
        (
            {"metadata": {"langgraph_auth_user_id": "u-7", "user_id": "alice"}},
            "u-7",
            "metadata.langgraph_auth_user_id",
        ),
        ({"metadata": {"resumed_by": "bob@example.com"}}, "bob@example.com", "metadata.resumed_by"),
        ({}, None, None),
    ],
    ids=["user_id", "resumed_by", "auth-user-first", "nobody-recorded"],
)
def test_the_step_after_a_resume_names_the_interrupt_the_value_and_who_resumed(
    run: Run, resume_config: dict[str, Any], who: str | None, source: str | None
) -> None:
    """integrations.md, "Who resumed an interrupted run"; query.md, "The decision behind an
    event" (approvals)."""
    model = ScriptedChatModel(replies=["Refund 20 EUR for A1.", "Refund sent."], usage=False)
    app = _review_graph(model)
    thread = {"thread_id": f"refund-{run.agent}"}
    config: RunnableConfig = {"callbacks": [run.handler], "configurable": dict(thread)}
    first = app.invoke({"messages": [("user", "refund order A1")]}, config)
    assert "__interrupt__" in first
    resumed: dict[str, Any] = {"callbacks": [run.handler]}
    resumed["configurable"] = dict(thread)
    if "metadata" in resume_config:
        resumed["metadata"] = resume_config["metadata"]
    final = app.invoke(Command(resume={"approved": True, "note": "<ok>"}), resumed)
    assert final["messages"][-1].text == "Refund sent."
    events = run.stored()

    message, resume = events.of(v.USER_MESSAGE)
    assert resume["data"]["resume"] == {"approved": True, "note": "<ok>"}
    assert resume["data"].get("resumed_by") == who
    assert resume["data"].get("resumed_by_source") == source
    stop = events.one(v.INTERRUPTED, name="approve")
    answers = events.of(v.ASSISTANT_RESPONSE)
    assert [a["data"]["text"] for a in answers][-1] == "Refund sent.", answers
    answer = answers[-1]
    send_step = events.one(v.STEP_START, name="send")
    _, send_call = events.of(v.LLM_START)

    for step in (answer, send_step, send_call):  # every step after the resume
        view = run.ledger.decision(step["event_id"])
        approval = view.approval
        assert approval is not None, step
        assert len(view.approvals) == 1
        assert approval.interrupt_id == stop["event_id"]
        assert approval.interrupt is not None and approval.interrupt.event == v.INTERRUPTED
        assert approval.asked == [
            {"id": stop["data"]["interrupts"][0]["id"], "value": {"question": "send this refund?"}}
        ]
        assert approval.resume_id == resume["event_id"]
        assert approval.value == {"approved": True, "note": "<ok>"}
        assert approval.resumed_by == who and approval.resumed_by_source == source
    # the answer's model call is the one after the resume; it read the resume
    view = run.ledger.decision(answer["event_id"])
    assert view.model_call is not None and view.model_call.event_id == send_call["event_id"]
    assert resume["event_id"] in {r.event_id for r in view.reads}
    # the dashboard's event page names the same approval (values escaped)
    page = httpx.get(
        f"{run.server.url}/ui/events/{answer['event_id']}",
        cookies=run.server.ui_cookies(),
        timeout=30,
    ).text
    assert 'id="decision-approvals"' in page and stop["event_id"] in page
    assert f'<b class="who">{who or "(not recorded)"}</b>' in page
    assert "&#34;&lt;ok&gt;&#34;" in page and '"<ok>"' not in page
    # a step no model computed: approvals yes, model call no (and it says why)
    step_view = run.ledger.decision(send_step["event_id"])
    assert step_view.model_call is None and step_view.notes
    # before the interrupt: no approval
    draft_call, _ = events.of(v.LLM_START)
    assert run.ledger.decision(draft_call["event_id"]).approvals == ()
    # the resume itself: a human's input, and its own approval
    own = run.ledger.decision(resume["event_id"])
    assert own.model_call is None and "resume" in own.notes[0]
    assert own.approval is not None and own.approval.interrupt_id == stop["event_id"]
    assert message["event_id"] not in {a.resume_id for a in own.approvals}


# --------------------------------------------------------------------- CLI and dashboard


def test_the_cli_and_the_event_page_show_the_decision_with_stored_text_escaped(
    run: Run,
) -> None:
    """README, "Command line" (`decision ID`); query.md, "The decision behind an event"
    (`--json` as the API answered, the dashboard's "Decision" section); dashboard.md, the
    Event item."""
    from typer.testing import CliRunner

    from agentledger.cli import app

    recorder = Recorder()
    agent = create_agent(ScriptedChatModel(respond=recorder, usage=False), [lookup_order])
    question = "Where is A1? <script>alert(1)</script> [bold]x[/bold]"
    agent.invoke({"messages": [("user", question)]}, {"callbacks": [run.handler]})
    events = run.stored()
    (answer,) = events.of(v.ASSISTANT_RESPONSE)
    (message,) = events.of(v.USER_MESSAGE)
    (call,) = events.of(v.TOOL_CALL)
    args = ["--url", run.server.url, "--api-key", run.server.api_key]

    shown = CliRunner().invoke(app, ["decision", answer["event_id"], *args])
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert out.splitlines()[0].startswith(f"assistant_response {answer['event_id']}")
    assert question in out  # the message exactly as stored, rich markup not applied
    assert "model scripted-chat-model" in out
    assert f"tool_call {call['event_id']}: lookup_order" in out and '"order_id":"A1"' in out
    assert "none in this step's turn" in out
    as_json = CliRunner().invoke(app, ["decision", answer["event_id"], "--json", *args])
    assert as_json.exit_code == 0, as_json.output
    api = httpx.get(
        f"{run.server.url}/v1/events/{answer['event_id']}/decision",
        headers=run.server.headers(),
        timeout=30,
    ).json()
    assert orjson_loads(as_json.stdout) == api
    none = CliRunner().invoke(app, ["decision", message["event_id"], *args])
    assert none.exit_code == 0 and "no model call: a user_message is input" in none.stdout
    missing = CliRunner().invoke(app, ["decision", "00000000-0000-4000-8000-000000000000", *args])
    assert missing.exit_code == 1 and "no event" in missing.output

    page = httpx.get(
        f"{run.server.url}/ui/events/{answer['event_id']}",
        cookies=run.server.ui_cookies(),
        timeout=30,
    )
    assert page.status_code == 200, page.text[:500]
    html = page.text
    assert 'id="decision"' in html and 'id="decision-messages"' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert "shipped &lt;b&gt;today&lt;/b&gt;" in html  # the tool result it read, escaped
    assert call["event_id"] in html
    user_page = httpx.get(
        f"{run.server.url}/ui/events/{message['event_id']}",
        cookies=run.server.ui_cookies(),
        timeout=30,
    )
    assert 'id="decision-no-model"' in user_page.text


def orjson_loads(text: str) -> Any:
    import orjson

    return orjson.loads(text)
