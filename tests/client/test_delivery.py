"""The delivery contract (README "Delivery"; docs/pages/client.md "Delivery"), against real
servers on SQLite and PostgreSQL: bursts far above the queue, a paused server, an earlier
process's backlog, a poisoned item, a wrong key. Each test reads back what is stored and what
is on disk and checks the counters against it."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agentledger.client import DeliveryError, Ledger, RetryPolicy

from .conftest import FaultTransport, chain_report, stored_events


def _on_disk(spill_dir: Path) -> int:
    """Event lines in spill segments (the dead-letter file is not a segment)."""
    return sum(p.read_bytes().count(b"\n") for p in spill_dir.rglob("seg-*.ndjson") if p.is_file())


def _stored_count(ledger: Ledger, agent: str) -> int:
    for info in ledger.agents():
        if info.agent == agent:
            return info.event_count
    return 0


def _balanced(ledger: Ledger) -> None:
    """The bookkeeping identity of ``Stats`` holds."""
    s = ledger.stats()
    assert s.enqueued == s.sent + s.failed + s.dropped + s.queue_depth + s.in_spill, s


@pytest.mark.slow
def test_a_burst_of_200000_is_stored_when_flush_returns(
    server_factory: Any, store_db: str, agent_name: str, tmp_path: Path
) -> None:
    """Delivery: a burst far above the queue, then ``flush()``: every event is stored when it
    returns with ``complete=True``, and ``close()`` leaves the spill directory empty."""
    server = server_factory(db=store_db)
    spill = tmp_path / "spill"
    ledger = Ledger(server.url, server.api_key, agent_name, spill_dir=spill)
    total = 200_000
    for i in range(total):
        ledger.log("step_start", {"i": i, "note": "burst"}, session_id=f"s{i // 1000}")
    _balanced(ledger)
    result = ledger.flush(timeout_s=600)
    assert result.complete, result
    assert result.pending == result.in_memory == result.in_spill == result.in_backlog == 0
    assert _stored_count(ledger, agent_name) == total
    stats = ledger.stats()
    assert stats.sent == total and stats.dropped == stats.failed == 0, stats
    report = chain_report(server.url, server.api_key, agent_name)  # a long timeout
    assert report["intact"] is True, report["summary"]
    closed = ledger.close(30)
    assert closed.complete and closed.pending == 0
    assert _on_disk(spill) == 0 and list(spill.rglob("seg-*.ndjson")) == []


@pytest.mark.slow
def test_a_paused_server_mid_burst_gets_everything_and_flush_stays_honest(
    server_factory: Any, store_db: str, agent_name: str, tmp_path: Path
) -> None:
    """Delivery: the server stops answering (SIGSTOP) for 5 s in the middle of a burst; the
    queue overflows, so its oldest events move to the spill; a flush during the pause says
    how much is outstanding and where; once the server answers again, everything is stored,
    in the order it was logged, once."""
    server = server_factory(db=store_db)
    spill = tmp_path / "spill"
    ledger = Ledger(server.url, server.api_key, agent_name, spill_dir=spill, max_queue_events=5000)
    total = 60_000
    try:
        for i in range(total // 2):
            ledger.log("step_start", {"i": i})
        os.kill(server.proc.pid, signal.SIGSTOP)
        paused = time.monotonic()
        for i in range(total // 2, total):
            ledger.log("step_start", {"i": i})
        during = ledger.flush(timeout_s=1.0)
        assert not during.complete
        assert during.pending == during.in_memory + during.in_spill + during.in_backlog > 0
        _balanced(ledger)
        time.sleep(max(0.0, paused + 5.0 - time.monotonic()))
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    after = ledger.flush(timeout_s=300)
    assert after.complete and after.pending == 0, after
    _balanced(ledger)
    stats = ledger.stats()
    assert stats.spilled > 0 and stats.unspilled == stats.spilled, stats
    ledger.close(10)
    events = stored_events(server.url, server.api_key, agent_name)
    assert [e["data"]["i"] for e in events] == list(range(total))  # in order, once each
    assert _on_disk(spill) == 0


EARLIER_PROCESS = textwrap.dedent(
    """
    import sys
    from agentledger.client import Ledger

    url, key, agent, spill, count = sys.argv[1:6]
    ledger = Ledger(url, key, agent, spill_dir=spill, flush_timeout_s=0.5)
    for i in range(int(count)):
        ledger.log("step_start", {"i": i})
    result = ledger.close()
    print(result.in_spill)
    """
)


def test_an_earlier_process_backlog_is_stored_by_the_next_flush(
    server_factory: Any, store_db: str, agent_name: str, tmp_path: Path
) -> None:
    """Delivery: a process exits while the server is down, leaving its events in the spill;
    the next process's ``flush()`` adopts that backlog and returns complete only once it is
    stored, and its ``close()`` leaves nothing on disk."""
    server = server_factory(db=store_db, start=False)
    spill = tmp_path / "spill"
    script = tmp_path / "earlier.py"
    script.write_text(EARLIER_PROCESS)
    done = subprocess.run(
        [sys.executable, str(script), server.url, server.api_key, agent_name, str(spill), "7000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) == 7000 == _on_disk(spill)

    server.start()
    later = Ledger(server.url, server.api_key, agent_name, spill_dir=spill)
    mine = later.log("step_start", {"i": "later"})
    result = later.flush(timeout_s=60)
    assert result.complete and result.in_backlog == 0, result
    stats = later.stats()
    assert stats.backlog_adopted == stats.backlog_sent == 7000 and stats.sent == 1, stats
    closed = later.close(10)
    assert closed.complete
    events = stored_events(server.url, server.api_key, agent_name)
    assert [e["data"]["i"] for e in events[:7000]] == list(range(7000))
    assert {e["event_id"] for e in events[7000:]} == {mine.event_id}
    assert _on_disk(spill) == 0


def test_a_poisoned_item_is_dead_lettered_and_its_batch_stored(
    server_factory: Any, store_db: str, agent_name: str, tmp_path: Path, caplog: Any
) -> None:
    """Delivery: one item of a batch of 500 that the server refuses (an event naming itself
    as its cause): the other 499 are stored, the refused one is written to the dead-letter
    file with the server's reason, counted as failed, and never retried."""
    server = server_factory(db=store_db)
    errors: list[DeliveryError] = []
    ledger = Ledger(
        server.url,
        server.api_key,
        agent_name,
        spill_dir=tmp_path / "spill",
        flush_interval_s=30,  # one batch of 500, sent by flush()
        on_error=errors.append,
    )
    poison = str(uuid.uuid4())
    for i in range(500):
        if i == 250:
            ledger.log("step_start", {"i": i}, event_id=poison, parent_id=poison)
        else:
            ledger.log("step_start", {"i": i})
    result = ledger.flush(timeout_s=30)
    again = str(uuid.uuid4())
    ledger.log("step_start", {"i": "again"}, event_id=again, parent_id=again)
    assert ledger.flush(timeout_s=30).failed == 1
    assert result.complete and result.sent == 499 and result.failed == 1, result
    assert result.dead_lettered == 1
    stats = ledger.stats()
    ledger.close(5)
    assert stats.retried == 0 and stats.failed == stats.dead_lettered == 2
    warnings = [
        r for r in caplog.records if "refused" in r.getMessage() and "for good" in r.getMessage()
    ]
    assert len(warnings) == 1  # warned once, counted always
    stored = stored_events(server.url, server.api_key, agent_name)
    assert [e["data"]["i"] for e in stored] == [i for i in range(500) if i != 250]
    assert ledger.dead_letter_path is not None
    lines = ledger.dead_letter_path.read_bytes().splitlines()
    assert len(lines) == 2
    entry = orjson.loads(lines[0])
    assert entry["event"]["event_id"] == poison and entry["status"] == 422
    assert "parent_id" in entry["reason"] or "cause" in entry["reason"], entry["reason"]
    assert [e.kind for e in errors] == ["rejected", "rejected"]


