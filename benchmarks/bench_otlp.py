"""OTLP/HTTP trace ingest against the batch endpoint, with the same content, in one run.

Agent runs of four GenAI-convention spans each (invoke_agent > chat > execute_tool > chat, made
with the OpenTelemetry SDK) are posted to an embedded server two ways: as OTLP protobuf exports
to ``POST /v1/traces`` (the server decodes, keeps and links the spans, then writes 10 events a
run), and as the same events already mapped, to ``POST /v1/events/batch`` (500 events a
request). Both sides write the same events (fresh ids each round); the table gives spans per
second (median of the rounds) and the OTLP / batch ratio. The machine is shared and noisy:
compare the ratio, not the absolute numbers.

Usage: ``python benchmarks/bench_otlp.py [--quick]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from doc_tables import doc_table, verdict  # the script's directory is on sys.path
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentledger.server._otlp._decode import PROTOBUF, decode_export
from agentledger.server._otlp._link import trace_events
from agentledger.testing import EmbeddedServer

# The spans are made with the real SDK, which OTEL_SDK_DISABLED=true (set by `run_all.py` to keep
# CrewAI's telemetry quiet) would turn into no-ops: nothing would be sent and the rates would be
# of empty lists.
os.environ["OTEL_SDK_DISABLED"] = "false"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "otlp"))
from _otel_spans import agent_run

KEY = "bench-key"
RUNS_PER_EXPORT = 125  # 500 spans per OTLP request


def make_runs(n: int, tag: str) -> list[list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for i in range(n):
        agent_run(tracer, f"{tag}-{i}")
    provider.shutdown()
    spans = list(memory.get_finished_spans())
    assert len(spans) == 4 * n, f"{len(spans)} spans made for {n} agent runs of four"
    return [spans[i : i + 4] for i in range(0, len(spans), 4)]


def otlp_bodies(runs: list[list[ReadableSpan]]) -> list[bytes]:
    return [
        encode_spans([s for run in runs[i : i + RUNS_PER_EXPORT] for s in run]).SerializeToString()
        for i in range(0, len(runs), RUNS_PER_EXPORT)
    ]


def batch_bodies(runs: list[list[ReadableSpan]]) -> list[bytes]:
    items = []
    for body in otlp_bodies(runs):
        by_trace: dict[str, dict[str, dict]] = {}  # type: ignore[type-arg]
        for span in decode_export(body, PROTOBUF, None, 1 << 30).spans:
            by_trace.setdefault(span["trace_id"], {})[span["span_id"]] = span
        for spans in by_trace.values():
            items.extend(trace_events(spans, set(spans), bound_agent=None))
    return [orjson.dumps({"events": items[i : i + 500]}) for i in range(0, len(items), 500)]


def post_all(client: httpx.Client, path: str, bodies: list[bytes], content_type: str) -> float:
    start = time.perf_counter()
    for body in bodies:
        response = client.post(path, content=body, headers={"Content-Type": content_type})
        response.raise_for_status()
        if path.endswith("batch"):
            assert response.json()["failed"] == 0, response.text[:500]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    runs, rounds = (50, 1) if args.quick else (1000, 5)
    spans = runs * 4
    otlp_rates, batch_rates = [], []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp) / "b.db", api_key=KEY) as s:
        client = httpx.Client(
            base_url=s.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120
        )
        for r in range(rounds):
            otlp = otlp_bodies(make_runs(runs, f"o{r}"))
            batch = batch_bodies(make_runs(runs, f"b{r}"))
            otlp_rates.append(spans / post_all(client, "/v1/traces", otlp, PROTOBUF))
            batch_rates.append(
                spans / post_all(client, "/v1/events/batch", batch, "application/json")
            )
    otlp_rate, batch_rate = statistics.median(otlp_rates), statistics.median(batch_rates)
    print(f"{runs} agent runs ({spans} spans, {runs * 10} events) x {rounds} rounds, medians")
    rows = [
        (
            "OTLP protobuf, `POST /v1/traces`",
            f"{otlp_rate:,.0f}",
            f"{otlp_rate * 2.5:,.0f}",
            f"{otlp_rate / batch_rate:.2f}×",
            verdict(otlp_rate / batch_rate, at_least=0.8),
        ),
        (
            "same events, `POST /v1/events/batch`",
            f"{batch_rate:,.0f}",
            f"{batch_rate * 2.5:,.0f}",
            "1.00×",
            "",
        ),
    ]
    print(doc_table("otlp-ingest", ("path", "spans/s", "events/s", "ratio", "target"), rows))


if __name__ == "__main__":
    main()
