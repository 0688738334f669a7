"""Send OpenTelemetry from a LangChain agent to agentledger, through OpenLLMetry
(``opentelemetry-instrumentation-langchain``).

Run a server first (``agentledger serve --dev-key dev``), then::

    AGENTLEDGER_API_KEY=dev python examples/otel_langchain.py

The chat model is ``ScriptedChatModel`` (offline, from ``agentledger.testing``): it asks for
the ``get_train`` tool once, then answers. The app's spans go to the server's ``/v1/traces``
through the stock OTLP/HTTP exporter; agentledger's own LangChain handler is not used.
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentledger.testing.chat_models import ScriptedChatModel

URL = os.environ.get("AGENTLEDGER_URL", "http://127.0.0.1:8765")
KEY = os.environ.get("AGENTLEDGER_API_KEY", "dev")
AGENT = os.environ.get("AGENTLEDGER_AGENT", "travel-bot")

# a stand-in for a real chat model: one tool call, then the answer
model = ScriptedChatModel(
    replies=[
        AIMessage(
            "",
            tool_calls=[{"name": "get_train", "args": {"city": "Lyon"}, "id": "call_train_1"}],
            usage_metadata={"input_tokens": 40, "output_tokens": 12, "total_tokens": 52},
        ),
        AIMessage(
            "Take the 08:12 train to Lyon.",
            usage_metadata={"input_tokens": 80, "output_tokens": 9, "total_tokens": 89},
        ),
    ]
)

# [recipe]
# OpenLLMetry records prompts and completions unless TRACELOOP_TRACE_CONTENT=false
provider = TracerProvider(resource=Resource.create({"service.name": AGENT}))
provider.add_span_processor(
    BatchSpanProcessor(
        OTLPSpanExporter(
            endpoint=f"{URL}/v1/traces",
            headers={"Authorization": f"Bearer {KEY}"},
        )
    )
)
LangchainInstrumentor().instrument(tracer_provider=provider)


@tool
def get_train(city: str) -> str:
    """The next train to a city."""
    return f"08:12 to {city}"


agent = create_agent(model, [get_train], system_prompt="You plan trips.", name=AGENT)

if __name__ == "__main__":
    result = agent.invoke({"messages": [("user", "When is the next train to Lyon?")]})
    print("answer:", result["messages"][-1].content)
    provider.force_flush()  # the batch processor sends in the background: flush before exit
    provider.shutdown()
# [/recipe]
