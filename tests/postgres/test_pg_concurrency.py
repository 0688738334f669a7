"""Several server processes on one PostgreSQL database.

* four writer processes on one agent through two servers: every event stored once, the
  agent's ``sequence_no`` is exactly 1..N, the chain verifies;
* racing duplicates of one ``(agent, idempotency_key)`` resolve to one row (the losers get
  ``duplicate: true``), and one client ``event_id`` raced by two agents to one row and a 409;
* appends of different agents do not wait on each other: while a test connection holds one
  agent's lock, the other agents' writers finish and only that agent's writer waits.
"""

from __future__ import annotations

import itertools
import multiprocessing
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from _writers import write_events

from agentledger.server._store.postgres import advisory_key


@pytest.fixture
def two_servers(server_factory: Any, pg_db: str) -> list[Any]:
    return [server_factory(db=pg_db), server_factory(db=pg_db)]


@pytest.fixture
def processes() -> Iterator[ProcessPoolExecutor]:
    with ProcessPoolExecutor(8, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


def chain(server: Any, agent: str) -> dict[str, Any]:
    response = httpx.get(
        f"{server.url}/v1/events/chain",
        params={"agent": agent},
        headers=server.headers(),
        timeout=120,
    )
    assert response.status_code == 200, response.text
    report: dict[str, Any] = response.json()
    return report


def exported(server: Any, agent: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.url}/v1/events/export",
        params={"agent": agent},
        headers=server.headers(),
        timeout=120,
    )
    assert response.status_code == 200
    return [orjson.loads(line) for line in response.content.splitlines()]


def test_four_writer_processes_two_servers_one_agent(
    two_servers: list[Any], processes: ProcessPoolExecutor, agent_name: str
) -> None:
    writers, per_writer = 4, 2_000
    urls = [s.url for s in two_servers]
    start_at = time.time() + 3.0  # spawned interpreters are up by then; all start together
    futures = [
        processes.submit(
            write_events, urls, two_servers[0].api_key, agent_name, w, per_writer, 100, start_at
        )
        for w in range(writers)
    ]
    results = [f.result(timeout=240) for f in futures]

    total = writers * per_writer
    report = chain(two_servers[1], agent_name)
    assert report["intact"], report["problems"][:5]
    assert report["verified"] == total and report["chain_head"]["sequence_no"] == total
    rows = exported(two_servers[0], agent_name)
    assert [row["sequence_no"] for row in rows] == list(range(1, total + 1))
    stored = {row["event_id"]: row for row in rows}
    for writer, written in enumerate(results):
        assert len(written) == per_writer
        # every write acknowledged is stored, with the acknowledged sequence number, in the
        # writer's own order
        assert all(stored[eid]["sequence_no"] == seq for eid, seq in written)
        assert [stored[eid]["data"] for eid, _ in written] == [
            {"writer": writer, "n": n} for n in range(per_writer)
        ]
        seqs = [seq for _, seq in written]
        assert seqs == sorted(seqs)
    # the writers really interleaved (otherwise this test proves nothing about concurrency)
    owners = [row["data"]["writer"] for row in rows]
    switches = sum(1 for a, b in itertools.pairwise(owners) if a != b)
    assert switches >= writers


def _race(posts: list[tuple[httpx.Client, dict[str, Any]]]) -> list[httpx.Response]:
    """POST each ``(client, body)`` to ``/v1/events`` from threads released by one barrier."""
    barrier = threading.Barrier(len(posts))

    def run(post: tuple[httpx.Client, dict[str, Any]]) -> httpx.Response:
        barrier.wait(30)
        return post[0].post("/v1/events", json=post[1])

    with ThreadPoolExecutor(len(posts)) as pool:
        return list(pool.map(run, posts))


def test_racing_idempotency_keys_resolve_to_one_row(
    two_servers: list[Any], agent_name: str
) -> None:
    clients = [
        httpx.Client(base_url=s.url, headers=s.headers(), timeout=60) for s in two_servers * 3
    ]
    try:
        for key_no in range(25):
            body = {
                "agent": agent_name,
                "event": "charge",
                "data": {"amount": key_no},
                "idempotency_key": f"pay-{key_no}",
            }
            responses = _race([(client, body) for client in clients])
            statuses = sorted(r.status_code for r in responses)
            assert statuses == [200] * (len(clients) - 1) + [201], [r.text for r in responses]
            answers = {(r.json()["event_id"], r.json()["sequence_no"]) for r in responses}
            assert len(answers) == 1
            assert sum(r.json()["duplicate"] for r in responses) == len(clients) - 1
    finally:
        for client in clients:
            client.close()
    report = chain(two_servers[0], agent_name)
    assert report["intact"] and report["verified"] == 25


