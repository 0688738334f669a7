"""Delivery (README "Delivery") under the ways people use the client: each test states what
must hold in a case a hostile review found broken once; real server, faults only in injected
transports."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson

from agentledger.client import Ledger, RetryPolicy

from .conftest import FaultTransport, stored_events


def _dead_letter_ids(ledger: Ledger) -> list[str]:
    path = ledger.dead_letter_path
    if path is None or not path.exists():
        return []
    return [orjson.loads(line)["event"]["event_id"] for line in path.read_bytes().splitlines()]


def _spill_lines(spill_dir: Path) -> int:
    return sum(
        len([line for line in p.read_bytes().splitlines() if line.strip()])
        for p in spill_dir.rglob("seg-*.ndjson")
    )


def _wait(predicate: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_refused_event_is_dead_lettered_once_when_its_segment_is_resent(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """An event the server refused from a spill segment is not dead-lettered again when the
    next process resends the rest of that segment."""
    passes = {"left": 0}

    def fault(_: int) -> str | None:
        if passes["left"] > 0:
            passes["left"] -= 1
            return None
        return "raise_before"  # the server is away

    first = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        sender_transport=FaultTransport(fault),
        max_batch_events=50,
        retry=RetryPolicy(deadline_s=0.3),
    )
    first.log("step_start", {"first": True})
    first.flush(1.0)  # the server is marked down
    poison = str(uuid.uuid4())
    first.log("step_start", {"poison": True}, event_id=poison, parent_id=poison)
    for i in range(99):
        first.log("step_start", {"i": i})
    _wait(lambda: first.stats().in_spill == 101, 10)
    assert first.stats().in_spill == 101  # one segment of 100 lines behind a 1-line one
    passes["left"] = 2  # the server answers twice: the 1-line segment, then 50 lines
    first.flush(2.0)
    assert first.stats().dead_lettered == 1 and first.stats().in_spill == 50
    first.close(0)

    second = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        max_batch_events=50,
    )
    try:
        assert second.flush(10).complete
    finally:
        second.close(5)
    assert len(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == 100
    assert _dead_letter_ids(second) == [poison]
    assert first.stats().failed + second.stats().backlog_failed == 1


def test_an_event_logged_after_close_reaches_the_next_client_of_the_process(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """An event logged after close() is spilled where a later client of the same process
    can adopt it (its segment is not left locked by the closed client)."""
    first = Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    first.log("step_start", {"i": 0})
    first.close(5)
    late = first.log("step_start", {"late": True})
    assert first.stats().in_spill == 1 and _spill_lines(spill_dir) == 1

    second = Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        result = second.flush(5)
    finally:
        second.close(5)
    assert second.stats().backlog_adopted == 1, (result, second.stats())
    stored = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert late.event_id in {e["event_id"] for e in stored}


def test_a_server_failing_every_write_with_500_does_not_dead_letter_every_event(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """When every batch and every single event gets a 500 (the server's writes fail while
    /health answers), the events are kept and delivered once it recovers, not refused."""
    broken = {"on": True}

    def fault(_: int) -> httpx.Response | None:
        return httpx.Response(500, text="database is locked") if broken["on"] else None

    client = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        sender_transport=FaultTransport(fault),
        max_batch_events=50,
        retry=RetryPolicy(deadline_s=0.3),
    )
    try:
        for i in range(50):
            client.log("step_start", {"i": i})
        client.flush(2.0)
        broken["on"] = False  # the server recovers
        result = client.flush(10)
        _wait(lambda: client.stats().sent == 50, 10)
    finally:
        client.close(5)
    stats = client.stats()
    assert stats.failed == 0 and stats.dead_lettered == 0, (result, stats)
    assert len(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == 50


def test_an_unusable_spill_dir_keeps_events_in_memory_through_an_outage(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """A spill directory that cannot be created (here: under a file) makes the client hold
    events in memory as with ``spill_dir=None``, without internal errors; a short outage
    loses nothing."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    down = {"on": True}
    client = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=blocker / "spill",
        sender_transport=FaultTransport(lambda _: "raise_before" if down["on"] else None),
        retry=RetryPolicy(deadline_s=0.3),
    )
    try:
        for i in range(10):
            client.log("step_start", {"i": i})
        client.flush(1.0)
        client.stats()
        down["on"] = False
        client.flush(5)
    finally:
        client.close(5)
    stats = client.stats()
    assert stats.dropped == 0, stats
    assert len(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == 10


def test_an_event_for_an_agent_the_key_may_not_write_does_not_block_the_others(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """An event the server refuses per item with 403 (the key is bound to another agent) is
    kept, and the events the key may write keep flowing past it."""
    created = httpx.post(
        f"{ledger_server.url}/v1/keys",
        json={"name": f"bound-{agent_name}", "agent": agent_name, "scope": "read_write"},
        headers=ledger_server.headers(),
        timeout=10,
    )
    assert created.status_code == 201, created.text
    client = Ledger(ledger_server.url, created.json()["key"], agent_name, spill_dir=spill_dir)
    try:
        client.log("step_start", {"foreign": True}, agent=f"other-{agent_name}")
        client.flush(2)  # refused with 403 for that item: kept, the server marked down
        for i in range(100):
            client.log("step_start", {"i": i})
        result = client.flush(5)
        _wait(lambda: client.stats().sent == 100, 5)
    finally:
        client.close(1)
    stored = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert len(stored) == 100, (result, client.stats())
    assert client.stats().in_spill == 1


def test_flush_is_not_completed_by_events_logged_after_it(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """A flush waits for the events logged before it: events logged meanwhile that settle at
    once (refused by ``log()``) do not make it report ``complete`` while the earlier ones are
    still in the spill."""
    client = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        sender_transport=FaultTransport(lambda _: "raise_before"),  # the server is away
        retry=RetryPolicy(deadline_s=0.3),
    )
    try:
        for i in range(10):
            client.log("step_start", {"i": i})
        assert not client.flush(1.0).complete  # the 10 events are spilled
        results: list[Any] = []
        waiting = threading.Thread(target=lambda: results.append(client.flush(3.0)))
        waiting.start()
        time.sleep(0.3)
        for _ in range(10):
            client.log("", {"bad": "empty event type"})  # refused by log(): failed at once
        waiting.join()
    finally:
        client.close(0.5)
    (result,) = results
    assert result.in_spill == 10
    assert not result.complete, result


def test_close_called_from_on_error_keeps_every_event(closed_url: str, spill_dir: Path) -> None:
    """close() called from the on_error callback (the sender's own thread) stops the client
    and spills what is queued: nothing stays in memory of a closed client."""
    clients: list[Ledger] = []
    client = Ledger(
        closed_url,
        "k",
        "agent-on-error",
        spill_dir=spill_dir,
        sender_transport=FaultTransport(lambda _: httpx.Response(401, text="bad key")),
        on_error=lambda _: clients[0].close(0),
    )
    clients.append(client)
    for i in range(1200):
        client.log("step_start", {"i": i})
    _wait(lambda: client.stats().last_error is not None, 10)
    _wait(lambda: client.stats().queue_depth == 0, 2)  # on_error ran close() meanwhile
    stats = client.stats()
    assert stats.queue_depth == 0 and stats.in_spill == 1200, stats
    assert _spill_lines(spill_dir) == 1200


def test_spill_room_freed_by_another_client_is_usable_again(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """Two clients share a spill directory (the default one is shared): once the first has
    resent and deleted its segments, the second may use that room; it does not drop events
    against a cap filled by files that are gone."""
    down = {"first": True, "second": True}

    def make(name: str) -> Ledger:
        return Ledger(
            ledger_server.url,
            ledger_server.api_key,
            agent_name,
            spill_dir=spill_dir,
            sender_transport=FaultTransport(lambda _: "raise_before" if down[name] else None),
            retry=RetryPolicy(deadline_s=0.3),
            max_spill_bytes=48_000,  # room for one client's 200 lines (about 41 kB), not two
        )

    first, second = make("first"), make("second")
    try:
        for i in range(200):  # about 30 kB of spill
            first.log("step_start", {"i": i})
        first.flush(1.0)
        assert first.stats().in_spill == 200
        assert second.stats().spill_bytes > 20_000  # the second client sees the first's files
        down["first"] = False
        assert first.flush(10).complete
        assert _spill_lines(spill_dir) == 0  # the first client's files are gone
        for i in range(200):
            second.log("step_end", {"i": i})
        second.flush(1.0)
        stats = second.stats()
    finally:
        first.close(1)
        second.close(0.5)
    assert stats.dropped == 0 and stats.in_spill == 200, stats


def test_a_200_that_is_not_a_batch_answer_does_not_count_events_as_stored(
    ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """A 200 whose body is not JSON (a proxy's or login page's HTML) does not make the client
    count the events as stored: nothing is stored, so they are kept or refused, not 'sent'."""
    html = httpx.Response(200, text="<html><body>Please sign in</body></html>")
    client = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        sender_transport=FaultTransport(lambda _: html),
        retry=RetryPolicy(deadline_s=0.3),
    )
    try:
        for i in range(10):
            client.log("step_start", {"i": i})
        client.flush(2.0)
    finally:
        client.close(0.5)
    assert stored_events(ledger_server.url, ledger_server.api_key, agent_name) == []
    stats = client.stats()
    assert stats.sent == 0, stats
