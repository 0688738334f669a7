"""Disk spill, overflow, retry policy and exit behaviour, against real servers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentledger.client import Ledger, RetryPolicy

from .conftest import FaultTransport, Twin, stored_events


def _wait_stored(server: Any, agent: str, count: int, timeout_s: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        events = stored_events(server.url, server.api_key, agent)
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.2)


def _spilled_lines(spill_dir: Path) -> int:
    return sum(
        len([x for x in p.read_bytes().splitlines() if x.strip()])
        for p in spill_dir.rglob("*.ndjson")
    )


async def test_spill_is_resent_in_order_by_the_next_client(
    twin: Twin, server_factory: Any, agent_name: str, spill_dir: Path
) -> None:
    server = server_factory(start=False)  # its port is free: the server is "down"
    first = twin.make(server.url, server.api_key, agent_name, spill_dir=spill_dir)
    refs = [first.log("step_start", {"i": i, "password": "hunter2"}) for i in range(300)]
    closed = await twin.close(first, 1.0)
    assert closed.spilled + first.stats().spilled >= 300 and first.stats().spilled == 300
    assert _spilled_lines(spill_dir) == 300
    raw = b"".join(p.read_bytes() for p in spill_dir.rglob("*.ndjson"))
    assert b"hunter2" not in raw  # redacted before it touched the disk

    server.start()
    second = twin.make(server.url, server.api_key, agent_name, spill_dir=spill_dir)
    try:
        await twin.flush(second, 5)  # a flush also claims spill left by earlier clients
        events = _wait_stored(server, agent_name, 300, 20)
    finally:
        await twin.close(second, 5)
    assert [e["event_id"] for e in events] == [r.event_id for r in refs]  # in order, once
    assert second.stats().backlog_sent == second.stats().backlog_adopted == 300
    assert list(spill_dir.rglob("*.ndjson")) == []


async def test_a_live_clients_spill_is_not_taken_by_another(
    twin: Twin, server_factory: Any, agent_name: str, spill_dir: Path
) -> None:
    """Segments are locked by their writer: a second client claims them only once the first
    closed (two processes never share a spill file)."""
    server = server_factory(start=False)
    first = twin.make(
        server.url,
        server.api_key,
        agent_name,
        spill_dir=spill_dir,
        retry=RetryPolicy(deadline_s=1.0),
    )
    for i in range(10):
        first.log("step_start", {"i": i})
    await twin.flush(first, 1.0)  # fails over to the spill once retries give up
    deadline = time.monotonic() + 15
    while first.stats().spilled < 10 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first.stats().spilled == 10

    server.start()
    second = twin.make(server.url, server.api_key, agent_name, spill_dir=spill_dir)
    try:
        await twin.flush(second, 2)
        await twin.flush(first, 2)  # a flush probes the server at once
        events = _wait_stored(server, agent_name, 10, 20)  # the first client resends them
        assert second.stats().backlog_adopted == 0  # never touched the live client's segment
        assert first.stats().unspilled == 10
    finally:
        await twin.close(first, 1)
        await twin.close(second, 5)
    assert sorted(e["data"]["i"] for e in events) == list(range(10))
    assert list(spill_dir.rglob("*.ndjson")) == []


async def test_spill_off_drops_oldest_and_counts(
    twin: Twin, closed_url: str, agent_name: str
) -> None:
    client = twin.make(
        closed_url, "k", agent_name, spill_dir=None, max_queue_events=1000, max_batch_events=500
    )
    refs = [client.log("step_start", {"i": i}) for i in range(5000)]
    stats = client.stats()
    assert stats.enqueued == 5000
    # queue_depth counts the batch in flight and the next one, serialised meanwhile
    assert stats.dropped + stats.queue_depth == 5000
    assert stats.queue_depth <= 1000 + 2 * 500
    result = await twin.close(client, 0.5)
    final = client.stats()
    assert final.dropped == 5000 and final.sent == 0 and final.spilled == 0
    assert result.pending == 0
    assert len(refs) == 5000


@pytest.mark.parametrize("with_spill", [True, False])
async def test_closed_port_20000_events_memory_bounded(
    twin: Twin, closed_url: str, agent_name: str, tmp_path: Path, with_spill: bool
) -> None:
    """20,000 events against a closed port: memory stays bounded by the queue, every event
    is accounted for as spilled or dropped."""
    client = twin.make(
        closed_url,
        "k",
        agent_name,
        spill_dir=tmp_path / "spill" if with_spill else None,
        max_queue_events=2000,
    )
    payload = {"text": "x" * 200, "n": list(range(20))}
    tracemalloc.start()
    try:
        for i in range(20_000):
            client.log("llm_end", {**payload, "i": i})
            if i == 4_999:  # the queue is full by now; from here on memory must stay flat
                tracemalloc.reset_peak()
                base, _ = tracemalloc.get_traced_memory()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - base < 2 * 1024 * 1024, f"grew {(peak - base) / 1e6:.1f} MB"
    await twin.close(client, 1.0)
    stats = client.stats()
    assert stats.sent == 0 and stats.queue_depth == 0
    assert stats.spilled + stats.dropped == 20_000
    if with_spill:
        assert stats.spilled == 20_000 and stats.dropped == 0
        assert _spilled_lines(tmp_path / "spill") == 20_000
    else:
        assert stats.dropped == 20_000


async def test_retry_after_is_honoured_and_capped(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    first_answer = httpx.Response(429, headers={"Retry-After": "1"}, json={"detail": "slow down"})
    transport = FaultTransport(lambda n: first_answer if n == 1 else None)
    client = twin.make(
        ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir, fault=transport
    )
    try:
        client.log("step_start", {})
        started = time.monotonic()
        assert (await twin.flush(client, 10)).complete
        assert time.monotonic() - started >= 0.9
    finally:
        await twin.close(client, 5)
    assert client.stats().retried == 1 and client.stats().sent == 1

    hour = httpx.Response(503, headers={"Retry-After": "3600"}, json={"detail": "maintenance"})
    transport = FaultTransport(lambda n: hour if n == 1 else None)
    client = twin.make(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        fault=transport,
        retry=RetryPolicy(max_retry_after_s=0.3),
    )
    try:
        client.log("step_start", {})
        started = time.monotonic()
        assert (await twin.flush(client, 10)).complete
        assert time.monotonic() - started < 3
    finally:
        await twin.close(client, 5)
    assert len(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == 2


async def test_rejected_event_does_not_sink_its_batch(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path, caplog: Any
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        good = [client.log("step_start", {"i": i}) for i in range(10)]
        client.log("step_start", {"bad": True}, parent_id="not-a-uuid")
        good += [client.log("step_start", {"i": i}) for i in range(10, 20)]
        assert (await twin.flush(client, 10)).complete
    finally:
        await twin.close(client, 5)
    stats = client.stats()
    assert stats.failed == 1 and stats.sent == 20
    stored = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert [e["event_id"] for e in stored] == [r.event_id for r in good]
    assert "rejected" in caplog.text


async def test_unauthorized_events_are_kept_for_a_fixed_key(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    wrong = twin.make(ledger_server.url, "wrong-key", agent_name, spill_dir=spill_dir)
    ref = wrong.log("step_start", {"kept": True})
    await twin.flush(wrong, 2)
    await twin.close(wrong, 0.5)
    assert wrong.stats().spilled == 1 and wrong.stats().sent == 0
    right = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    try:
        await twin.flush(right, 5)
        events = _wait_stored(ledger_server, agent_name, 1, 10)
    finally:
        await twin.close(right, 5)
    assert [e["event_id"] for e in events] == [ref.event_id]


EXIT_SCRIPT = textwrap.dedent(
    """
    import sys
    from agentledger.client import Ledger

    url, key, agent, spill = sys.argv[1:5]
    ledger = Ledger(url, key, agent, spill_dir=spill, flush_timeout_s=1.0)
    for i in range(100):
        ledger.log("step_start", {"i": i})
    # no flush, no close: the exit hook must deliver or spill
    """
)


@pytest.mark.parametrize("server_up", [True, False])
def test_exit_hook_flushes_then_spills(
    server_factory: Any, agent_name: str, tmp_path: Path, server_up: bool
) -> None:
    """At exit the client flushes within ``flush_timeout_s`` and spills what is left; the
    next process with the same spill_dir delivers it."""
    server = server_factory(start=server_up)
    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT)
    spill = tmp_path / "spill"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script), server.url, server.api_key, agent_name, str(spill)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    if server_up:
        events = stored_events(server.url, server.api_key, agent_name)
        assert [e["data"]["i"] for e in events] == list(range(100))
        return
    assert time.monotonic() - started < 10  # flush_timeout_s=1 plus interpreter start
    assert _spilled_lines(spill) == 100
    server.start()
    with Ledger(server.url, server.api_key, agent_name, spill_dir=spill) as ledger:
        ledger.flush(5)
        events = _wait_stored(server, agent_name, 100, 20)
    assert [e["data"]["i"] for e in events] == list(range(100))


GC_SCRIPT = textwrap.dedent(
    """
    import gc, sys
    from agentledger.client import Ledger

    def run(url, key, agent):
        ledger = Ledger(url, key, agent, spill_dir=None, flush_interval_s=30)
        for i in range(50):
            ledger.log("step_start", {"i": i})
        # the client object is dropped without close()

    run(*sys.argv[1:4])
    gc.collect()
    """
)


def test_a_dropped_client_still_flushes_at_exit(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    script = tmp_path / "gc.py"
    script.write_text(GC_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), ledger_server.url, ledger_server.api_key, agent_name],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    events = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert [e["data"]["i"] for e in events] == list(range(50))
