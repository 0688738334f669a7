"""Point reads on the event loop (docs/design/server-store.md, "Reads on the event loop").

On SQLite, ``GET /v1/events/{id}`` and the API-key lookup of every request are read on the
event loop instead of in a worker thread. These tests check that:

* the answers equal the pooled reads (present, missing and erased events; active, revoked and
  unknown keys), and a revoked key is refused on its next request;
* a point read answers while every worker thread is taken, while PostgreSQL and a record
  above the inline size limit wait for a thread;
* a held lock sends the read to a worker thread without stalling the loop, and an idle inline
  connection holds no read snapshot;
* one thread at a time owns the connection (also a thread not started by ``threading``), and
  closing the store while another thread reads is safe.

That the inline reader opens the file the pool opens is in ``test_sqlite_paths.py``.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
from fastapi import FastAPI

from _stores import SQLITE_ONLY
from agentledger.server._auth import new_key
from agentledger.server._store import LedgerStore
from agentledger.server._store._inline import INLINE_RECORD_MAX_BYTES
from agentledger.server._store.base import WouldBlock
from agentledger.server._store.sqlite import SQLiteStore

AGENT = "inline-reads"


async def _post(client: httpx.AsyncClient, *data: dict[str, Any]) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in data]
    events = [
        {"agent": AGENT, "event": "step", "event_id": event_id, "session_id": "s", "data": d}
        for event_id, d in zip(ids, data, strict=True)
    ]
    response = await client.post("/v1/events/batch", json={"events": events})
    assert response.status_code < 300, response.text
    return ids


def _api_key(store: LedgerStore, *, revoked: bool = False) -> tuple[str, str]:
    raw, record = new_key(name="inline", agent=None, scope="read_write", expires_in_days=None)
    store.create_key(record)
    if revoked:
        assert store.revoke_key(record.key_id, at="2026-01-01T00:00:00.000000+00:00")
    return raw, record.key_hash


@contextlib.asynccontextmanager
async def _every_worker_thread_taken() -> AsyncIterator[None]:
    """The loop's worker-thread limiter cut to one token, and that token held: a read that
    needs a worker thread waits until the block ends."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    total = limiter.total_tokens
    limiter.total_tokens = 1
    await limiter.acquire()
    try:
        yield
    finally:
        limiter.release()
        limiter.total_tokens = total


def _inline_read_in_a_new_thread(store: SQLiteStore, event_id: str) -> object:
    """``get_event_inline`` in a thread of its own, which then ends: its answer, or the
    :class:`WouldBlock` it raised."""
    outcome: list[object] = []

    def read() -> None:
        try:
            outcome.append(store.get_event_inline(event_id))
        except WouldBlock as error:
            outcome.append(error)

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(10)
    (answer,) = outcome
    return answer


