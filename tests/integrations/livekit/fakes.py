"""An offline, scripted ``livekit.agents.llm.LLM``.

Each call to ``chat()`` plays the next scripted reply: text, tool calls and a usage chunk,
streamed with a short pause between chunks as a real provider would. No network, no STT, TTS,
VAD or room.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from livekit.agents import Agent, APIConnectionError, RunContext, function_tool, llm
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions


@dataclass
class Reply:
    """One scripted model response.

    Attributes:
        request_id: provider response id (``ChatChunk.id``; LiveKit's ``LLMMetrics.request_id``).
        text: streamed assistant text (may be empty).
        calls: tool calls ``(name, args, call_id)``; ``args`` is a dict, or a str sent as-is
            (to script malformed JSON).
        usage: ``(prompt_tokens, completion_tokens, cached_tokens)``, or ``None`` for no usage.
        fail: raise ``APIConnectionError`` (non-retryable) instead of answering.
        delay_s: pause before each chunk.
    """

    request_id: str
    text: str = ""
    calls: Sequence[tuple[str, dict[str, Any] | str, str]] = ()
    usage: tuple[int, int, int] | None = (20, 5, 0)
    fail: bool = False
    delay_s: float = 0.005


@dataclass
class Script:
    replies: list[Reply] = field(default_factory=list)
    requests: list[llm.ChatContext] = field(default_factory=list)


class FakeStream(llm.LLMStream):
    def __init__(self, model: FakeLLM, reply: Reply, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self._reply = reply

    async def _run(self) -> None:
        reply = self._reply
        await asyncio.sleep(reply.delay_s)
        if reply.fail:
            raise APIConnectionError("scripted connection failure", retryable=False)
        if reply.text:
            for word in reply.text.split(" "):
                chunk_text = word if not self._sent_text else " " + word
                self._sent_text = True
                self._event_ch.send_nowait(
                    llm.ChatChunk(
                        id=reply.request_id,
                        delta=llm.ChoiceDelta(role="assistant", content=chunk_text),
                    )
                )
                await asyncio.sleep(reply.delay_s)
        if reply.calls:
            calls = [
                llm.FunctionToolCall(
                    name=name,
                    arguments=args if isinstance(args, str) else json.dumps(args),
                    call_id=call_id,
                )
                for name, args, call_id in reply.calls
            ]
            self._event_ch.send_nowait(
                llm.ChatChunk(
                    id=reply.request_id,
                    delta=llm.ChoiceDelta(role="assistant", tool_calls=calls),
                )
            )
            await asyncio.sleep(reply.delay_s)
        if reply.usage is not None:
            prompt, completion, cached = reply.usage
            self._event_ch.send_nowait(
                llm.ChatChunk(
                    id=reply.request_id,
                    usage=llm.CompletionUsage(
                        prompt_tokens=prompt,
                        completion_tokens=completion,
                        prompt_cached_tokens=cached,
                        total_tokens=prompt + completion,
                    ),
                )
            )

    _sent_text = False


class FakeLLM(llm.LLM):
    """Plays ``replies`` in order, one per model request; records each request's context."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        super().__init__()
        self.script = Script(list(replies))

    @property
    def model(self) -> str:
        return "fake-model"

    @property
    def provider(self) -> str:
        return "fake-provider"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: Any = None,
        tool_choice: Any = None,
        extra_kwargs: Any = None,
    ) -> FakeStream:
        if not self.script.replies:
            raise AssertionError("the scripted model ran out of replies")
        self.script.requests.append(chat_ctx.copy())
        return FakeStream(
            self,
            self.script.replies.pop(0),
            chat_ctx=chat_ctx,
            tools=tools or [],
            conn_options=conn_options,
        )


class BillingAgent(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You handle billing.")

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="Route the caller.")

    @function_tool
    async def transfer_to_billing(self, context: RunContext) -> tuple[Agent, str]:
        """Hand the caller to the billing agent."""
        return BillingAgent(), "Transferring you to billing."


#: A caller handed from the front desk to billing by a tool, then a second turn with billing:
#: the model replies in order, and the user's two turns.
HANDOFF_REPLIES = (
    Reply("req-1", calls=[("transfer_to_billing", {}, "call-h")]),
    Reply("req-2", text="One moment."),
    Reply("req-3", text="Billing here, how can I help?"),
    Reply("req-4", text="You owe 10 euros."),
)
HANDOFF_TURNS = ("I have a billing question.", "How much do I owe?")
