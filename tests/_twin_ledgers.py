"""Two ledgers that differ only by agent B: the same keys and the same events of agent A in
both, B's events (one session shared with A, an effect of A's event, a cause A's event names)
in the first only. A key bound to A must get byte-identical answers from both on every route:
then nothing it can ask tells it whether B, or any event of B, exists.

Everything that lands in an answer is fixed (event ids, timestamps, keys), so the two
ledgers hash and number A's events alike; :func:`scrub` removes what still differs between two
requests (request ids, server-side times, page build times).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI

from agentledger.server import Settings, create_app
from agentledger.server._auth import hash_key
from agentledger.server._store.base import KeyRecord

A, B, GHOST = "scope-a", "scope-b", "scope-ghost"
SECRET = "bravozulu"  # a word only B's events hold
T0 = "2020-03-01T10:00:00"

#: key name -> (raw secret, bound agent, scope); the same in both ledgers.
KEYS: dict[str, tuple[str, str | None, str]] = {
    "admin": ("al_twin-admin-key-000000000000000000000000000", None, "read_write"),
    "read_only": ("al_twin-read-only-key-0000000000000000000000", None, "read_only"),
    "bound": ("al_twin-bound-a-rw-key-0000000000000000000000", A, "read_write"),
    "bound_ro": ("al_twin-bound-a-ro-key-0000000000000000000000", A, "read_only"),
    "spare": ("al_twin-spare-key-00000000000000000000000000", A, "read_only"),
}
#: a key of B's own, stored in the first ledger only.
B_KEY = ("al_twin-bound-b-rw-key-0000000000000000000000", B, "read_write")
WRONG_KEY = "al_not-a-stored-key-0000000000000000000000000"


def ids() -> dict[str, str]:
    """Fresh event ids for one test (the same in both ledgers), plus names probes use."""
    names = ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3"] + [f"n{i}" for i in range(24)]
    found = {name: str(uuid.uuid4()) for name in names}
    found |= {"A": A, "B": B, "GHOST": GHOST, "SECRET": SECRET, "T_END": f"{T0[:10]}T23:00:00Z"}
    return found


def _ts(minute: int) -> str:
    return f"{T0[:14]}{minute:02d}:00Z"


def a_events(n: dict[str, str]) -> list[dict[str, Any]]:
    """A's events: a0 -> a1, a2 names B's b0 as a cause, a3 sets state; a4 (written after B's
    events in the ledger that has them) shares a word with many of B's."""
    return [
        _event(n["a0"], A, 0, "s-shared", {"topic": "alpha apples"}),
        _event(n["a1"], A, 1, "s-a", {"topic": "alpha pears"}, parent_id=n["a0"]),
        _event(n["a2"], A, 4, "s-shared", {"note": "alpha cites"}, caused_by=[n["b0"]]),
        _event(n["a3"], A, 5, "s-a", {"key": "mood", "value": "calm"}, event="state_set"),
        _event(n["a4"], A, 8, "s-a", {"topic": "apples kiwi"}),
    ]


def b_events(n: dict[str, str]) -> list[dict[str, Any]]:
    """B's events: b0 in A's session, b1 an effect of A's a0, b2 sets state, b3 supersedes b0,
    then enough events matching A's words to fill a search's first candidate pool."""
    bulk = [
        _event(str(uuid.uuid4()), B, 10 + i % 40, "s-b-bulk", {"topic": f"alpha apples {i}"})
        for i in range(60)
    ]
    return [
        _event(n["b0"], B, 2, "s-shared", {"topic": "alpha apples", "word": SECRET}),
        _event(n["b1"], B, 3, "s-b", {"word": SECRET}, parent_id=n["a0"]),
        _event(n["b2"], B, 6, "s-b", {"key": "mood", "value": SECRET}, event="state_set"),
        _event(n["b3"], B, 7, "s-b", {"topic": "alpha plums"}, supersedes=n["b0"]),
        *bulk,
    ]


def _event(
    event_id: str, agent: str, minute: int, session: str, data: dict[str, Any], **more: Any
) -> dict[str, Any]:
    body = {"event_id": event_id, "agent": agent, "event": more.pop("event", "note")}
    return body | {"timestamp": _ts(minute), "session_id": session, "data": data} | more


def _record(name: str, raw: str, agent: str | None, scope: str) -> KeyRecord:
    return KeyRecord(
        key_id=f"key_{name}",
        name=name,
        key_hash=hash_key(raw),
        prefix=raw[:8],
        agent=agent,
        scope=scope,
        created_at="2020-01-01T00:00:00.000000+00:00",
        expires_at=None,
    )


