"""Many threads, an event loop that must keep running, and arbitrary values."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agentledger.client import AsyncLedger
from agentledger.client.sanitize import snapshot

from .conftest import Twin, stored_events


async def test_threads_logging_at_once_store_every_event_once(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    client = twin.make(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
    ids: list[str] = []
    lock = threading.Lock()

    def work(worker: int) -> None:
        mine = [client.log("step_start", {"worker": worker, "i": i}).event_id for i in range(400)]
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert (await twin.flush(client, 20)).complete
    finally:
        await twin.close(client, 5)
    stored = [
        e["event_id"] for e in stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    ]
    assert len(stored) == len(set(stored)) == 1600
    assert set(stored) == set(ids)
    assert client.stats().enqueued == 1600


async def test_async_flush_does_not_block_the_event_loop(closed_url: str, agent_name: str) -> None:
    """``await flush()`` against a dead server waits without blocking other coroutines."""
    client = AsyncLedger(closed_url, "k", agent_name, spill_dir=None)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    try:
        client.log("step_start", {})
        started = time.monotonic()
        result = await client.flush(1.0)
        assert not result.complete and result.pending == 1
        assert 0.9 <= time.monotonic() - started < 1.5
        assert ticks >= 50  # the loop kept running during the wait
    finally:
        task.cancel()
        await client.aclose(0.2)


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=50),
    st.binary(max_size=20),
    st.sets(st.integers(), max_size=3),
    st.datetimes(),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False),
)
values = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(st.one_of(st.text(max_size=10), st.integers()), children, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(values)
def test_snapshot_always_gives_json(value: Any) -> None:
    """Any mix of supported and odd values becomes valid JSON; nothing raises."""
    out = snapshot(value, max_string_chars=40)
    parsed = orjson.loads(out)
    if isinstance(value, str) and len(value) > 40:
        assert parsed.endswith(f"[cut, {len(value)} chars]")