def test_one_event_id_raced_by_two_agents_is_one_row_and_a_409(
    two_servers: list[Any], agent_name: str
) -> None:
    first, second = f"{agent_name}-x", f"{agent_name}-y"
    clients = [httpx.Client(base_url=s.url, headers=s.headers(), timeout=60) for s in two_servers]
    try:
        for _ in range(15):
            event_id = str(uuid.uuid4())
            responses = _race(
                [
                    (clients[0], {"agent": first, "event": "e", "data": {}, "event_id": event_id}),
                    (clients[1], {"agent": second, "event": "e", "data": {}, "event_id": event_id}),
                ]
            )
            assert sorted(r.status_code for r in responses) == [201, 409], [
                r.text for r in responses
            ]
            loser = next(r for r in responses if r.status_code == 409)
            assert "event_id" in loser.text
    finally:
        for client in clients:
            client.close()
    reports = [chain(two_servers[0], first), chain(two_servers[1], second)]
    assert all(r["intact"] for r in reports)
    assert sum(r["verified"] for r in reports) == 15


def _held_lock_waiters(conn: psycopg.Connection[Any]) -> list[int]:
    """64-bit keys of advisory locks that sessions are waiting for."""
    rows = conn.execute(
        "SELECT classid::bigint, objid::bigint FROM pg_locks "
        "WHERE locktype = 'advisory' AND NOT granted"
    ).fetchall()
    keys = []
    for high, low in rows:
        value = (high << 32) | low
        keys.append(value - (1 << 64) if value >= 1 << 63 else value)
    return keys


def test_appends_of_different_agents_do_not_wait_on_each_other(
    two_servers: list[Any], pg_db: str, agent_name: str
) -> None:
    agents = [f"{agent_name}-{i}" for i in range(8)]
    blocked = agents[0]
    urls = [s.url for s in two_servers]
    key = two_servers[0].api_key
    with psycopg.connect(pg_db) as holder, ThreadPoolExecutor(8) as pool:
        # an open transaction holding agent 0's append lock, as a slow writer would
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(blocked),))
        futures: list[Future[list[tuple[str, int]]]] = [
            pool.submit(write_events, urls, key, agent, i, 300, 50, 0.0)
            for i, agent in enumerate(agents)
        ]
        for future in futures[1:]:
            assert len(future.result(timeout=120)) == 300  # the other seven finish meanwhile
        assert not futures[0].done()
        with psycopg.connect(pg_db, autocommit=True) as observer:
            assert set(_held_lock_waiters(observer)) == {advisory_key(blocked)}
            stored = observer.execute(
                "SELECT count(*) FROM events WHERE agent = %s", (blocked,)
            ).fetchone()
            assert stored == (0,)
        holder.rollback()  # releases the lock: agent 0's writer proceeds
        assert len(futures[0].result(timeout=120)) == 300
    for agent in agents:
        report = chain(two_servers[0], agent)
        assert report["intact"] and report["verified"] == 300, report["summary"]


def test_eight_agents_in_parallel_all_chains_gapless(
    two_servers: list[Any], processes: ProcessPoolExecutor, agent_name: str
) -> None:
    agents = [f"{agent_name}-{i}" for i in range(8)]
    urls = [s.url for s in two_servers]
    start_at = time.time() + 3.0
    started = time.perf_counter()
    futures = [
        processes.submit(write_events, urls, two_servers[0].api_key, agent, i, 1_000, 100, start_at)
        for i, agent in enumerate(agents)
    ]
    for future in futures:
        assert len(future.result(timeout=240)) == 1_000
    elapsed = time.perf_counter() - started - 3.0
    for agent in agents:
        report = chain(two_servers[1], agent)
        assert report["intact"] and report["chain_head"]["sequence_no"] == 1_000
    print(f"8 agents x 1,000 events through 2 servers: {8_000 / max(elapsed, 1e-3):,.0f} ev/s")