@dataclass
class Ledger:
    """One of the twins: its app and a client per key name (``"none"``: no header)."""

    app: FastAPI
    clients: dict[str, httpx.AsyncClient] = field(default_factory=dict)


@dataclass
class Twins:
    """``with_b`` holds B's events, ``without_b`` does not; ``n`` names the ids."""

    with_b: Ledger
    without_b: Ledger
    n: dict[str, str]

    @property
    def both(self) -> tuple[Ledger, Ledger]:
        return self.with_b, self.without_b


def _client(app: FastAPI, raw: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {raw}"} if raw else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://ledger.test",  # not a loopback host name: no dev key anywhere
        headers=headers,
        follow_redirects=False,
    )


@asynccontextmanager
async def twins(
    db_with_b: str, db_without_b: str, *, lifespan: bool = False, **settings: Any
) -> AsyncIterator[Twins]:
    """Both ledgers filled, with clients for every key of :data:`KEYS`, ``"wrong"`` and
    ``"none"``. ``settings`` go to both apps; ``lifespan`` runs the apps' lifespans (the
    background indexer and embedder) while the twins are in use."""
    n = ids()
    async with AsyncExitStack() as stack:
        ledgers = []
        for db, has_b in ((db_with_b, True), (db_without_b, False)):
            app = create_app(Settings(db=db, **settings))
            stack.callback(app.state.store.close)
            if lifespan:
                await stack.enter_async_context(app.router.lifespan_context(app))
            for name, (raw, agent, scope) in KEYS.items():
                app.state.store.create_key(_record(name, raw, agent, scope))
            if has_b:
                app.state.store.create_key(_record("b", *B_KEY))
            ledger = Ledger(app)
            raws = {name: raw for name, (raw, _, _) in KEYS.items()}
            for name, raw in (raws | {"wrong": WRONG_KEY, "none": ""}).items():
                ledger.clients[name] = await stack.enter_async_context(_client(app, raw))
            items = a_events(n)
            if has_b:  # interleaved: B's writes happen between A's
                theirs = b_events(n)
                items = items[:2] + theirs[:2] + items[2:-1] + theirs[2:] + items[-1:]
            written = await ledger.clients["admin"].post("/v1/events/batch", json={"events": items})
            assert written.status_code == 200, written.text
            assert all(r["ok"] for r in written.json()["results"]), written.text
            ledgers.append(ledger)
        stored = await ledgers[0].clients["admin"].get(f"/v1/events/{n['b0']}")
        n["b0_hash"] = stored.json()["chain_hash"]  # a chain anchor of B's
        yield Twins(ledgers[0], ledgers[1], n)


# -- comparing answers -----------------------------------------------------------------------

_NOW_TS = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_TIMINGS = re.compile(r"\d[\d,.]* ms\b")
_REQUEST_ID = re.compile(r'"request_id":\s*"[^"]*"')


def scrub(response: httpx.Response) -> str:
    """Status, content type, location and body of an answer, without what differs between
    any two requests: times taken from the clock (every time outside the fixed day of the
    events), request ids, how long a page took to build."""
    text = response.text
    text = _NOW_TS.sub(lambda m: m.group(0) if m.group(0).startswith(T0[:10]) else "<now>", text)
    text = _REQUEST_ID.sub('"request_id": "<id>"', text)
    text = _TIMINGS.sub("<n> ms", text)
    head = [
        str(response.status_code),
        response.headers.get("content-type", ""),
        response.headers.get("location", ""),
    ]
    return "\n".join(head) + "\n" + text


# -- the app's routes ------------------------------------------------------------------------


def route_table(app: FastAPI) -> set[str]:
    """Every ``"METHOD /path"`` the app serves (``"MOUNT /path"`` for a mounted app), with
    included routers flattened whichever way this FastAPI version stores them."""
    found: set[str] = set()
    for route, path in _walk(app.routes):
        methods = getattr(route, "methods", None)
        if methods is None:
            found.add(f"MOUNT {path}")
        found.update(f"{m} {path}" for m in methods or () if m != "HEAD")
    return found


def served_routes(app: FastAPI) -> list[tuple[Any, str]]:
    """``(route, full path)`` of every route in the order the app tries them on a request."""
    return list(_walk(app.routes))


def _walk(routes: Any) -> Iterator[tuple[Any, str]]:
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if contexts is not None:  # newer FastAPI keeps an included router as one node
            for context in contexts():  # nested routers flattened, prefixes applied
                yield context.original_route, context.path
        elif hasattr(route, "path"):  # a route (its prefix applied) or a mounted app
            yield route, route.path
        else:  # pragma: no cover - a route kind this helper does not know
            raise AssertionError(f"unknown route kind {type(route).__name__}: add it here")
