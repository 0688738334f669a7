"""Chaos: the server is SIGKILLed and restarted twice while a writer logs 20,000 events."""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentledger.client import Ledger

from .conftest import chain_report, stored_events

TOTAL = 20_000


@pytest.mark.slow
def test_chaos_sigkill_restarts_lose_nothing_and_duplicate_nothing(
    server_factory: Any, store_db: str, agent_name: str, tmp_path: Path
) -> None:
    """Delivery: kill -9 of the server twice during a 20,000-event stream: exactly 20,000
    stored, none twice, the chain intact (SQLite and PostgreSQL)."""
    server = server_factory(db=store_db)
    ledger = Ledger(server.url, server.api_key, agent_name, spill_dir=tmp_path / "spill")
    refs: list[str] = []

    def writer() -> None:
        parent = None
        for i in range(TOTAL):
            ref = ledger.log("step_start", {"i": i}, parent_id=parent, session_id=f"s{i // 100}")
            refs.append(ref.event_id)
            parent = ref if i % 100 else None
            if i % 250 == 0:
                time.sleep(0.1)  # ~2,500 events/s for ~8 s

    thread = threading.Thread(target=writer)
    started = time.monotonic()
    thread.start()
    try:
        for kill_at, back_at in ((1.5, 2.5), (4.5, 5.5)):
            time.sleep(max(0.0, started + kill_at - time.monotonic()))
            server.kill()
            time.sleep(max(0.0, started + back_at - time.monotonic()))
            server.start()
    finally:
        thread.join(120)
    deadline = time.monotonic() + 120
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        ledger.flush(10)
        events = stored_events(server.url, server.api_key, agent_name)
        if len(events) >= TOTAL:
            break
        time.sleep(0.5)
    ledger.close(10)
    stats = ledger.stats()

    ids = [e["event_id"] for e in events]
    duplicates = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert duplicates == []
    assert len(ids) == TOTAL, stats
    assert set(ids) == set(refs)
    assert [e["sequence_no"] for e in events] == list(range(1, TOTAL + 1))
    report = chain_report(server.url, server.api_key, agent_name)
    assert report["intact"] is True, report
    assert stats.sent + stats.unspilled >= TOTAL or stats.sent >= TOTAL
    assert stats.retried > 0  # the kills were felt
