"""Verification of an agent that is still writing (docs/design/server-chain.md, "Verifying a
live agent"): the head, the chain rows and the causal edges come from one read snapshot, so
events that land while verify runs are neither half-seen nor reported as a truncated chain.
Both stores; a real server for the HTTP check."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx
import pytest

from _servers import ServerProcess
from agentledger.server._chain import verify_rows
from agentledger.server._chain_head import check_head
from agentledger.server._ingest import PreparedEvent, now_ts, prepare, validate_item
from agentledger.server._store import open_store
from agentledger.server._store.base import LedgerStore


def _events(agent: str, count: int, first_parent: str | None) -> list[dict[str, Any]]:
    """``count`` steps, each caused by the one before (a parent edge and a ``caused_by``
    edge), so every row has stored edges to compare."""
    items, parent = [], first_parent
    for i in range(count):
        event_id = str(uuid.uuid4())
        item: dict[str, Any] = {"agent": agent, "event": "step", "data": {"i": i}}
        item["event_id"] = event_id
        if parent is not None:
            item["parent_id"] = parent
            item["caused_by"] = [{"event_id": parent, "kind": "read"}]
        items.append(item)
        parent = event_id
    return items


def _prepared(items: list[dict[str, Any]]) -> list[PreparedEvent]:
    return [
        prepare(validate_item(i), max_depth=64, patterns=(), received_at=now_ts()) for i in items
    ]


def _append(store: LedgerStore, agent: str, count: int, parent: str | None) -> str:
    items = _events(agent, count, parent)
    assert all(outcome.ok for outcome in store.append(_prepared(items)))
    last: str = items[-1]["event_id"]
    return last


@pytest.mark.parametrize("consumed_before_writes", [0, 1500])
def test_a_snapshot_does_not_see_writes_that_land_while_it_is_read(
    store_db: str, consumed_before_writes: int
) -> None:
    """Writes land after the snapshot opened (before any row is read, or half-way through):
    the snapshot still walks exactly the rows its head counts, edges included."""
    agent = "live-agent"
    store = open_store(store_db)
    try:
        last = _append(store, agent, 3000, None)
        with store.chain_snapshot(agent) as snapshot:
            rows = iter(snapshot.rows)
            taken = [next(rows) for _ in range(consumed_before_writes)]
            last = _append(store, agent, 700, last)  # the agent goes on writing
            report = verify_rows([*taken, *rows], store.hasher, edges=snapshot.edges)
        check_head(report, snapshot.head)
        assert snapshot.head is not None and snapshot.head.last_seq == 3000
        assert report.problems == [] and report.intact
        assert report.verified == 3000 and report.head_seq == 3000
        with store.chain_snapshot(agent, after_seq=3000) as later:  # the next look sees them
            tail = verify_rows(
                later.rows,
                store.hasher,
                start_seq=3000,
                previous_hash=report.head_hash,
                edges=later.edges,
            )
        check_head(tail, later.head)
        assert tail.problems == [] and tail.verified == 700 and tail.head_seq == 3700
    finally:
        store.close()


def test_leaving_a_snapshot_early_releases_it(store_db: str) -> None:
    """A caller that stops reading (an error mid-verify) ends the read transaction: the
    writer goes on and the next snapshot sees the new rows."""
    agent = "early-exit"
    store = open_store(store_db)
    try:
        last = _append(store, agent, 50, None)
        with pytest.raises(RuntimeError), store.chain_snapshot(agent) as snapshot:
            next(iter(snapshot.rows))
            raise RuntimeError("the caller gives up")
        _append(store, agent, 10, last)
        with store.chain_snapshot(agent) as again:
            assert again.head is not None and again.head.last_seq == 60
            assert sum(1 for _ in again.rows) == 60
    finally:
        store.close()


def test_verify_of_an_agent_that_is_writing_is_clean(store_server: ServerProcess) -> None:
    """A writer posts batches while GET /v1/events/chain runs again and again: every report
    is intact and counts at least what was acknowledged before it was asked."""
    agent = f"live-{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {store_server.api_key}"}
    acknowledged = 0
    lock = threading.Lock()
    failures: list[str] = []
    done = threading.Event()

    def write() -> None:
        nonlocal acknowledged
        parent = None
        try:
            with httpx.Client(base_url=store_server.url, headers=headers, timeout=30) as client:
                for _ in range(40):
                    items = _events(agent, 100, parent)
                    response = client.post("/v1/events/batch", json={"events": items})
                    if response.status_code != 200:
                        failures.append(response.text)
                        return
                    parent = items[-1]["event_id"]
                    with lock:
                        acknowledged += len(items)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    reports = 0
    with httpx.Client(base_url=store_server.url, headers=headers, timeout=60) as client:
        while not done.is_set() or reports == 0:
            with lock:
                floor = acknowledged
            response = client.get("/v1/events/chain", params={"agent": agent})
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["problems"] == [], body["problems"][:3]
            assert body["intact"] is True and body["verified"] >= floor
            reports += 1
    writer.join()
    assert failures == []
    final = httpx.get(
        f"{store_server.url}/v1/events/chain", params={"agent": agent}, headers=headers
    ).json()
    assert final["intact"] is True and final["verified"] == 4000
    assert reports >= 3  # verify really ran while the writer was going