def test_a_wrong_key_is_an_error_within_a_second_and_the_events_are_kept(
    store_server: Any, agent_name: str, tmp_path: Path, caplog: Any
) -> None:
    """Delivery: a key the server refuses (401) is a logged error, a ``stats().last_error``
    and an ``on_error`` call within a second, not an outage; the events are kept on disk and
    a client with the right key delivers them."""
    spill = tmp_path / "spill"
    seen = threading.Event()
    errors: list[DeliveryError] = []

    def on_error(error: DeliveryError) -> None:
        errors.append(error)
        seen.set()

    wrong = Ledger(store_server.url, "not-the-key", agent_name, spill_dir=spill, on_error=on_error)
    started = time.monotonic()
    refs = [wrong.log("step_start", {"i": i}) for i in range(20)]
    assert seen.wait(1.0), "no on_error call within 1 s"
    assert time.monotonic() - started < 1.0
    assert errors[0].kind == "unauthorized" and errors[0].status == 401
    assert wrong.stats().last_error is not None and "401" in wrong.stats().last_error
    assert wrong.stats().last_error_kind == "unauthorized"
    assert any(r.levelname == "ERROR" and "401" in r.getMessage() for r in caplog.records)
    closed = wrong.close(1.0)
    assert not closed.complete and closed.in_spill == 20 and closed.dropped == 0
    assert _on_disk(spill) == 20

    right = Ledger(store_server.url, store_server.api_key, agent_name, spill_dir=spill)
    assert right.flush(timeout_s=30).complete
    right.close(5)
    stored = stored_events(store_server.url, store_server.api_key, agent_name)
    assert [e["event_id"] for e in stored] == [r.event_id for r in refs]


