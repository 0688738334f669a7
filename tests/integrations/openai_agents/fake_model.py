"""A scripted, offline model for the OpenAI Agents SDK: the SDK's ``Model`` and
``ModelProvider`` interfaces, answering each call with the next scripted output.

Like the SDK's own Responses model, each call runs inside a ``response`` span holding the
request's input, the ``Response`` and its usage, which is what a tracing processor reads.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agents import Model, ModelProvider, ModelResponse, ModelSettings, ModelTracing, Usage
from agents.tracing import response_span
from agents.usage import model_usage_to_span_usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

MODEL = "fake-gpt"


def say(text: str) -> list[Any]:
    return [
        ResponseOutputMessage(
            id="msg-1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        )
    ]


def call(name: str, args: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc-{call_id}",
        call_id=call_id,
        name=name,
        arguments=json.dumps(args),
        type="function_call",
        status="completed",
    )


@dataclass
class ScriptedModel(Model):
    """Answers call *n* with ``script[n]`` (a list of output items); records every input."""

    script: list[list[Any]]
    name: str = MODEL
    inputs: list[Any] = field(default_factory=list)
    tokens: tuple[int, int] = (20, 7)

    def _response(self, system: str | None, tools: list[Any]) -> Response:
        output = self.script.pop(0)
        return Response(
            id=f"resp-{len(self.inputs)}",
            created_at=0,
            model=self.name,
            object="response",
            instructions=system,
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[
                {"type": "function", "name": t.name, "parameters": {}, "strict": False}
                for t in tools
                if hasattr(t, "name")
            ],
            status="completed",
        )

    def _usage(self) -> Usage:
        return Usage(
            requests=1,
            input_tokens=self.tokens[0],
            output_tokens=self.tokens[1],
            total_tokens=sum(self.tokens),
            input_tokens_details=InputTokensDetails(cached_tokens=4, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        self.inputs.append(input)
        with response_span(disabled=tracing.is_disabled()) as span:
            response = self._response(system_instructions, [*tools, *handoffs])
            usage = self._usage()
            span.span_data.usage = model_usage_to_span_usage(usage)
            if tracing.include_data():
                span.span_data.response = response
                span.span_data.input = input
            return ModelResponse(output=response.output, usage=usage, response_id=response.id)

    async def stream_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> AsyncIterator[Any]:
        self.inputs.append(input)
        with response_span(disabled=tracing.is_disabled()) as span:
            response = self._response(system_instructions, [*tools, *handoffs])
            usage = self._usage()
            response.usage = None
            span.span_data.usage = model_usage_to_span_usage(usage)
            if tracing.include_data():
                span.span_data.response = response
                span.span_data.input = input
            yield ResponseCompletedEvent(
                type="response.completed", response=response, sequence_number=0
            )


@dataclass
class ScriptedProvider(ModelProvider):
    """Hands out the scripted models by name (``None``: the first)."""

    models: dict[str, ScriptedModel]

    def get_model(self, model_name: str | None) -> Model:
        if model_name is None:
            return next(iter(self.models.values()))
        return self.models[model_name]


@dataclass
class ChatShapedModel(ScriptedModel):
    """The same script, reported the way the SDK's Chat Completions model reports a call: a
    ``generation`` span with the request's messages, the reply message and usage."""

    async def get_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        **kwargs: Any,
    ) -> ModelResponse:
        from agents.models.chatcmpl_converter import Converter
        from agents.tracing import generation_span

        self.inputs.append(input)
        messages = Converter.items_to_messages(input)
        if system_instructions:
            messages.insert(0, {"role": "system", "content": system_instructions})
        with generation_span(model=self.name, input=messages) as span:
            response = self._response(system_instructions, [*tools, *handoffs])
            reply: dict[str, Any] = {"role": "assistant", "content": None}
            for item in response.output:
                if item.type == "function_call":
                    reply.setdefault("tool_calls", []).append(
                        {
                            "id": item.call_id,
                            "type": "function",
                            "function": {"name": item.name, "arguments": item.arguments},
                        }
                    )
                else:
                    reply["content"] = item.content[0].text
            span.span_data.output = [reply]
            span.span_data.usage = {"input_tokens": self.tokens[0], "output_tokens": self.tokens[1]}
            return ModelResponse(output=response.output, usage=self._usage(), response_id=None)
