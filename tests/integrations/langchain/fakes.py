"""Offline chat models for the tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from agentledger.testing.chat_models import ScriptedChatModel

USAGE = {"input_tokens": 11, "output_tokens": 4, "total_tokens": 15}


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    """The package's scripted model, replaying ``replies`` (usage only where a reply has it)."""
    return ScriptedChatModel(replies=list(replies), usage=False)


class EchoModel(BaseChatModel):
    """Answers ``echo: <last message>`` with usage on ``usage_metadata``; any number of calls."""

    @property
    def _llm_type(self) -> str:
        return "echo-model"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = f"echo: {messages[-1].text}"
        reply = AIMessage(content=text, usage_metadata=dict(USAGE))  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=reply)])


class StreamingModel(BaseChatModel):
    """Streams ``words`` one chunk each; the last chunk carries usage when ``with_usage``."""

    words: list[str] = ["streamed", " ", "answer"]
    with_usage: bool = True

    @property
    def _llm_type(self) -> str:
        return "streaming-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError("stream only")

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for index, word in enumerate(self.words):
            last = index == len(self.words) - 1
            usage = USAGE if (last and self.with_usage) else None
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content=word, usage_metadata=usage)  # type: ignore[arg-type]
            )
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk


OPENAI_LLM_OUTPUT: dict[str, Any] = {
    "token_usage": {
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 3},
    },
    "model_name": "legacy-1",
}

#: Anthropic's shape: ``input_tokens`` excludes the cache parts.
ANTHROPIC_LLM_OUTPUT: dict[str, Any] = {
    "usage": {
        "input_tokens": 5,
        "output_tokens": 2,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
    },
    "model": "claude-like-1",
}


class LegacyUsageModel(BaseChatModel):
    """Reports usage only in ``llm_output`` (a provider's legacy shape), not on the message."""

    llm_output: dict[str, Any] = OPENAI_LLM_OUTPUT
    text: str = "legacy"

    @property
    def _llm_type(self) -> str:
        return "legacy-usage-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=self.text))],
            llm_output=self.llm_output,
        )


class FailingModel(BaseChatModel):
    """Raises ``RuntimeError("model is down")`` on every call."""

    @property
    def _llm_type(self) -> str:
        return "failing-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise RuntimeError("model is down")
