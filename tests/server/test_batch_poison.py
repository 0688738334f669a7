"""No poison batch: an item the server cannot store fails alone with a per-item 4xx naming the
field, the rest of the batch is stored, and the chain stays intact, on both stores.

A megabyte of varied text (more words than PostgreSQL's ``tsvector`` takes) is stored and found
by a word near its start; a batch of 500 with one item the database itself refuses stores the
other 499; random batch bodies of nasty values never get a 5xx.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _servers import ServerFactory, ServerProcess
from _stores import is_postgres, sql_connection
from agentledger.server._search.postgres import MAX_VECTOR_BYTES


def _client(server: ServerProcess) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=server.headers(), timeout=120)


def _chain_intact(client: httpx.Client, agent: str, stored: int) -> None:
    chain = client.get("/v1/events/chain", params={"agent": agent}).json()
    assert chain["intact"] and chain["verified"] == stored, chain


def _varied_text(chars: int) -> dict[str, str]:
    """``chars`` characters of distinct made-up words, in strings of 60,000 characters."""
    rnd = random.Random(7)
    words: list[str] = []
    size = 0
    while size < chars:
        word = "".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(5, 11)))
        words.append(word)
        size += len(word) + 1
    text = " ".join(words)
    return {f"part{i}": text[i : i + 60_000] for i in range(0, len(text), 60_000)}


def _search(client: httpx.Client, agent: str, query: str) -> list[str]:
    response = client.post("/v1/search", json={"query": query, "agent": agent, "mode": "keyword"})
    assert response.status_code == 200, response.text
    return [hit["event_id"] for hit in response.json()["results"]]


def test_a_megabyte_of_varied_text_is_stored_and_found_by_its_first_words(
    store_server: ServerProcess, agent_name: str
) -> None:
    data = {"opening": "zephyrine quokkalore", **_varied_text(1_200_000)}
    words = " ".join(data.values()).split()
    # more than a tsvector holds (1 MiB of words), every string under 100,000 characters
    assert sum(len(word) for word in set(words)) > 1024 * 1024 > MAX_VECTOR_BYTES
    with _client(store_server) as client:
        response = client.post(
            "/v1/events/batch",
            json={"events": [{"agent": agent_name, "event": "document", "data": data}]},
        )
        assert response.status_code == 200, response.text
        (result,) = response.json()["results"]
        assert result["ok"] and not result["duplicate"]
        stored = client.get(f"/v1/events/{result['event_id']}").json()
        assert stored["data"] == data and stored["checksum"] == result["checksum"]
        # words near the start are indexed on both stores (a prefix matches too)
        for query in ("quokkalore", "zephyr", words[500]):
            assert _search(client, agent_name, query) == [result["event_id"]], query
        # PostgreSQL indexes the first 256 KiB of distinct words, SQLite the whole text
        last = _search(client, agent_name, words[-1])
        assert last == ([] if is_postgres(store_server.db) else [result["event_id"]])
        _chain_intact(client, agent_name, 1)


def _event(agent: str, index: int, **fields: Any) -> dict[str, Any]:
    data = {"n": index, "note": f"item {index}"}
    return {"agent": agent, "event": "step", "data": data, **fields}


#: Makes the database itself refuse an event typed ``poisoned`` with a data error (PostgreSQL:
#: SQLSTATE 22003 from a trigger; SQLite: ``SQLITE_TOOBIG`` from a blob over its length limit),
#: as it refuses a value out of a column's range: the API accepts the item, the write fails.
_REFUSE_POISONED = {
    "postgres": [
        "CREATE OR REPLACE FUNCTION refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.event = 'poisoned' THEN RAISE EXCEPTION 'this value is out of range' "
        "USING ERRCODE = 'numeric_value_out_of_range'; END IF; RETURN NEW; END $$",
        "CREATE OR REPLACE TRIGGER refuse_poisoned BEFORE INSERT ON events FOR EACH ROW "
        "EXECUTE FUNCTION refuse_poisoned()",
    ],
    "sqlite": [
        "CREATE TRIGGER refuse_poisoned BEFORE INSERT ON events WHEN NEW.event = 'poisoned' "
        "BEGIN SELECT zeroblob(2000000000); END",
    ],
}


@pytest.fixture
def refusing_server(
    server_factory: ServerFactory, store_db: str, store_kind: str
) -> Iterator[ServerProcess]:
    """A real server on a fresh ledger whose database refuses events typed ``poisoned``."""
    server = server_factory(db=store_db)
    with sql_connection(store_db) as conn:
        for statement in _REFUSE_POISONED[store_kind]:
            conn.execute(statement)
        yield server
        server.stop()
        conn.execute("DROP TRIGGER refuse_poisoned" + (" ON events" if conn.postgres else ""))


def test_one_item_the_database_refuses_fails_alone_in_a_batch_of_500(
    refusing_server: ServerProcess,
) -> None:
    with _client(refusing_server) as client:
        for poison_at in (0, 250, 499):
            _check_poisoned_batch(client, f"poisoned-at-{poison_at}", poison_at)
        # alone, the refused event is a 422 naming the reason; its agent's chain stays empty
        alone = client.post("/v1/events", json={**_event("alone", 0), "event": "poisoned"})
        assert alone.status_code == 422 and "cannot store" in alone.json()["detail"]
        assert client.get("/v1/events", params={"agent": "alone"}).json() == []


def _check_poisoned_batch(client: httpx.Client, agent: str, poison_at: int) -> None:
    items = [_event(agent, i, idempotency_key=f"k{i}") for i in range(500)]
    items[poison_at]["event"] = "poisoned"
    for i in range(1, 500):  # a chain of parents by batch index, broken at the poison
        if i - 1 != poison_at:
            items[i]["parent_index"] = i - 1
    response = client.post("/v1/events/batch", json={"events": items})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["written"], body["failed"]) == (499, 1)
    results = body["results"]
    refused = results[poison_at]
    assert not refused["ok"] and refused["status"] == 422
    assert refused["error"].startswith(f"events.{poison_at}.data: the database cannot store")
    assert "out of range" in refused["error"] or "too big" in refused["error"]
    stored = [r for r in results if r["ok"]]
    assert [r["sequence_no"] for r in stored] == list(range(1, 500))
    listed = client.get("/v1/events", params={"agent": agent, "limit": 1000}).json()
    by_id = {event["event_id"]: event for event in listed}
    assert len(by_id) == 499
    for index, result in enumerate(results):
        if index == poison_at:
            continue
        event = by_id[result["event_id"]]
        assert event["data"] == items[index]["data"]
        assert event["checksum"] == result["checksum"]
        parent = results[index - 1] if "parent_index" in items[index] else None
        assert event["parent_id"] == (parent["event_id"] if parent else None)
    _chain_intact(client, agent, 499)
    # the same batch again: 499 duplicates and the one refusal, nothing written twice
    again = client.post("/v1/events/batch", json={"events": items}).json()
    assert (again["written"], again["duplicates"], again["failed"]) == (0, 499, 1)
    _chain_intact(client, agent, 499)


# -- fuzz: random batch bodies never get a 5xx ------------------------------------------------

_EDGE_TEXT = [
    "\x00",
    "a\x00b",
    "\ud800",
    "\udfff",
    "'",
    "\\",
    "''",
    ":*",
    "&|!",
    "\u2028",
    "\ufeff",
    "\U0001f600",
    "İstanbul",
    "ﬃ",
    "ß" * 300,
    "a" * 256,
    "x" * 2100,
    "lorem ipsum " * 10_000,
    " ",
    "",
]
_TEXT = st.one_of(st.text(max_size=24), st.sampled_from(_EDGE_TEXT))
_NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([2**53, -(2**53), 2**63, 5e-324, -0.0, 1e308]),
)
_JSON = st.recursive(
    st.none() | st.booleans() | _NUMBERS | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=12,
)
_UUIDS = st.one_of(
    st.uuids().map(str),
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.sampled_from(["00000000-0000-0000-0000-000000000000", "not-a-uuid", ""]),
    _TEXT,
)
_TIMES = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda t: t.isoformat()),
    st.sampled_from(
        [
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999+00:00",
            "0001-01-01T00:00:00+00:01",
            "2024-02-30T00:00:00Z",
            "2024-01-01T00:00:00+23:59",
            "1e10",
        ]
    ),
    _TEXT,
    _NUMBERS,
)


@st.composite
def _items(draw: st.DrawFn, agent: str, size: int) -> dict[str, Any]:
    """A batch item: mostly well-formed, with a few fields replaced by nasty values."""
    item: dict[str, Any] = {
        "agent": draw(st.sampled_from([agent] * 20 + ["", "a/b", "\x00", 5])),
        "event": draw(st.sampled_from(["step"] * 3) | _TEXT),
        "data": draw(st.dictionaries(_TEXT, _JSON, max_size=4)),
    }
    optional: dict[str, st.SearchStrategy[Any]] = {
        "metadata": st.none() | st.dictionaries(_TEXT, _JSON, max_size=3),
        "session_id": st.none() | _TEXT,
        "idempotency_key": st.none() | _TEXT,
        "importance": st.none() | _NUMBERS | _TEXT | st.sampled_from([float("nan"), 1e-310]),
        "timestamp": st.none() | _TIMES,
        "event_id": _UUIDS,
        "parent_id": _UUIDS,
        "supersedes": _UUIDS,
        "scope_id": _UUIDS,
        "caused_by": st.lists(
            _UUIDS | st.fixed_dictionaries({"event_id": _UUIDS, "kind": _TEXT}), max_size=3
        ),
        "parent_index": st.integers(min_value=-1, max_value=size + 1),
    }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), max_size=4, unique=True)):
        item[name] = draw(optional[name])
    return item


@st.composite
def _batches(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    agent = f"fuzz-{uuid.uuid4().hex[:10]}"
    size = draw(st.integers(min_value=1, max_value=6))
    return agent, [draw(_items(agent, size)) for _ in range(size)]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_batches())
def test_random_batch_bodies_never_get_a_5xx(
    store_server: ServerProcess, case: tuple[str, list[dict[str, Any]]]
) -> None:
    agent, items = case
    body = json.dumps({"events": items}).encode()  # lone surrogates as \\u escapes
    headers = {"Content-Type": "application/json"}
    with _client(store_server) as client:
        single = client.post("/v1/events", content=json.dumps(items[0]).encode(), headers=headers)
        assert single.status_code < 500, single.text
        imported = client.post("/v1/events/import", content=body, headers=headers)
        assert imported.status_code < 500, imported.text
        response = client.post("/v1/events/batch", content=body, headers=headers)
        assert response.status_code < 500, response.text
        if response.status_code != 200:
            return
        results = response.json()["results"]
        assert [r["index"] for r in results] == list(range(len(items)))
        for result in results:
            if not result["ok"]:
                assert 400 <= result["status"] < 500 and result["error"], result
        stored = [r for r in results if r["ok"] and not r["duplicate"]]
        for result in stored:
            got = client.get(f"/v1/events/{result['event_id']}")
            assert got.status_code == 200 and got.json()["checksum"] == result["checksum"]
        written = single.status_code == 201 or imported.json().get("imported", 0) > 0
        chain = client.get("/v1/events/chain", params={"agent": agent})
        assert chain.status_code < 500, chain.text
        if stored or written:
            assert chain.json()["intact"], chain.json()
            # the index takes whatever was stored (SQLite indexes it on this search)
            found = client.post("/v1/search", json={"query": "step", "agent": agent})
            assert found.status_code == 200, found.text
