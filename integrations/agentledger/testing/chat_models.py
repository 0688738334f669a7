"""An offline LangChain chat model for tests, examples and the demo (extra ``langchain``).

:class:`ScriptedChatModel` replays scripted replies, tool calls included, or asks a function
for each reply; it reports token usage as providers do, so a logged run looks like a real one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
except ImportError as error:  # pragma: no cover - exercised without the extra only
    raise ImportError(
        "agentledger.testing.ScriptedChatModel needs LangChain: "
        "pip install 'agentledger[langchain]'"
    ) from error
from pydantic import Field, PrivateAttr

from agentledger.protocol import LedgerError

__all__ = ["Respond", "ScriptExhaustedError", "ScriptedChatModel", "estimate_tokens"]

#: A reply function: the conversation so far -> the next reply (a string is a plain answer).
Respond = Callable[[Sequence[BaseMessage]], AIMessage | str]


class ScriptExhaustedError(LedgerError, IndexError):
    """The model was called once more than it has scripted replies."""


def estimate_tokens(text: str) -> int:
    """A rough token count: one token per four characters, at least one."""
    return max(1, len(text) // 4)


class ScriptedChatModel(BaseChatModel):
    """A chat model that needs no network and no key.

    Give it either ``replies`` (one per call, in order; a string is a plain answer, an
    ``AIMessage`` may carry ``tool_calls``) or ``respond`` (called with the conversation on
    every call, e.g. to ask for the next tool from the tool results already present).

    A reply without ``usage_metadata`` gets an estimate (:func:`estimate_tokens` of every
    message in, of the text and tool arguments out; the prompt up to the previous model turn
    counted as a cache read), unless ``usage=False``. ``bind_tools`` returns the model itself:
    the script knows its tools by name. Calls are serialised; the model is reusable across
    threads but its replies are consumed once.

    Raises (when called):
        ScriptExhaustedError: every scripted reply was used already.
        ValueError: both ``replies`` and ``respond`` were given.
    """

    #: ``AIMessage`` or ``str`` items (typed ``Any``: LangChain's message validator rejects
    #: a string before a union could fall back to ``str``).
    replies: list[Any] = Field(default_factory=list)
    respond: Respond | None = None
    model_name: str = "scripted-chat-model"
    usage: bool = True

    _position: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return self.model_name

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """The model itself: tools are known by name already."""
        return self

    def _next_reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        if self.respond is not None and self.replies:
            raise ValueError("ScriptedChatModel takes replies or respond, not both")
        if self.respond is not None:
            reply: AIMessage | str = self.respond(messages)
        else:
            with self._lock:
                if self._position >= len(self.replies):
                    raise ScriptExhaustedError(
                        f"ScriptedChatModel: all {len(self.replies)} scripted replies were used"
                    )
                reply = self.replies[self._position]
                self._position += 1
        if isinstance(reply, str):
            return AIMessage(content=reply)
        if not isinstance(reply, AIMessage):
            raise TypeError(f"a scripted reply must be an AIMessage or a str, got {reply!r}")
        return reply.model_copy(deep=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._next_reply(messages)
        if self.usage and reply.usage_metadata is None:
            prompt = sum(estimate_tokens(m.text) for m in messages)
            last_ai = max(
                (i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=0
            )
            cached = sum(estimate_tokens(m.text) for m in messages[:last_ai])
            args = json.dumps([call["args"] for call in reply.tool_calls])
            output = estimate_tokens(reply.text + args)
            reply.usage_metadata = {
                "input_tokens": prompt,
                "output_tokens": output,
                "total_tokens": prompt + output,
                "input_token_details": {"cache_read": cached},
            }
        reply.response_metadata = {
            "model_name": self.model_name,
            "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            **reply.response_metadata,
        }
        return ChatResult(generations=[ChatGeneration(message=reply)])
