"""Send OpenTelemetry from a Pydantic AI agent to agentledger (its built-in instrumentation).

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/otel_pydantic_ai.py

The model is Pydantic AI's ``FunctionModel``, scripted offline: first a tool call, then the
answer. Nothing of agentledger is imported: the agent's own OpenTelemetry spans go to the
server's ``/v1/traces`` through the stock OTLP/HTTP exporter.
"""

from __future__ import annotations

import os

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

URL = os.environ.get("AGENTLEDGER_URL", "http://127.0.0.1:8765")
KEY = os.environ.get("AGENTLEDGER_API_KEY", "dev")
AGENT = os.environ.get("AGENTLEDGER_AGENT", "travel-bot")

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


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A stand-in for a real model: ask for the tool once, then answer."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart("get_train", {"city": "Lyon"}, tool_call_id="t1")])
    return ModelResponse(parts=[TextPart("Take the 08:12 train to Lyon.")])


agent = Agent(
    FunctionModel(scripted, model_name="scripted-model"),
    name=AGENT,
    instructions="You plan trips.",
)
# Pydantic AI's own OpenTelemetry spans (GenAI semantic conventions), content included
agent.instrument = InstrumentationSettings(tracer_provider=provider)


@agent.tool_plain
def get_train(city: str) -> str:
    """The next train to a city."""
    return f"08:12 to {city}"


if __name__ == "__main__":
    print("answer:", agent.run_sync("When is the next train to Lyon?").output)
    provider.force_flush()  # the batch processor sends in the background: flush before exit
    provider.shutdown()
# [/recipe]