def test_a_wrong_url_path_is_an_error_within_a_second_and_the_events_are_kept(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """Delivery: a URL whose path the server does not serve (404) is reported like a wrong
    key (an error, ``on_error``), and the events are kept on disk, not dropped."""
    seen = threading.Event()
    errors: list[DeliveryError] = []

    def on_error(error: DeliveryError) -> None:
        errors.append(error)
        seen.set()

    spill = tmp_path / "spill"
    ledger = Ledger(
        ledger_server.url + "/not-here",
        ledger_server.api_key,
        agent_name,
        spill_dir=spill,
        on_error=on_error,
    )
    for i in range(5):
        ledger.log("step_start", {"i": i})
    assert seen.wait(1.0), "no on_error call within 1 s"
    assert errors[0].kind == "not_found" and errors[0].status == 404
    closed = ledger.close(0.5)
    assert closed.in_spill == 5 and closed.dropped == 0 and not closed.complete
    assert _on_disk(spill) == 5


def test_the_documented_queue_defaults() -> None:
    """Delivery: the queue holds up to 64 MiB or 100,000 events by default."""
    import inspect

    params = inspect.signature(Ledger).parameters
    assert params["max_queue_bytes"].default == 64 * 1024 * 1024
    assert params["max_queue_events"].default == 100_000


def test_an_event_the_key_may_not_write_is_parked_and_the_rest_flows(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """Delivery: an event for an agent the key may not write (per-event 403) is parked on
    disk while the others keep flowing; ``flush()`` returns once only parked events are left
    and says so; a client whose key may write it delivers it."""
    spill = tmp_path / "spill"
    created = httpx.post(
        f"{ledger_server.url}/v1/keys",
        json={"name": f"bound-{agent_name}", "agent": agent_name, "scope": "read_write"},
        headers=ledger_server.headers(),
        timeout=10,
    )
    assert created.status_code == 201, created.text
    other = f"other-{agent_name}"
    bound = Ledger(ledger_server.url, created.json()["key"], agent_name, spill_dir=spill)
    foreign = bound.log("step_start", {"foreign": True}, agent=other)
    mine = [bound.log("step_start", {"i": i}) for i in range(20)]
    started = time.monotonic()
    result = bound.flush(timeout_s=20)
    assert time.monotonic() - started < 10  # returns when only the parked event is left
    assert not result.complete and result.in_spill == 1 and result.in_memory == 0, result
    assert bound.stats().last_error_kind == "forbidden"
    bound.close(1)
    stored = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert [e["event_id"] for e in stored] == [r.event_id for r in mine]

    admin = Ledger(ledger_server.url, ledger_server.api_key, other, spill_dir=spill)
    assert admin.flush(timeout_s=20).complete
    admin.close(5)
    stored_other = stored_events(ledger_server.url, ledger_server.api_key, other)
    assert [e["event_id"] for e in stored_other] == [foreign.event_id]
    assert _on_disk(spill) == 0 and list(spill.rglob("held-*.ndjson")) == []


def test_a_server_away_is_retried_with_backoff_then_probed_at_doubling_intervals(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """Delivery (outages): connection errors are retried with jittered backoff until the
    retry deadline, then the server is probed at doubling intervals; never a tight loop,
    and the first answer delivers everything."""
    times: list[float] = []
    away = {"on": True}

    def fault(_: int) -> str | None:
        times.append(time.monotonic())
        return "raise_before" if away["on"] else None

    ledger = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=tmp_path / "spill",
        sender_transport=FaultTransport(fault),
        retry=RetryPolicy(deadline_s=1.0, initial_backoff_s=0.05, max_backoff_s=0.5),
    )
    refs = [ledger.log("step_start", {"i": i}) for i in range(50)]
    time.sleep(6.0)
    attempts = len(times)
    assert attempts <= 20, f"{attempts} attempts in 6 s: a tight loop"
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert gaps[-1] > 1.5 * max(gaps[:3]), gaps  # the probes drift apart
    away["on"] = False
    assert ledger.flush(timeout_s=20).complete
    ledger.close(5)
    stored = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert [e["event_id"] for e in stored] == [r.event_id for r in refs]


def test_a_trickle_after_a_full_batch_waits_for_the_interval_and_flush_sends_it(
    ledger_server: Any, agent_name: str
) -> None:
    """Delivery: a full batch goes at once; the events that trickle in after it wait for
    ``flush_interval_s`` as one partial batch (not one small request per answer); ``flush()``
    sends them at once; each event is stored once, in order."""
    transport = FaultTransport(lambda _: None)
    ledger = Ledger(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=None,
        sender_transport=transport,
        flush_interval_s=60.0,
    )
    refs = [ledger.log("step_start", {"i": i}) for i in range(500)]  # a full batch: sent now
    for i in range(300):  # then an agent's pace, while that batch is at the server
        refs.append(ledger.log("step_start", {"i": 500 + i}))
        time.sleep(0.002)
    time.sleep(0.3)
    assert transport.batches == 1, f"{transport.batches} requests for a trickle of 300 events"
    assert ledger.stats().sent == 500
    started = time.monotonic()
    result = ledger.flush(timeout_s=20)
    assert result.complete and result.sent == 300, result
    assert time.monotonic() - started < 10  # the flush did not wait for the 60 s interval
    assert transport.batches == 2
    ledger.close(5)
    stored = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    assert [e["event_id"] for e in stored] == [r.event_id for r in refs]
