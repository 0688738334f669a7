"""Spans whose trace root never arrives, and traces the store refuses, against a real
``agentledger serve`` (SQLite and PostgreSQL).

Docs: ``docs/pages/opentelemetry.md`` sections "When the events appear" and "Sending spans"
(the rows "a trace the store refuses" and "refused whole"); README section "OpenTelemetry".
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest
from _otel_spans import json_export, recorded_run
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from _servers import ServerFactory, ServerProcess
from agentledger.server._otlp._link import event_id

pytestmark = pytest.mark.server

#: A short wait for the trace root, and a fast flush timer.
FAST = {"AGENTLEDGER_OTLP_PENDING_S": "1.5", "AGENTLEDGER_OTLP_FLUSH_INTERVAL_S": "0.3"}


def _auth(server: ServerProcess, key: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key or server.api_key}"}


def _events(server: ServerProcess, session: str, agent: str = "support-bot") -> list[Any]:
    response = httpx.get(
        f"{server.url}/v1/events",
        params={"agent": agent, "session_id": session, "limit": 1000},
        headers=_auth(server),
    )
    response.raise_for_status()
    return list(reversed(response.json()))


def _without_root(session: str) -> tuple[list[Any], str]:
    """A run's spans less its root, and the session they land in: the session id is on the
    missing root span, so the events' session is the trace id."""
    spans = [s for s in recorded_run(session) if s.parent is not None]
    return spans, f"{spans[0].context.trace_id:032x}"


def _wait_for(server: ServerProcess, session: str, count: int, agent: str) -> list[Any]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        events = _events(server, session, agent)
        if len(events) >= count:
            return events
        time.sleep(0.2)
    return _events(server, session, agent)


def test_the_timer_writes_spans_whose_root_never_arrives(
    server_factory: ServerFactory, store_db: str
) -> None:
    server = server_factory(db=store_db, env=FAST)
    agent = f"bound-{uuid.uuid4().hex[:6]}"
    created = httpx.post(
        f"{server.url}/v1/keys",
        json={"name": f"k-{agent}", "agent": agent, "scope": "read_write"},
        headers=_auth(server),
    )
    assert created.status_code == 201, created.text
    spans, session = _without_root(f"otel-{uuid.uuid4().hex[:8]}")
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers=_auth(server, created.json()["key"])
    )
    started = time.monotonic()
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    if time.monotonic() - started < 1.0:
        assert _events(server, session, agent) == []  # still waiting for the root
    # no other export comes in: the timer writes them, under the key's agent
    events = _wait_for(server, session, 6, agent)
    assert time.monotonic() - started >= 1.5
    kinds = [e["event"] for e in events]
    assert sorted(kinds) == sorted(
        ["llm_start", "llm_end", "tool_call", "tool_result", "llm_start", "llm_end"]
    ), kinds
    by_kind = {e["event"]: e for e in events}
    (first_out, _), second_call = (
        [e for e in events if e["event"] == "llm_end"],
        [e for e in events if e["event"] == "llm_start"][1],
    )
    assert by_kind["tool_call"]["parent_id"] == first_out["event_id"]
    assert second_call["parent_id"] == by_kind["tool_result"]["event_id"]
    # later exports of the same spans store nothing twice
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert len(_events(server, session, agent)) == 6


def test_without_the_timer_the_next_export_writes_them(
    server_factory: ServerFactory, store_db: str
) -> None:
    env = {**FAST, "AGENTLEDGER_OTLP_FLUSH_INTERVAL_S": "0"}
    server = server_factory(db=store_db, env=env)
    spans, session = _without_root(f"otel-{uuid.uuid4().hex[:8]}")
    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces", headers=_auth(server))
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    time.sleep(2.5)
    assert _events(server, session, "otel-test") == []  # past the wait, nothing came in
    other = f"otel-{uuid.uuid4().hex[:8]}"
    assert exporter.export(recorded_run(other)) == SpanExportResult.SUCCESS
    assert len(_events(server, session, "otel-test")) == 6
    assert len(_events(server, other)) == 10


@pytest.mark.postgres
def test_two_processes_flush_each_span_once(server_factory: ServerFactory, pg_db: str) -> None:
    one = server_factory(db=pg_db, env=FAST)
    two = server_factory(db=pg_db, env=FAST)
    sessions = []
    for index in range(6):
        server = (one, two)[index % 2]
        spans, session = _without_root(f"otel-{uuid.uuid4().hex[:8]}")
        sessions.append(session)
        exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces", headers=_auth(server))
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    for session in sessions:
        events = _wait_for(one, session, 6, "otel-test")
        assert len(events) == 6
        assert len({e["event_id"] for e in events}) == 6
    time.sleep(1.0)  # both timers ran again: still nothing twice
    assert all(len(_events(two, s, "otel-test")) == 6 for s in sessions)
    verify = httpx.get(
        f"{one.url}/v1/events/chain", params={"agent": "otel-test"}, headers=_auth(one)
    )
    verify.raise_for_status()
    assert verify.json()["problems"] == [], verify.json()


