"""``agentledger decision EVENT_ID``: the decision-time view of one event.

Prints, for the step asked about: the model call behind it (model, parameters, system prompt
hash, and every message it received, in order), the inputs it read (tool results under the
tool call that produced them), the human approvals of its turn (what the interrupt asked, the
value given, who resumed), and the agent's state at the step's time. Every value from the
ledger is printed without rich markup, so nothing stored is interpreted. ``--json`` prints the
API's answer as it came.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import orjson
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import JsonOpt, KeyOpt, UrlOpt
from agentledger.client import DecisionView

__all__ = ["decision", "register", "render"]

#: The wire field a 422 names -> the argument it came from.
_ID: Final = {"event_id": "EVENT_ID"}
#: Characters of one message (or value) printed; ``--json`` has them whole.
_CUT: Final = 2000


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= _CUT else text[:_CUT] + f"… ({len(text)} characters, see --json)"


def _content(message: Any) -> tuple[str, str]:
    if isinstance(message, dict):
        role = str(message.get("role") or message.get("type") or "?")
        content = message.get("content")
        calls = message.get("tool_calls")
        body = _text(content) if content not in (None, "") else ""
        if calls:
            body += ("\n" if body else "") + "tool calls: " + _text(calls)
        return role, body
    return "?", _text(message)


def _heading(out: Console, title: str) -> None:
    """A section title (not a rule: a rule would span the whole pipe width)."""
    out.print(Text(f"\n{title}", style="bold"))


def _messages(out: Console, messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        out.print("  (no messages stored)")
        return
    if all(isinstance(m, list) for m in messages):  # a batch of prompts: print each
        for index, prompt in enumerate(messages):
            out.print(f"  prompt {index}:", markup=False)
            _messages(out, prompt)
        return
    table = Table(show_header=True, box=None, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("role")
    table.add_column("content", overflow="fold")
    for index, message in enumerate(messages):
        role, body = _content(message)
        table.add_row(Text(str(index)), Text(role), Text(body))  # stored text: no markup
    out.print(table)


def render(out: Console, view: DecisionView) -> None:
    """Print ``view`` for people (no stored text is read as rich markup)."""
    event = view.event

    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False)

    say(f"{event.event} {view.event_id} (agent {view.agent}, {view.timestamp})")
    call = view.model_call
    _heading(out, "model call")
    if call is None:
        for note in view.notes[:1]:
            say(f"no model call: {note}")
    else:
        say(f"{call.event_id} ({call.found})")
        say(f"model {call.model or '?'}" + (f" via {call.provider}" if call.provider else ""))
        say(f"prompt {call.prompt_hash or 'without a system prompt'}")
        if call.versions:
            say("versions " + ", ".join(f"{k}={v}" for k, v in call.versions.items()))
        if call.invocation_params:
            say("parameters " + _text(call.invocation_params))
        if call.tools:
            say("tools " + ", ".join(str(t) for t in call.tools))
        if call.erased:
            say("its record was erased (forget): the inputs are gone")
        _messages(out, call.messages)
        if call.output is not None:
            say(f"output ({call.output.get('event')}): {_text(call.output.get('text') or '')}")
    if view.reads:
        _heading(out, "inputs it read")
        for item in view.reads:
            if item.event is None:
                say(f"{item.kind} {item.event_id}: not stored or not readable with this key")
                continue
            head = f"{item.kind} {item.type} {item.event_id}"
            if item.tool_call is not None:
                args = item.tool_call.data.get("args")
                say(f"tool_call {item.tool_call.event_id}: {item.tool} {_text(args)}")
                head = "  → " + head
            data = item.event.data
            value = data.get("result", data.get("error", data.get("text", data)))
            say(f"{head}: {_text(value)}")
    _heading(out, "human approval")
    if not view.approvals:
        say("none in this step's turn")
    for approval in view.approvals:
        asked = approval.asked
        if approval.interrupt_id:
            say(f"interrupt {approval.interrupt_id}" + (f": {_text(asked)}" if asked else ""))
        who = approval.resumed_by or "not recorded"
        source = f" ({approval.resumed_by_source})" if approval.resumed_by_source else ""
        say(f"resumed {approval.resume_id} by {who}{source} with {_text(approval.value)}")
    _heading(out, "state at the step's time")
    state = view.state
    say(f"{state.event_count} events so far, {len(state.state)} keys")
    for key, value in state.state.items():
        say(f"  {key} = {_text(value)}")
    if not view.lineage_complete:
        say(f"causes not stored or not readable: {', '.join(view.missing) or 'bounds reached'}")


def decision(
    event_id: Annotated[str, typer.Argument(help="The step to look at (its full event id).")],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What an agent's step was decided from: the model call behind it and its exact inputs,
    the tool results it read, the human approval of its turn, the state at its time."""
    with _ledger(url, api_key, None, options=_ID) as ledger:
        view = ledger.decision(event_id)
    if as_json:
        _dump(view.raw)  # the API's answer as it came
        return
    render(_console(), view)


def register(app: typer.Typer) -> None:
    """Add ``decision`` to the root ``agentledger`` app."""
    app.command("decision")(decision)
