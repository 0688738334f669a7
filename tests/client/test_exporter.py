"""The exporter on its own, against a small real HTTP server that answers as scripted: what
becomes of every line for per-item refusals, whole-request refusals and a server whose
writes fail (the delivery contract's "one bad event never holds back the rest")."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from agentledger.client import RetryPolicy
from agentledger.client._exporter import Exporter

#: status and body, and optionally response headers
Answer = tuple[int, dict[str, Any] | str] | tuple[int, dict[str, Any] | str, dict[str, str]]


class ScriptedServer:
    """``/health`` answers 200; ``POST /v1/events/batch`` answers ``script(events)``."""

    def __init__(self, script: Callable[[list[dict[str, Any]]], Answer]) -> None:
        self.posts: list[list[dict[str, Any]]] = []
        self.prefer: list[str | None] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(
                self, status: int, body: dict[str, Any] | str, headers: dict[str, str] | None = None
            ) -> None:
                raw = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._send(200, {"status": "ok"})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                events = json.loads(body)["events"]
                outer.posts.append(events)
                outer.prefer.append(self.headers.get("Prefer"))
                self._send(*script(events))

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def make(script: Callable[[list[dict[str, Any]]], Answer]) -> ScriptedServer:
        server = ScriptedServer(script)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def _exporter(url: str) -> Exporter:
    return Exporter(
        url=url,
        headers={},
        transport=None,
        timeout=httpx.Timeout(5.0),
        policy=RetryPolicy(deadline_s=0.3, initial_backoff_s=0.01, max_backoff_s=0.05),
        cancel=threading.Event(),
        on_retry=lambda _: None,
        max_probe_interval_s=1.0,
    )


def _lines(n: int) -> list[bytes]:
    return [json.dumps({"event_id": f"e{i}", "i": i}).encode() for i in range(n)]


def _ok(events: list[dict[str, Any]], refuse: dict[str, int] | None = None) -> Answer:
    results = []
    for index, event in enumerate(events):
        status = (refuse or {}).get(event["event_id"])
        if status is None:
            results.append({"index": index, "ok": True, "duplicate": False})
        else:
            results.append({"index": index, "ok": False, "status": status, "error": "no"})
    return 200, {"written": 0, "failed": 0, "results": results}


def test_per_item_refusals_are_rejected_or_held(scripted: Any) -> None:
    """Delivery: a per-item 4xx is a refusal for good; a per-item 403 is held for another
    key; the rest of the batch is stored."""
    server = scripted(lambda events: _ok(events, {"e3": 422, "e7": 403}))
    exporter = _exporter(server.url)
    answer = exporter.export(_lines(10), None, single_attempt=False)
    assert answer.stored == 8
    assert [(i, s) for i, s, _ in answer.rejected] == [(3, 422)]
    assert answer.held == [7] and answer.kept == []
    assert answer.error is not None and answer.error.kind == "forbidden"
    assert not exporter.down  # the others keep flowing


def test_one_event_that_makes_the_server_fail_is_found_in_few_requests(scripted: Any) -> None:
    """Delivery: a persistent 500 caused by one event of 500: that event alone is refused,
    the other 499 stored, in about 2·log2(500) requests, not one per event."""

    def script(events: list[dict[str, Any]]) -> Answer:
        if any(e["event_id"] == "e321" for e in events):
            return 500, "boom"
        return _ok(events)

    server = scripted(script)
    answer = _exporter(server.url).export(_lines(500), None, single_attempt=False)
    assert answer.stored == 499 and [i for i, _, _ in answer.rejected] == [321]
    retries_of_the_first = sum(1 for p in server.posts if len(p) == 500)
    assert len(server.posts) - retries_of_the_first <= 2 * 9 + 2


def test_a_server_whose_every_write_fails_keeps_the_events(scripted: Any) -> None:
    """Delivery: every write answered with 500 while ``/health`` is fine: the events are kept
    (the server counts as unavailable), none refused, and the search stops after two halves."""
    server = scripted(lambda events: (500, "database is locked"))
    exporter = _exporter(server.url)
    answer = exporter.export(_lines(50), None, single_attempt=True)
    assert answer.rejected == [] and answer.kept == list(range(50)) and answer.stored == 0
    assert exporter.down and answer.error is not None and answer.error.kind == "unavailable"
    assert len(server.posts) == 3  # the batch, then each half once


@pytest.mark.parametrize(("status", "kind"), [(401, "unauthorized"), (403, "forbidden")])
def test_a_refused_key_keeps_the_events(scripted: Any, status: int, kind: str) -> None:
    """Delivery: 401/403 for the request keep every event and mark the server down."""
    server = scripted(lambda events: (status, {"detail": "no"}))
    exporter = _exporter(server.url)
    answer = exporter.export(_lines(5), None, single_attempt=False)
    assert answer.kept == list(range(5)) and answer.error is not None
    assert answer.error.kind == kind and answer.error.status == status and exporter.down
    assert len(server.posts) == 1  # never retried


def test_a_body_too_large_is_split_until_it_fits(scripted: Any) -> None:
    """Delivery: 413 for a batch is split in halves; an event too large alone is refused."""

    def script(events: list[dict[str, Any]]) -> Answer:
        if len(events) > 2 or any(e["event_id"] == "e4" for e in events):
            return 413, {"detail": "too large"}
        return _ok(events)

    server = scripted(script)
    answer = _exporter(server.url).export(_lines(8), None, single_attempt=False)
    assert answer.stored == 7 and [(i, s) for i, s, _ in answer.rejected] == [(4, 413)]


def _minimal(events: list[dict[str, Any]], refuse: dict[str, int]) -> Answer:
    """A ``Prefer: return=minimal`` answer: counts, and the failed items only."""
    failures = [
        {"index": i, "ok": False, "status": refuse[e["event_id"]], "error": "no"}
        for i, e in enumerate(events)
        if e["event_id"] in refuse
    ]
    body = {"written": len(events) - len(failures), "failed": len(failures), "duplicates": 0}
    return 200, {**body, "results": failures}, {"Preference-Applied": "return=minimal"}


@pytest.mark.parametrize("header", [True, False], ids=["applied", "header-dropped-by-a-proxy"])
def test_the_sender_asks_for_a_minimal_answer_and_reads_its_failures(
    scripted: Any, header: bool
) -> None:
    """Delivery: the batch asks ``Prefer: return=minimal``; an answer that applied it lists
    only the failures by index, and the other events count as stored, whether or not the
    ``Preference-Applied`` header made it through."""

    def script(events: list[dict[str, Any]]) -> Answer:
        status, body, headers = _minimal(events, {"e3": 422, "e7": 403})
        return (status, body, headers) if header else (status, body)

    server = scripted(script)
    answer = _exporter(server.url).export(_lines(10), None, single_attempt=False)
    assert server.prefer == ["return=minimal"]
    assert answer.stored == 8 and [(i, s) for i, s, _ in answer.rejected] == [(3, 422)]
    assert answer.held == [7] and answer.kept == []


@pytest.mark.parametrize(
    "body",
    [
        {"written": 9, "failed": 0, "duplicates": 0, "results": []},  # counts short of the batch
        {"written": 9, "failed": 1, "duplicates": 0, "results": []},  # a failure not listed
        {"written": 8, "failed": 2, "duplicates": 0, "results": [{"index": 1}, {"index": 1}]},
        {"written": 9, "failed": 1, "duplicates": 0, "results": [{"index": 10, "ok": False}]},
        {"written": 9, "failed": 1, "duplicates": 0, "results": [{"index": 2, "ok": True}]},
        {"written": 10, "failed": 0, "duplicates": "0", "results": []},
        {"written": -1, "failed": 1, "duplicates": 10, "results": [{"index": 0, "ok": False}]},
    ],
)
def test_a_minimal_answer_that_does_not_add_up_stores_nothing(
    scripted: Any, body: dict[str, Any]
) -> None:
    """Delivery: a minimal answer whose counts and failures do not account for every event
    of the batch is not taken as stored: the events are kept and the server counts as away."""
    server = scripted(lambda events: (200, body))
    exporter = _exporter(server.url)
    answer = exporter.export(_lines(10), None, single_attempt=True)
    assert answer.stored == 0 and answer.kept == list(range(10)) and exporter.down


def test_a_server_that_ignores_the_preference_is_read_in_full(scripted: Any) -> None:
    """Delivery: without ``Preference-Applied`` the answer is a receipt per event, as from a
    server that does not know the preference."""
    server = scripted(lambda events: _ok(events, {"e5": 422}))
    answer = _exporter(server.url).export(_lines(10), None, single_attempt=False)
    assert answer.stored == 9 and [i for i, _, _ in answer.rejected] == [5]