def _export_json(server: ServerProcess, *runs: list[Any]) -> httpx.Response:
    body: dict[str, Any] = {"resourceSpans": []}
    for spans in runs:
        body["resourceSpans"].extend(json.loads(json_export(spans))["resourceSpans"])
    return httpx.post(
        f"{server.url}/v1/traces",
        content=json.dumps(body).encode(),
        headers={**_auth(server), "Content-Type": "application/json"},
    )


def test_a_trace_the_store_refuses_is_rejected_whole(store_server: ServerProcess) -> None:
    refused, kept = f"otel-{uuid.uuid4().hex[:8]}", f"otel-{uuid.uuid4().hex[:8]}"
    refused_spans, kept_spans = recorded_run(refused), recorded_run(kept)
    tool = next(s for s in refused_spans if s.name.startswith("execute_tool"))
    trace_hex = f"{tool.context.trace_id:032x}"
    taken = event_id(trace_hex, f"{tool.context.span_id:016x}", "start")
    # the tool span's derived event id is already stored, with another body
    squatter = httpx.post(
        f"{store_server.url}/v1/events",
        json={"event_id": taken, "agent": "squatter", "event": "note", "data": {"x": 1}},
        headers=_auth(store_server),
    )
    assert squatter.status_code == 201, squatter.text

    response = _export_json(store_server, refused_spans, kept_spans)
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 4
    assert trace_hex in partial["errorMessage"] and taken in partial["errorMessage"]
    assert _events(store_server, refused) == []  # nothing of the refused trace is stored
    assert len(_events(store_server, kept)) == 10  # the other trace of the export is
    # sent again: the refused spans are known (never retried), nothing is written
    again = _export_json(store_server, refused_spans)
    assert again.status_code == 200 and again.json() == {}
    assert _events(store_server, refused) == []
    verify = httpx.get(
        f"{store_server.url}/v1/events/chain",
        params={"agent": "support-bot"},
        headers=_auth(store_server),
    )
    verify.raise_for_status()
    assert verify.json()["problems"] == [], verify.json()


def test_a_span_the_input_checks_refuse_rejects_its_trace(store_server: ServerProcess) -> None:
    refused, kept = f"otel-{uuid.uuid4().hex[:8]}", f"otel-{uuid.uuid4().hex[:8]}"
    body = json.loads(json_export(recorded_run(refused)))
    for span in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if span["name"].startswith("execute_tool"):
            # arguments nested deeper than the server's JSON depth limit: tool_call is refused
            deep: Any = 1
            for _ in range(100):
                deep = {"a": deep}
            for attribute in span["attributes"]:
                if attribute["key"] == "gen_ai.tool.call.arguments":
                    attribute["value"] = {"stringValue": json.dumps(deep)}
    body["resourceSpans"].extend(json.loads(json_export(recorded_run(kept)))["resourceSpans"])
    response = httpx.post(
        f"{store_server.url}/v1/traces",
        content=json.dumps(body).encode(),
        headers={**_auth(store_server), "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 4, partial
    assert "tool_call" in partial["errorMessage"]
    assert _events(store_server, refused) == []
    assert len(_events(store_server, kept)) == 10


def test_a_session_id_with_nul_rejects_its_trace(store_server: ServerProcess) -> None:
    # U+0000 in the session id (which PostgreSQL's text cannot hold) is refused by the input
    # checks on both stores: the trace is rejected, never a 500, nothing half-written
    refused, kept = f"otel-\x00{uuid.uuid4().hex[:8]}", f"otel-{uuid.uuid4().hex[:8]}"
    response = _export_json(store_server, recorded_run(refused), recorded_run(kept))
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 4, partial
    assert "session_id" in partial["errorMessage"], partial
    assert len(_events(store_server, kept)) == 10


@pytest.mark.postgres
def test_a_busy_database_is_a_503_the_exporter_retries(
    server_factory: ServerFactory, pg_db: str
) -> None:
    import psycopg

    from agentledger.server._otlp._spans import OTLP_LOCK_KEY

    server = server_factory(db=pg_db, env={"AGENTLEDGER_PG_STATEMENT_TIMEOUT_S": "1"})
    session = f"otel-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_db) as other, other.transaction():
        # another writer holds the OTLP lock longer than the server's lock timeout
        other.execute("SELECT pg_advisory_xact_lock(%s)", (OTLP_LOCK_KEY,))
        response = _export_json(server, recorded_run(session))
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "1"
    assert "busy" in response.json()["message"]
    assert _events(server, session) == []  # nothing of the export was written
    # the retry, once the lock is free, writes the whole trace
    assert _export_json(server, recorded_run(session)).status_code == 200
    assert len(_events(server, session)) == 10
