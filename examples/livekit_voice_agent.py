"""A LiveKit Agents voice agent logged to agentledger with one call, then printed as a tree.

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/livekit_voice_agent.py

``AGENTLEDGER_URL`` (default ``http://127.0.0.1:8765``) and ``AGENTLEDGER_AGENT`` are read
too. Needs ``pip install 'agentledger[livekit]'``. Everything runs offline: the model is a
scripted ``llm.LLM`` that streams its replies chunk by chunk (it asks for two tools at once,
then books a table), and the user's turns are typed with ``session.run(user_input=...)``, so
no LiveKit server, room, STT, TTS or API key is needed. In production the same
``instrument(session, ledger)`` line goes before ``session.start(...)`` in
the job entrypoint, and the session id defaults to the LiveKit job id.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from livekit.agents import Agent, AgentSession, RunContext, function_tool, llm
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions

from agentledger.client import Event, Ledger
from agentledger.integrations.livekit import instrument

# (text, tool calls, (prompt tokens, completion tokens, cached prompt tokens))
Scripted = tuple[str, Sequence[tuple[str, dict[str, Any]]], tuple[int, int, int]]

SCRIPT: list[Scripted] = [
    (
        "",
        [("check_availability", {"date": "Friday", "party": 4}), ("opening_hours", {})],
        (310, 38, 0),
    ),
    ("Friday at 8 pm works for four. Shall I book it?", [], (402, 14, 256)),
    ("", [("book_table", {"date": "Friday", "time": "20:00", "party": 4})], (431, 22, 384)),
    ("Booked: Friday, 8 pm, four people, under Ana.", [], (470, 13, 384)),
]


class ScriptedStream(llm.LLMStream):
    def __init__(self, model: ScriptedLLM, reply: Scripted, request_id: str, **kw: Any) -> None:
        super().__init__(model, **kw)
        self._reply, self._request_id = reply, request_id

    async def _run(self) -> None:
        text, calls, (prompt, completion, cached) = self._reply
        for i, word in enumerate(text.split()):
            await asyncio.sleep(0.01)
            delta = llm.ChoiceDelta(role="assistant", content=word if i == 0 else " " + word)
            self._event_ch.send_nowait(llm.ChatChunk(id=self._request_id, delta=delta))
        if calls:
            tool_calls = [
                llm.FunctionToolCall(
                    name=name, arguments=json.dumps(args), call_id=f"{self._request_id}-{n}"
                )
                for n, (name, args) in enumerate(calls)
            ]
            delta = llm.ChoiceDelta(role="assistant", tool_calls=tool_calls)
            self._event_ch.send_nowait(llm.ChatChunk(id=self._request_id, delta=delta))
        usage = llm.CompletionUsage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            prompt_cached_tokens=cached,
            total_tokens=prompt + completion,
        )
        self._event_ch.send_nowait(llm.ChatChunk(id=self._request_id, usage=usage))


class ScriptedLLM(llm.LLM):
    """An offline model that plays :data:`SCRIPT`, one reply per request."""

    def __init__(self, script: Sequence[Scripted]) -> None:
        super().__init__()
        self._script = list(script)
        self._requests = 0

    @property
    def model(self) -> str:
        return "scripted-voice-model"

    @property
    def provider(self) -> str:
        return "offline"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        **kwargs: Any,
    ) -> ScriptedStream:
        self._requests += 1
        return ScriptedStream(
            self,
            self._script.pop(0),
            f"resp_{self._requests}",
            chat_ctx=chat_ctx,
            tools=tools or [],
            conn_options=conn_options,
        )


class RestaurantHost(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You take table reservations by phone. Be brief.")

    @function_tool
    async def check_availability(self, context: RunContext, date: str, party: int) -> str:
        """Free tables on a date for a party size."""
        return f"{date}: 19:30 and 20:00 free for {party}"

    @function_tool
    async def opening_hours(self, context: RunContext) -> str:
        """Today's opening hours."""
        return "17:00-23:00"

    @function_tool
    async def book_table(self, context: RunContext, date: str, time: str, party: int) -> str:
        """Book a table."""
        return f"booking #A-1042: {date} {time}, {party} people"


async def converse(ledger: Ledger) -> str | None:
    async with AgentSession[Any](llm=ScriptedLLM(SCRIPT)) as session:
        observer = instrument(session, ledger)  # the one call
        await session.start(RestaurantHost())
        await session.run(user_input="Hi, a table for four on Friday evening?")
        await session.run(user_input="Yes please, 8 pm, name is Ana.")
    return observer.session_id


def label(event: Event) -> str:
    data = event.data
    if event.event in ("tool_call", "tool_result", "tool_error"):
        detail = data.get("args") if event.event == "tool_call" else data.get("result")
        return f"{data.get('tool')} {json.dumps(detail)}"
    if event.event == "llm_end":
        usage = data.get("token_usage") or {}
        return (
            f"{data.get('request_id')} in={usage.get('input_tokens')} "
            f"cached={usage.get('cache_read_tokens')} out={usage.get('output_tokens')} "
            f"ttft={data.get('ttft_ms')}ms"
        )
    if event.event in ("user_message", "assistant_response"):
        return repr(data.get("text"))
    return str(data.get("name") or data.get("model") or data.get("reason") or "")


def print_tree(events: list[Event]) -> None:
    children: dict[str | None, list[Event]] = {}
    for event in events:
        children.setdefault(event.parent_id, []).append(event)

    def walk(parent: str | None, depth: int) -> None:
        for event in children.get(parent, []):
            print(f"{'  ' * depth}{event.event}  {label(event)}")
            walk(event.event_id, depth + 1)

    walk(None, 0)


def main() -> None:
    with Ledger(agent=os.environ.get("AGENTLEDGER_AGENT", "restaurant-voice")) as ledger:
        session_id = asyncio.run(converse(ledger))
        ledger.flush(timeout_s=10)
        assert session_id is not None
        events = ledger.replay(session_id)
        print(f"session {session_id}: {len(events)} events")
        print_tree(events)
        print("tools called:", sorted(e.data["tool"] for e in events if e.event == "tool_call"))


if __name__ == "__main__":
    main()