@pytest.fixture
async def keyed_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client with a stored API key (not the dev key), so each request looks its key up."""
    raw, _ = _api_key(app.state.store)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {raw}"},
    ) as client:
        yield client


@SQLITE_ONLY
async def test_inline_reads_equal_the_pooled_reads(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    store: SQLiteStore = app.state.store
    kept, erased = await _post(app_client, {"x": 1.5, "s": "é"}, {"user": "erase-me"})
    response = await app_client.request(
        "DELETE", "/v1/memory/forget", json={"filter_key": "user", "filter_value": "erase-me"}
    )
    assert response.status_code == 200 and response.json()["deleted_events"] == 1
    for event_id in (kept, erased, str(uuid.uuid4())):
        assert store.get_event_inline(event_id) == store.get_event(event_id)
    assert store.get_event_inline(kept) is not None
    erased_event = store.get_event_inline(erased)
    assert erased_event is not None and erased_event["erased"] is True  # the tombstone
    assert erased_event["data"] == {}
    hashes = [_api_key(store)[1], _api_key(store, revoked=True)[1], "0" * 64]
    for key_hash in hashes:
        assert store.key_by_hash_inline(key_hash) == store.key_by_hash(key_hash)
    revoked = store.key_by_hash_inline(hashes[1])
    assert revoked is not None and revoked.revoked_at is not None


@SQLITE_ONLY
async def test_a_revoked_key_is_refused_at_once(
    app: FastAPI, keyed_client: httpx.AsyncClient
) -> None:
    store: SQLiteStore = app.state.store
    raw, key_hash = _api_key(store)
    headers = {"Authorization": f"Bearer {raw}"}
    assert (await keyed_client.get("/v1/agents", headers=headers)).status_code == 200
    record = store.key_by_hash(key_hash)
    assert record is not None and store.revoke_key(record.key_id, at="2026-01-01T00:00:00Z")
    assert (await keyed_client.get("/v1/agents", headers=headers)).status_code == 401


async def test_a_point_read_answers_while_every_worker_thread_is_taken(
    app: FastAPI, app_client: httpx.AsyncClient, keyed_client: httpx.AsyncClient, store_kind: str
) -> None:
    (event_id,) = await _post(app_client, {"x": 1})
    async with _every_worker_thread_taken():
        request = keyed_client.get(f"/v1/events/{event_id}")
        if store_kind == "sqlite":
            response = await asyncio.wait_for(request, 5.0)
            assert response.status_code == 200 and response.json()["event_id"] == event_id
        else:  # PostgreSQL reads in worker threads: it waits for one
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(request, 0.5)
    response = await keyed_client.get(f"/v1/events/{event_id}")
    assert response.status_code == 200 and response.json()["event_id"] == event_id
    if store_kind != "sqlite":
        with pytest.raises(WouldBlock):
            app.state.store.get_event_inline(event_id)
        with pytest.raises(WouldBlock):
            app.state.store.key_by_hash_inline("0" * 64)


@SQLITE_ONLY
async def test_a_held_lock_sends_the_read_to_a_worker_thread_without_stalling_the_loop(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    store: SQLiteStore = app.state.store
    (event_id,) = await _post(app_client, {"x": 1})
    store.engine.dispose()  # no pooled connection left open: another may lock the file
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("PRAGMA locking_mode=EXCLUSIVE")
    other.execute("BEGIN EXCLUSIVE")
    start = time.monotonic()
    with pytest.raises(WouldBlock):
        store.get_event_inline(event_id)
    assert time.monotonic() - start < 0.5  # it fails at once instead of waiting
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            start = time.monotonic()
            await asyncio.sleep(0.01)
            gaps.append(time.monotonic() - start)

    async def release() -> None:
        await asyncio.sleep(1.0)
        other.execute("COMMIT")
        other.close()

    async def get() -> tuple[httpx.Response, float]:
        await asyncio.sleep(0.1)  # the ticker is running: a stalled loop shows as a gap
        start = time.monotonic()
        response = await app_client.get(f"/v1/events/{event_id}")
        done.set()
        return response, time.monotonic() - start

    (response, took), _, _ = await asyncio.gather(get(), tick(), release())
    assert response.status_code == 200 and response.json()["event_id"] == event_id
    assert 0.7 <= took < 5  # it waited for the lock (1 s) in a worker thread
    assert len(gaps) > 20 and max(gaps) < 0.5  # while the loop went on


@SQLITE_ONLY
def test_a_closed_store_does_not_read_inline(app: FastAPI) -> None:
    store: SQLiteStore = app.state.store
    assert store.get_event_inline(str(uuid.uuid4())) is None
    store.close()
    with pytest.raises(WouldBlock):
        store.get_event_inline(str(uuid.uuid4()))
    with pytest.raises(WouldBlock):
        store.key_by_hash_inline("0" * 64)


@SQLITE_ONLY
async def test_inline_readers_hold_no_read_snapshot(
    app: FastAPI, app_client: httpx.AsyncClient
) -> None:
    """An idle inline connection must not pin the WAL: forget's TRUNCATE checkpoint, which
    moves erased content out of it, has to finish."""
    store: SQLiteStore = app.state.store
    (event_id,) = await _post(app_client, {"x": 1})
    _, key_hash = _api_key(store)
    assert store.get_event_inline(event_id) is not None
    assert store.key_by_hash_inline(key_hash) is not None
    other = sqlite3.connect(store.path, isolation_level=None)
    try:
        busy, _, _ = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        other.close()
    assert busy == 0


async def test_a_large_record_is_answered_from_a_worker_thread(
    app: FastAPI, app_client: httpx.AsyncClient, store_kind: str
) -> None:
    """A record above INLINE_RECORD_MAX_BYTES would hold the loop while it is parsed and
    serialized: it waits for a worker thread like any read on PostgreSQL."""
    small, large = await _post(app_client, {"x": 1}, {"text": "y" * (INLINE_RECORD_MAX_BYTES + 1)})
    async with _every_worker_thread_taken():
        if store_kind == "sqlite":
            response = await asyncio.wait_for(app_client.get(f"/v1/events/{small}"), 5.0)
            assert response.status_code == 200
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(app_client.get(f"/v1/events/{large}"), 0.5)
    response = await app_client.get(f"/v1/events/{large}")
    assert response.status_code == 200
    assert response.json() == app.state.store.get_event(large)


@SQLITE_ONLY
def test_one_thread_at_a_time_reads_inline(app: FastAPI) -> None:
    """The connection belongs to one live thread; another falls back to the pool until that
    thread ends, and short-lived threads do not leave a connection each behind."""
    store: SQLiteStore = app.state.store
    missing = str(uuid.uuid4())
    owner_read, release = threading.Event(), threading.Event()

    def owner() -> None:
        assert store.get_event_inline(missing) is None
        owner_read.set()
        release.wait(10)

    first = threading.Thread(target=owner)
    first.start()
    assert owner_read.wait(10)
    refused = _inline_read_in_a_new_thread(store, missing)
    assert isinstance(refused, WouldBlock)
    release.set()
    first.join(10)
    # the refusal is kept (as a caller logging it would keep it, traceback and all): it must
    # not keep the ended owner's claim alive
    assert refused.__traceback__ is not None
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(50):  # each takes the connection over from the ended one before it
        assert _inline_read_in_a_new_thread(store, missing) is None
    assert len(os.listdir("/proc/self/fd")) <= fds + 2


def _read_until_closed(store: SQLiteStore, key_hash: str, outcome: list[object]) -> None:
    """Inline reads until the store is closed; ``outcome`` gets the count, or the error."""
    reads = 0
    while True:
        try:
            store.key_by_hash_inline(key_hash)
            store.get_event_inline(str(uuid.uuid4()))
            reads += 1
        except WouldBlock:
            outcome.append(reads)
            return
        except BaseException as error:
            outcome.append(error)
            return


def test_closing_the_store_while_another_thread_reads_inline(tmp_path: Path) -> None:
    """close() waits for a read in progress instead of closing its connection under it (which
    crashed the process when it did)."""
    for round_no in range(20):
        store = SQLiteStore(str(tmp_path / f"ledger-{round_no}.db"))
        _, key_hash = _api_key(store)
        outcome: list[object] = []
        reader = threading.Thread(target=_read_until_closed, args=(store, key_hash, outcome))
        reader.start()
        time.sleep(0.01)
        store.close()
        reader.join(10)
        (reads,) = outcome
        assert isinstance(reads, int) and reads > 0, reads
        with pytest.raises(WouldBlock):
            store.get_event_inline(str(uuid.uuid4()))


@SQLITE_ONLY
def test_a_thread_not_started_by_threading_hands_the_connection_over(app: FastAPI) -> None:
    """Such a thread reports itself alive forever (``threading._DummyThread``); ownership is
    tied to the thread's own storage instead, which is freed when it ends."""
    store: SQLiteStore = app.state.store
    missing = str(uuid.uuid4())
    done = threading.Event()
    seen: list[object] = []

    def foreign() -> None:
        seen.append(store.get_event_inline(missing))
        done.set()

    _thread.start_new_thread(foreign, ())
    assert done.wait(10) and seen == [None]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until the foreign thread's state is gone
        if _inline_read_in_a_new_thread(store, missing) is None:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the connection was never handed over")
