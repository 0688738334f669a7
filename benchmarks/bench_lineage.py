"""Lineage benchmark: why() and impact() over HTTP next to a direct recursive SQL query.

For each store (SQLite file, PostgreSQL database) a real ``agentledger serve`` is loaded with an
agent run shaped like the integrations write it: a user message, then rounds of a model call
that reads the previous round's two tool results (``caused_by``), its end, two tool calls it
requested and their results, and a final answer: a run of about 1,000 events and one of about
10,000 (``--quick``: the first alone), every event a causal descendant of the user message and
an ancestor of the answer.

Measured, interleaved in rounds so both sides see the same machine load (medians):

* ``why(answer)`` over HTTP (``depth`` 10,000) vs a direct ``WITH RECURSIVE`` query over the
  same edge table that returns the same events' stored records, on a driver connection
  (``sqlite3`` / ``psycopg``) in this process;
* ``impact(user_message)`` over HTTP vs the mirror direct query;
* ``GET /v1/events/{id}`` of one event of the run (the median of 200 calls a round) vs the
  server's select of that event on the driver connection and the same JSON built in this
  process (``event_dict`` and one ``orjson.dumps``; the bytes are checked equal).

A third column runs the server's own lineage statement directly on the driver connection (the
events with their edges, as the server reads them), to show how much of the time is the
database and how much the shaping into a DAG, JSON and HTTP. A fourth runs that statement and
builds the same answer's JSON in this process with orjson (events in time order spliced from
their stored records, sorted edge objects, one ``orjson.dumps``): "the same query run directly
with the same JSON assembly", without HTTP, FastAPI or the server's checks of bounds.

Requests carry a stored API key (created through ``POST /v1/keys``), so each one pays the key
lookup a user's request pays. Without a reachable PostgreSQL the SQLite rows are measured
alone and the script says so.

Targets: HTTP at most 1.5x the direct query (ids + records), and at most 1.3x the same query
with the same JSON assembly. Usage:
``python benchmarks/bench_lineage.py [--quick] [--rounds N] [--dsn ADMIN_DSN]``
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
from bench_postgres import pg_database  # the script's directory is on sys.path
from doc_tables import TARGET_COLUMNS, doc_table, verdict  # on sys.path, as above

from agentledger.server._store._lineage import lineage_sql
from agentledger.server._store._rows import EVENT_COLS, event_dict
from agentledger.testing import EmbeddedServer

KEY = "bench-key"
GET_CALLS = 200  # GET /v1/events/{id} calls per round, the median call is reported
#: The server's read of one event (``SQLStore.get_event``), written out for the driver.
GET_SQL = "SELECT {cols} FROM events WHERE event_id = {p}".format(
    cols=", ".join(column.name for column in EVENT_COLS), p="{p}"
)

# The direct queries: the ids reachable over the edge table, joined to the stored records. On
# PostgreSQL the step is a LATERAL lookup, as a careful hand-written query would be (a plain
# join there is planned as a hash join over the whole edge table at every step).
WHY_SQL = (
    "WITH RECURSIVE anc(id) AS (SELECT {p} UNION SELECT e.cause_id FROM event_causes e "
    "JOIN anc ON e.effect_id = anc.id) "
    "SELECT events.event_id, events.record FROM anc JOIN events ON events.event_id = anc.id"
)
IMPACT_SQL = (
    "WITH RECURSIVE des(id) AS (SELECT {p} UNION SELECT e.effect_id FROM event_causes e "
    "JOIN des ON e.cause_id = des.id) "
    "SELECT events.event_id, events.record FROM des JOIN events ON events.event_id = des.id"
)
PG_WHY_SQL = (
    "WITH RECURSIVE anc(id) AS (SELECT {p} UNION SELECT x.cause_id FROM anc, LATERAL "
    "(SELECT e.cause_id FROM event_causes e WHERE e.effect_id = anc.id OFFSET 0) x) "
    "SELECT events.event_id, events.record FROM anc JOIN events ON events.event_id = anc.id"
)
PG_IMPACT_SQL = (
    "WITH RECURSIVE des(id) AS (SELECT {p} UNION SELECT x.effect_id FROM des, LATERAL "
    "(SELECT e.effect_id FROM event_causes e WHERE e.cause_id = des.id OFFSET 0) x) "
    "SELECT events.event_id, events.record FROM des JOIN events ON events.event_id = des.id"
)


def agent_run(agent: str, rounds: int) -> tuple[list[dict[str, Any]], str, str]:
    """Events of one long run (causes before effects), the user message id and the answer id."""
    new = lambda: str(uuid.uuid4())  # noqa: E731
    items: list[dict[str, Any]] = []

    def add(event: str, data: dict[str, Any], **causes: Any) -> str:
        event_id = new()
        items.append({"agent": agent, "event": event, "data": data, "event_id": event_id, **causes})
        return event_id

    user = add("user_message", {"text": "where is my order A1234?"})
    inputs = [user]
    for r in range(rounds):
        start = add(
            "llm_start",
            {"model": "m", "round": r},
            parent_id=inputs[-1],
            caused_by=[{"event_id": i, "kind": "read"} for i in inputs],
        )
        end = add("llm_end", {"text": "", "round": r}, parent_id=start)
        inputs = []
        for tool in ("lookup_order", "track_parcel"):
            call = add(
                "tool_call",
                {"tool": tool, "args": {"order_id": "A1234"}},
                parent_id=end,
                caused_by=[{"event_id": end, "kind": "requested"}],
            )
            inputs.append(add("tool_result", {"tool": tool, "result": {"ok": r}}, parent_id=call))
    final = add("llm_start", {"model": "m"}, parent_id=inputs[-1], caused_by=inputs)
    final_end = add("llm_end", {"text": "It ships today."}, parent_id=final)
    answer = add(
        "assistant_response",
        {"text": "It ships today."},
        parent_id=final_end,
        caused_by=[{"event_id": final_end, "kind": "produced"}],
    )
    return items, user, answer


def assemble(rows: list[Any], direction: str, event_id: str) -> bytes:
    """The answer's JSON from the rows of the server's statement, built plainly with orjson.

    A walked event's row is ``(id, record, received_at, importance, idempotency_key,
    checksum, chain_hash, agent, sequence_no, timestamp)``; the last row holds (third column)
    every edge as ``near, far, kind`` joined by U+001F."""
    events = [r for r in rows if r[0] is not None and r[7] is not None]
    ends = iter(rows[-1][2].split("\x1f"))
    edges = sorted(
        (near, far, kind) if direction == "why" else (far, near, kind)
        for near, far, kind in zip(ends, ends, ends, strict=True)
    )
    events.sort(key=lambda e: (e[9], e[7], e[8]))  # timestamp, agent, sequence_no
    chain = [
        orjson.Fragment(
            bytes(e[1][:-1])
            + b","
            + orjson.dumps(
                {
                    "received_at": e[2],
                    "importance": e[3],
                    "idempotency_key": e[4],
                    "checksum": e[5],
                    "chain_hash": e[6],
                }
            )[1:]
        )
        for e in events
        if not (direction == "impact" and e[0] == event_id)
    ]
    edge_objects = [{"effect": a, "cause": b, "kind": k} for a, b, k in edges]
    if direction == "impact":
        answer: dict[str, Any] = {"event_id": event_id, "count": len(chain), "events": chain}
        answer |= {"edges": edge_objects, "cut_at": [], "depth_truncated": False}
        return orjson.dumps(answer | {"truncated": False})
    linked = {a for a, _, _ in edges}
    roots = [e[0] for e in events if e[0] not in linked]
    answer = {"event_id": event_id, "chain_length": len(chain), "chain": chain}
    answer |= {"edges": edge_objects, "roots": roots, "missing": [], "cut_at": []}
    answer |= {"chain_complete": True, "orphan": False, "depth_truncated": False}
    answer |= {"size_truncated": False, "scoped_agent_limited": False, "missing_parent": None}
    return orjson.dumps(answer)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def measure(
    name: str,
    url: str,
    direct: Callable[[str, str], int],
    own_rows: Callable[[str, str], list[Any]],
    get_row: Callable[[str], Any],
    rounds: int,
    size: int,
) -> list[tuple[tuple[str, ...], float]]:
    """The lineage table's rows of one store and run size, each with its ratio of HTTP to the
    same query and JSON in-process (the target's measure)."""

    def assembled(direction: str, event_id: str) -> bytes:
        return assemble(own_rows(direction, event_id), direction, event_id)

    items, user, answer = agent_run(f"lineage-{name}-{size}", size)
    middle = items[len(items) // 2]["event_id"]  # the event GET /v1/events/{id} reads
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        # a stored API key, as users call (each request looks it up), not the dev key
        created = client.post("/v1/keys", json={"name": f"bench-{name}-{size}"})
        assert created.status_code == 201, created.text
        client.headers["Authorization"] = f"Bearer {created.json()['key']}"
        for start in range(0, len(items), 500):
            body = orjson.dumps({"events": items[start : start + 500]})
            written = client.post(
                "/v1/events/batch", content=body, headers={"Content-Type": "application/json"}
            )
            assert written.json()["failed"] == 0, written.text[:500]
        params = {"depth": 10_000, "limit": 100_000}
        why = client.get(f"/v1/events/{answer}/why", params=params).json()
        impact = client.get(f"/v1/events/{user}/impact", params=params).json()
        assert why["chain_length"] == len(items) and why["chain_complete"], why["chain_length"]
        assert impact["count"] == len(items) - 1, impact["count"]
        assert direct(WHY_SQL, answer) == len(items) and direct(IMPACT_SQL, user) == len(items)
        # the reference builds the very bytes the server answers
        body = client.get(f"/v1/events/{answer}/why", params=params).content
        assert assembled("why", answer) == body, "why: the assembled reference differs"
        body = client.get(f"/v1/events/{user}/impact", params=params).content
        assert assembled("impact", user) == body, "impact: the assembled reference differs"
        assert client.get(f"/v1/events/{middle}").content == orjson.dumps(
            event_dict(get_row(middle))
        ), "get: the assembled reference differs"
        samples: dict[str, list[float]] = {
            k: []
            for k in [f"{a}{b}" for a in ("why", "imp") for b in ("", "_sql", "_own", "_json")]
        }
        get_http: list[float] = []
        get_same: list[float] = []
        for _ in range(rounds):
            samples["why"].append(
                timed(lambda: client.get(f"/v1/events/{answer}/why", params=params).content)
            )
            samples["why_sql"].append(timed(lambda: direct(WHY_SQL, answer)))
            samples["imp"].append(
                timed(lambda: client.get(f"/v1/events/{user}/impact", params=params).content)
            )
            samples["imp_sql"].append(timed(lambda: direct(IMPACT_SQL, user)))
            samples["why_own"].append(timed(lambda: direct("why", answer)))
            samples["imp_own"].append(timed(lambda: direct("impact", user)))
            samples["why_json"].append(timed(lambda: assembled("why", answer)))
            samples["imp_json"].append(timed(lambda: assembled("impact", user)))
            for _ in range(GET_CALLS):
                get_http.append(timed(lambda: client.get(f"/v1/events/{middle}").content))
                get_same.append(timed(lambda: orjson.dumps(event_dict(get_row(middle)))))
    med = {k: statistics.median(v) for k, v in samples.items()}
    n = len(items)
    rows = []
    for label, ours, raw, own, same in (
        (f"why(answer), {n:,}-event causal DAG", "why", "why_sql", "why_own", "why_json"),
        (f"impact(user_message), {n - 1:,} descendants", "imp", "imp_sql", "imp_own", "imp_json"),
    ):
        ratio, ratio_same = med[ours] / med[raw], med[ours] / med[same]
        rows.append(
            (
                (
                    f"{name}: {label}",
                    f"{med[ours]:.1f} ms",
                    f"{med[raw]:.1f} ms",
                    f"{med[own]:.1f} ms",
                    f"{med[same]:.1f} ms",
                    f"{ratio:.2f}× ({verdict(ratio, at_most=1.5)})",
                    f"{ratio_same:.2f}× ({verdict(ratio_same, at_most=1.3)})",
                ),
                ratio_same,
            )
        )
    get_ms, same_ms = statistics.median(get_http), statistics.median(get_same)
    get_ratio = get_ms / same_ms
    rows.append(
        (
            (
                f"{name}: get_event, one of {n:,} events",
                f"{get_ms * 1000:,.0f} µs",
                "",
                "",
                f"{same_ms * 1000:,.0f} µs",
                "",
                f"{get_ratio:.2f}× ({verdict(get_ratio, at_most=1.3)})",
            ),
            get_ratio,
        )
    )
    return rows


Direct = tuple[Callable[[str, str], int], Callable[[str, str], list[Any]], Callable[[str], Any]]


def sqlite_direct(path: str) -> Direct:
    conn = sqlite3.connect(path)
    own = {d: lineage_sql(d, "sqlite", scoped=False) for d in ("why", "impact")}

    def own_rows(direction: str, event_id: str) -> list[Any]:  # the server's own statement
        return conn.execute(own[direction], {"event_id": event_id, "budget": 100_002}).fetchall()

    def run(sql: str, event_id: str) -> int:
        if sql in own:
            return len(own_rows(sql, event_id))
        return len(conn.execute(sql.format(p="?"), (event_id,)).fetchall())

    def get_row(event_id: str) -> Any:
        return conn.execute(GET_SQL.format(p="?"), (event_id,)).fetchone()

    return run, own_rows, get_row


def pg_direct(dsn: str) -> Direct:
    conn = psycopg.connect(dsn, autocommit=True, options="-c jit=off")  # as the server

    lateral = {WHY_SQL: PG_WHY_SQL, IMPACT_SQL: PG_IMPACT_SQL}
    own = {d: lineage_sql(d, "postgresql", scoped=False) for d in ("why", "impact")}

    def own_rows(direction: str, event_id: str) -> list[Any]:  # the server's own statement
        return conn.execute(own[direction], {"event_id": event_id, "budget": 100_002}).fetchall()

    def run(sql: str, event_id: str) -> int:
        if sql in own:
            return len(own_rows(sql, event_id))
        query = lateral[sql].format(p='%s::varchar COLLATE "C"')
        return len(conn.execute(query, (event_id,)).fetchall())

    def get_row(event_id: str) -> Any:
        return conn.execute(GET_SQL.format(p="%s"), (event_id,)).fetchone()

    return run, own_rows, get_row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 1,000-event run (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 15)")
    parser.add_argument("--dsn", default=None, help="PostgreSQL admin DSN that may CREATE DATABASE")
    args = parser.parse_args()
    sizes = (166,) if args.quick else (166, 1_666)  # rounds of 6 events: ~1,000 / ~10,000 events
    rounds = args.rounds or (5 if args.quick else 15)
    dsn = (
        args.dsn
        or os.environ.get("AGENTLEDGER_TEST_POSTGRES_DSN")
        or "postgresql://postgres@127.0.0.1:5432/test"
    )
    tmp = Path(tempfile.mkdtemp(prefix="agentledger-bench-lineage-"))
    rows: list[tuple[tuple[str, ...], float]] = []
    db = str(tmp / "lineage.db")
    with EmbeddedServer(db, api_key=KEY, log=tmp / "sqlite.log", timeout_s=60) as served:
        for size in sizes:
            rows += measure("SQLite", served.url, *sqlite_direct(db), rounds, size)
    try:  # the SQLite rows stand on their own where no PostgreSQL answers
        psycopg.connect(dsn, connect_timeout=3).close()
    except psycopg.Error as exc:
        print(f"PostgreSQL: skipped, {dsn} is not reachable ({type(exc).__name__})")
    else:
        with (
            pg_database(dsn) as url,
            EmbeddedServer(url, api_key=KEY, log=tmp / "pg.log", timeout_s=60) as served,
        ):
            for size in sizes:
                rows += measure("PostgreSQL", served.url, *pg_direct(url), rounds, size)
    header = (
        "measurement",
        "over HTTP",
        "direct SQL",
        "server's statement",
        "same query + same JSON",
        "HTTP / direct SQL",
        "HTTP / same query + JSON",
    )
    print(doc_table("lineage", header, [row for row, _ in rows]))
    targets = []
    for row, ratio in rows:
        targets.append(
            (
                f"{row[0]} over HTTP (reference: the same query and JSON in-process)",
                row[1],
                row[4],
                f"{ratio:.2f}×",
                verdict(ratio, at_most=1.3),
            )
        )
    print(doc_table("targets", TARGET_COLUMNS, targets))


if __name__ == "__main__":
    main()
