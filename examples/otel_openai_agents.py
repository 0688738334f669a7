"""Send OpenTelemetry from an OpenAI Agents SDK app to agentledger, through OpenInference
(``openinference-instrumentation-openai-agents``).

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/otel_openai_agents.py

The model is scripted offline (``ScriptedModel`` below: a tool call, then the answer), reported
the way the SDK's own Responses model reports a call, so the instrumentation sees what it
would see with a real model. Nothing of agentledger is imported.
"""

from __future__ import annotations

import json
import os
from typing import Any

from agents import (
    Agent,
    Model,
    ModelProvider,
    ModelResponse,
    RunConfig,
    Runner,
    Usage,
    function_tool,
)
from agents.tracing import response_span
from agents.usage import model_usage_to_span_usage
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_usage import (
    InputTokensDetails,
    OutputTokensDetails,
    ResponseUsage,
)
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

URL = os.environ.get("AGENTLEDGER_URL", "http://127.0.0.1:8765")
AGENT = os.environ.get("AGENTLEDGER_AGENT", "travel-bot")
KEY = os.environ.get("AGENTLEDGER_API_KEY", "dev")


class ScriptedModel(Model):
    """A stand-in for a real model: asks for ``get_train`` once, then answers."""

    def __init__(self) -> None:
        self.calls = 0

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.calls += 1
        output: list[Any]
        if self.calls == 1:
            output = [
                ResponseFunctionToolCall(
                    id="fc-1",
                    call_id="call_train_1",
                    name="get_train",
                    arguments=json.dumps({"city": "Lyon"}),
                    type="function_call",
                    status="completed",
                )
            ]
        else:
            text = ResponseOutputText(
                text="Take the 08:12 train to Lyon.", type="output_text", annotations=[]
            )
            output = [
                ResponseOutputMessage(
                    id="msg-1", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        usage = Usage(
            requests=1,
            input_tokens=40 + 10 * self.calls,
            output_tokens=8,
            total_tokens=48 + 10 * self.calls,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
        response = Response(
            id=f"resp-{self.calls}",
            created_at=0,
            model="scripted-model",
            object="response",
            instructions=system_instructions,
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            status="completed",
            usage=ResponseUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.total_tokens,
                input_tokens_details=usage.input_tokens_details,
                output_tokens_details=usage.output_tokens_details,
            ),
        )
        # what the SDK's Responses model records for a call: its input, output and usage
        with response_span(disabled=tracing.is_disabled()) as span:
            span.span_data.usage = model_usage_to_span_usage(usage)
            span.span_data.response = response
            span.span_data.input = input
        return ModelResponse(output=output, usage=usage, response_id=response.id)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class ScriptedProvider(ModelProvider):
    def __init__(self) -> None:
        self.model = ScriptedModel()

    def get_model(self, model_name: str | None) -> Model:
        return self.model


# [recipe]
provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
provider.add_span_processor(
    BatchSpanProcessor(
        OTLPSpanExporter(
            endpoint=f"{URL}/v1/traces",
            headers={"Authorization": f"Bearer {KEY}"},
        )
    )
)
# the SDK's traces become OpenInference spans on this provider
OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)


@function_tool
def get_train(city: str) -> str:
    """The next train to a city."""
    return f"08:12 to {city}"


agent = Agent(
    name=AGENT,
    instructions="You plan trips.",
    tools=[get_train],
)

if __name__ == "__main__":
    config = RunConfig(model_provider=ScriptedProvider())  # a real app leaves this out
    result = Runner.run_sync(agent, "When is the next train to Lyon?", run_config=config)
    print("answer:", result.final_output)
    provider.force_flush()  # the batch processor sends in the background: flush before exit
    provider.shutdown()
# [/recipe]
