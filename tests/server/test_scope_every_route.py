"""Scopes on every route, edge and page (docs/pages/server.md, "What a key may see"): one row
per route of the app, and a route without a row fails
:func:`test_every_route_has_a_row`, so a new route gets its scope cases with it.

Each row is run against twin ledgers (``_twin_ledgers``) that differ only by agent B's events:

* a key bound to agent A, asking about B's agent, ids, sessions, words and edges, gets
  byte-identical answers from both ledgers: B's data is answered exactly like data never
  stored (same status, same body);
* the unbound admin key, asking the same, gets different answers (the probes do reach B's
  data), and every key may use its own data;
* read-only keys get 403 on every write route and change nothing; admin-only routes refuse
  every other key; no key or a wrong key gets 401 (a dashboard page: the login redirect).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from _twin_ledgers import SECRET, Ledger, Twins, route_table, scrub
from agentledger.server import Settings, create_app

PUBLIC, READ, WRITE, ADMIN, PAGE = "public", "read", "write", "admin", "page"


@dataclass(frozen=True)
class P:
    """One request; ``{name}`` in the url or body is an id or name of ``_twin_ledgers.ids``."""

    url: str
    json: Any = None
    form: dict[str, str] | None = None


@dataclass(frozen=True)
class Row:
    """A route's scope cases: ``probes`` ask about B's data (or anything B's data could
    change), ``own`` is a request on A's own data that a key of A may make; ``admin_sees_b``:
    the stores where the admin key's answer to some probe shows B's data."""

    kind: str
    own: P
    probes: list[P] = field(default_factory=list)
    admin_sees_b: tuple[str, ...] = ("sqlite", "postgres")


def item(name: str, agent: str = "{A}", **more: Any) -> dict[str, Any]:
    """An event body with a fixed id and time (so both ledgers chain it alike)."""
    minute = 30 + int(name[1:])
    return (
        {"event_id": f"{{{name}}}", "agent": agent, "event": "note"}
        | {
            "timestamp": f"2020-03-01T10:{minute:02d}:00Z",
            "data": {"probe": name},
        }
        | more
    )


def otlp_export(service: str, trace: str) -> dict[str, Any]:
    """An OTLP/JSON trace export of one chat span of ``service`` (fixed ids and times)."""
    attr = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]
    span = {
        "traceId": trace * 32,
        "spanId": trace * 16,
        "name": "chat",
        "kind": 3,
        "startTimeUnixNano": "1583056800000000000",
        "endTimeUnixNano": "1583056801000000000",
        "attributes": attr,
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}


EV = "/v1/events/{event_id}"
#: One row per ``"METHOD /path"`` the app serves. A new route: pick its kind, an ``own``
#: request a key of agent A may make, and probes that name B's agent, ids, sessions or words
#: (``{B}``, ``{b0}``, ``s-b``, ``{SECRET}``...) or whose answer B's events could change.
ROUTES: dict[str, Row] = {
    # -- public: no key needed, nothing of any agent in the answer
    "GET /health": Row(PUBLIC, P("/health")),
    "GET /openapi.json": Row(PUBLIC, P("/openapi.json")),
    "GET /health/deep": Row(PUBLIC, P("/health/deep")),
    "GET /v1/signing-keys": Row(PUBLIC, P("/v1/signing-keys")),
    # -- signed chain heads: a bound key signs and lists only its own agent's heads
    "POST /v1/signed-heads": Row(
        WRITE, P("/v1/signed-heads", {"agent": "{A}"}), [P("/v1/signed-heads", {"agent": "{B}"})]
    ),
    "GET /v1/signed-heads": Row(
        READ,
        P("/v1/signed-heads?agent={A}"),
        [P("/v1/signed-heads?agent={B}"), P("/v1/signed-heads?agent={B}&limit=1")],
    ),
    "POST /v1/signing-keys/rotate": Row(
        ADMIN, P("/v1/signing-keys/rotate"), [P("/v1/signing-keys/rotate")], admin_sees_b=()
    ),
    "GET /swagger": Row(PUBLIC, P("/swagger")),
    "GET /docs/oauth2-redirect": Row(PUBLIC, P("/docs/oauth2-redirect")),
    "GET /ui": Row(PUBLIC, P("/ui")),
    "GET /ui/login": Row(PUBLIC, P("/ui/login?next=/ui/agents/{B}")),
    "POST /ui/logout": Row(PUBLIC, P("/ui/logout")),
    "MOUNT /ui/static": Row(PUBLIC, P("/ui/static/dashboard.css")),
    "POST /ui/login": Row(
        PUBLIC, P("/ui/login", form={"key": "al_twin-bound-a-rw-key-0000000000000000000000"})
    ),
    # -- events: write one, a batch, import (every edge: parent_id, caused_by, supersedes)
    "POST /v1/events": Row(
        WRITE,
        P("/v1/events", item("n0", parent_id="{a0}")),
        [
            P("/v1/events", item("n1", agent="{B}")),
            P("/v1/events", item("n2", parent_id="{b0}")),
            P("/v1/events", item("n3", caused_by=["{b0}"])),
            P("/v1/events", item("n4", caused_by=[{"event_id": "{b1}", "kind": "read"}])),
            P("/v1/events", item("n5", supersedes="{b0}")),
            P("/v1/events", item("n6", parent_id="{a0}", caused_by=["{a1}", "{b3}"])),
        ],
    ),
    "POST /v1/events/batch": Row(
        WRITE,
        P("/v1/events/batch", {"events": [item("n0"), item("n1", parent_index=0)]}),
        [
            P(
                "/v1/events/batch",
                {
                    "events": [
                        item("n2", agent="{B}"),
                        item("n3", parent_id="{b0}"),
                        item("n4", caused_by=["{b1}"]),
                        item("n5", supersedes="{b0}"),
                        item("n6", parent_index=0),
                        item("n7"),
                        item("n8", parent_index=5, caused_by=["{b2}"]),
                        item("n9", parent_index=5),
                    ]
                },
            )
        ],
    ),
    "POST /v1/events/import": Row(
        WRITE,
        P("/v1/events/import", {"events": [item("n0", parent_id="{a0}")]}),
        [
            P("/v1/events/import", {"events": [item("n1", parent_id="{b0}")]}),
            P("/v1/events/import", {"events": [item("n2", caused_by=["{b1}", "{a0}"])]}),
            P("/v1/events/import", {"events": [item("n3", supersedes="{b0}")]}),
            P("/v1/events/import", {"events": [item("n4", agent="{B}")]}),
            P("/v1/events/import", {"agent": "{B}", "events": [item("n5")]}),
            P("/v1/events/import", {"agent": "{A}", "events": [item("b3", agent="{B}")]}),
        ],
    ),
    # -- reading one agent's events
    "GET /v1/events": Row(
        READ,
        P("/v1/events?agent={A}"),
        [P("/v1/events?agent={B}"), P("/v1/events?agent={A}&session_id=s-shared")],
    ),
    "GET /v1/events/chain": Row(
        READ,
        P("/v1/events/chain?agent={A}"),
        [
            P("/v1/events/chain?agent={B}"),
            P("/v1/events/chain?agent={B}&after_seq=1&anchor={b0_hash}"),
            P("/v1/events/chain?agent={A}&anchor={b0_hash}"),
        ],
    ),
    "GET /v1/events/export": Row(
        READ, P("/v1/events/export?agent={A}"), [P("/v1/events/export?agent={B}")]
    ),
    "GET /v1/events/at": Row(
        READ,
        P("/v1/events/at?agent={A}&timestamp={T_END}"),
        [P("/v1/events/at?agent={B}&timestamp={T_END}")],
    ),
    # -- one event and its lineage
    f"GET {EV}": Row(READ, P("/v1/events/{a0}"), [P("/v1/events/{b0}"), P("/v1/events/{b1}")]),
    f"GET {EV}/why": Row(
        READ,
        P("/v1/events/{a1}/why"),
        [P("/v1/events/{b0}/why"), P("/v1/events/{b1}/why"), P("/v1/events/{a2}/why")],
    ),
    f"GET {EV}/evidence": Row(
        READ,
        P("/v1/events/{a1}/evidence"),
        [P("/v1/events/{b0}/evidence"), P("/v1/events/{b1}/evidence")],
    ),
    f"GET {EV}/decision": Row(
        READ,
        P("/v1/events/{a1}/decision"),
        [
            P("/v1/events/{b0}/decision"),
            P("/v1/events/{b1}/decision"),
            P("/v1/events/{a2}/decision"),
            P("/v1/events/{a4}/decision"),
        ],
    ),
    f"GET {EV}/impact": Row(
        READ,
        P("/v1/events/{a1}/impact"),
        [P("/v1/events/{b0}/impact"), P("/v1/events/{a0}/impact?depth=5")],
    ),
    # -- catalog
    "GET /v1/agents": Row(READ, P("/v1/agents"), [P("/v1/agents")]),
    "GET /v1/sessions": Row(
        READ,
        P("/v1/sessions"),
        [P("/v1/sessions"), P("/v1/sessions?agent={A}"), P("/v1/sessions?agent={B}")],
    ),
    "GET /v1/sessions/{session_id:path}/events": Row(
        READ,
        P("/v1/sessions/s-a/events"),
        [
            P("/v1/sessions/s-b/events"),
            P("/v1/sessions/s-shared/events"),
            P("/v1/sessions/s-shared/events?agent={B}"),
        ],
    ),
    # -- query: search, memory, state, drift, forget
    "POST /v1/search": Row(
        READ,
        P("/v1/search", {"query": "alpha", "agent": "{A}"}),
        [
            P("/v1/search", {"query": "{SECRET}"}),
            P("/v1/search", {"query": "alpha apples plums", "limit": 50}),
            P("/v1/search", {"query": "apples", "limit": 1}),
            P("/v1/search", {"query": "alpha", "limit": 2, "agent": "{A}"}),
            P("/v1/search", {"query": "apples", "limit": 2, "agent": "{A}"}),
            P("/v1/search", {"query": "alpha", "agent": "{B}"}),
            P("/v1/search", {"query": "alpha", "session_id": "s-shared"}),
            P("/v1/search", {"query": "alpha", "include_superseded": True, "mode": "keyword"}),
        ],
    ),
    # PostgreSQL indexes in the write transaction: nothing is ever pending there
    "GET /v1/search/status": Row(
        READ, P("/v1/search/status"), [P("/v1/search/status")], admin_sees_b=("sqlite",)
    ),
    "POST /v1/memory/context": Row(
        READ,
        P("/v1/memory/context", {"agent": "{A}", "task": "alpha"}),
        [
            P("/v1/memory/context", {"agent": "{B}", "task": "alpha"}),
            P("/v1/memory/context", {"agent": "{A}", "task": "alpha apples {SECRET}"}),
            P("/v1/memory/context", {"agent": "{A}", "task": "alpha", "session_id": "s-shared"}),
        ],
    ),
    "GET /v1/memory/diff/{session_id:path}": Row(
        READ,
        P("/v1/memory/diff/s-a"),
        [
            P("/v1/memory/diff/s-b"),
            P("/v1/memory/diff/s-shared"),
            P("/v1/memory/diff/s-shared?agent={B}"),
        ],
    ),
    "GET /v1/sessions/{session_id:path}/why/{event_id}": Row(
        READ,
        P("/v1/sessions/s-a/why/{a1}"),
        [
            P("/v1/sessions/s-b/why/{b1}"),
            P("/v1/sessions/s-shared/why/{b0}"),
            P("/v1/sessions/s-shared/why/{a2}"),
        ],
    ),
    # -- usage, cost, suggestions, reports (B's events change what was read)
    **{
        f"GET /v1/agents/{{agent}}/{name}": Row(
            READ,
            P(f"/v1/agents/{{A}}/{name}?from=2020-03-01&to={{T_END}}"),
            [
                P(f"/v1/agents/{{B}}/{name}?from=2020-03-01&to={{T_END}}"),
                P(f"/v1/agents/{{A}}/{name}?session_id=s-shared"),
            ],
        )
        for name in ("token-usage", "token-optimization", "suggestions", "report")
    },
    "GET /v1/token-usage": Row(
        READ,
        P("/v1/token-usage?agent={A}&from=2020-03-01&to={T_END}"),
        [
            P("/v1/token-usage?from=2020-03-01&to={T_END}"),
            P("/v1/token-usage?agent={B}&from=2020-03-01"),
            P("/v1/token-usage?session_id=s-shared"),
        ],
    ),
    "GET /v1/model-prices": Row(
        READ, P("/v1/model-prices"), [P("/v1/model-prices")], admin_sees_b=()
    ),
    "GET /v1/agents/{agent}/baseline": Row(
        READ,
        P("/v1/agents/{A}/baseline"),
        [P("/v1/agents/{B}/baseline"), P("/v1/agents/{A}/baseline?recent_window=1")],
    ),
    "GET /v1/agents/{agent}/behavior-change": Row(
        READ,
        P("/v1/agents/{A}/behavior-change"),
        [
            P("/v1/agents/{B}/behavior-change"),
            P("/v1/agents/{A}/behavior-change?from_ts=2020-03-01T10:03:00Z&to_ts={T_END}"),
        ],
    ),
    "DELETE /v1/memory/forget": Row(
        WRITE,
        P("/v1/memory/forget", {"filter_key": "topic", "filter_value": "alpha pears"}),
        [
            P("/v1/memory/forget", {"filter_key": "word", "filter_value": "{SECRET}"}),
            P("/v1/memory/forget", {"filter_key": "word", "filter_value": "x", "agent": "{B}"}),
            P("/v1/memory/forget", {"filter_key": "topic", "filter_value": "alpha apples"}),
        ],
    ),
    # -- keys: admin only
    "POST /v1/keys": Row(
        ADMIN,
        P("/v1/keys", {"name": "own", "agent": "{A}", "scope": "read_only"}),
        [P("/v1/keys", {"name": "theirs", "agent": "{B}", "scope": "read_write"})],
    ),
    "GET /v1/keys": Row(ADMIN, P("/v1/keys"), [P("/v1/keys")]),
    "DELETE /v1/keys/{key_id}": Row(ADMIN, P("/v1/keys/key_spare"), [P("/v1/keys/key_b")]),
    # -- retention: admin only (a 100-year window: the twins' events stay)
    "GET /v1/retention/policies": Row(
        ADMIN, P("/v1/retention/policies"), [P("/v1/retention/policies")], admin_sees_b=()
    ),
    "PUT /v1/retention/policies/{agent}": Row(
        ADMIN,
        P("/v1/retention/policies/{A}", {"keep": "36500d"}),
        [P("/v1/retention/policies/{B}", {"keep": "36500d"})],
    ),
    "DELETE /v1/retention/policies/{agent}": Row(
        ADMIN,
        P("/v1/retention/policies/{A}"),
        [P("/v1/retention/policies/{B}")],
        admin_sees_b=(),
    ),
    "PUT /v1/retention/default": Row(
        ADMIN,
        P("/v1/retention/default", {"keep": "36500d"}),
        [P("/v1/retention/default", {"keep": "36500d"})],
        admin_sees_b=(),
    ),
    "DELETE /v1/retention/default": Row(
        ADMIN, P("/v1/retention/default"), [P("/v1/retention/default")], admin_sees_b=()
    ),
    "POST /v1/retention/run": Row(
        ADMIN,
        P("/v1/retention/run", {"dry_run": True, "agent": "{A}"}),
        [P("/v1/retention/run", {"dry_run": True, "agent": "{B}"})],
    ),
    "GET /v1/retention/log": Row(
        ADMIN, P("/v1/retention/log?agent={A}"), [P("/v1/retention/log?agent={B}")]
    ),
    # -- dashboard pages: the same scoping as the API they read through
    "GET /ui/": Row(
        PAGE,
        P("/ui/"),
        [P("/ui/"), P("/ui/?agent={B}"), P("/ui/?q=alpha"), P("/ui/?q={SECRET}&agent={A}")],
    ),
    "GET /ui/agents/{agent}": Row(PAGE, P("/ui/agents/{A}"), [P("/ui/agents/{B}")]),
    "GET /ui/sessions/{session_id:path}": Row(
        PAGE,
        P("/ui/sessions/s-a"),
        [
            P("/ui/sessions/s-b"),
            P("/ui/sessions/s-shared"),
            P("/ui/sessions/s-shared?agent={B}&focus={b0}"),
        ],
    ),
    "GET /ui/events/{event_id}": Row(
        PAGE, P("/ui/events/{a0}"), [P("/ui/events/{b0}"), P("/ui/events/{a2}")]
    ),
    "GET /ui/events/{event_id}/why": Row(
        PAGE, P("/ui/events/{a1}/why"), [P("/ui/events/{b1}/why"), P("/ui/events/{a2}/why")]
    ),
    "GET /ui/events/{event_id}/impact": Row(
        PAGE,
        P("/ui/events/{a1}/impact"),
        [P("/ui/events/{b0}/impact"), P("/ui/events/{a0}/impact")],
    ),
    # OTLP ingest: a bound key writes as its own agent whatever the spans name
    "POST /v1/traces": Row(
        WRITE,
        P("/v1/traces", otlp_export("{A}", "a")),
        [P("/v1/traces", otlp_export("{B}", "b"))],
        admin_sees_b=(),
    ),
    "GET /ui/compare": Row(
        PAGE,
        P("/ui/compare?a=s-a&b=s-shared&agent_b={A}"),
        [
            P("/ui/compare?a=s-a&b=s-b"),
            P("/ui/compare?a=s-b&b=s-a"),
            P("/ui/compare?a=s-a&b=s-shared&agent_b={B}"),
            P("/ui/compare?a=s-shared&b=s-shared"),
        ],
    ),
}


def test_every_route_has_a_row(tmp_path: Path) -> None:
    """A route added later fails here until it has its scope cases in ``ROUTES``."""
    app = create_app(Settings(db=str(tmp_path / "routes.db")))
    try:
        served = route_table(app)
    finally:
        app.state.store.close()
    assert len(served) > 30
    assert not served - ROUTES.keys(), "routes without scope cases: add a row to ROUTES"
    assert not ROUTES.keys() - served, "rows of routes the app no longer serves"


# -- running a row ---------------------------------------------------------------------------


def fill(value: Any, n: dict[str, str]) -> Any:
    """``value`` with every ``{name}`` replaced."""
    if isinstance(value, str):
        return value.format_map(n)
    if isinstance(value, list):
        return [fill(v, n) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, n) for k, v in value.items()}
    return value


async def send(
    ledger: Ledger, key: str, method: str, probe: P, n: dict[str, str]
) -> httpx.Response:
    client = ledger.clients[key]
    url = fill(probe.url, n)
    if probe.form is not None:
        return await client.request(method, url, data=probe.form)
    if probe.json is not None:
        return await client.request(method, url, json=fill(probe.json, n))
    return await client.request(method, url)


async def snapshot(ledger: Ledger) -> str:
    """What a write would change: agents, and every event of A and B."""
    admin = ledger.clients["admin"]
    parts = [(await admin.get("/v1/agents")).text]
    for agent in ("scope-a", "scope-b"):
        parts.append((await admin.get("/v1/events/export", params={"agent": agent})).text)
    return "\n".join(parts)


def ok(response: httpx.Response) -> bool:
    return response.status_code < 400


ROWS = sorted(ROUTES.items())


@pytest.mark.parametrize(("route", "row"), ROWS, ids=[name for name, _ in ROWS])
async def test_route_scope(twin: Twins, store_kind: str, route: str, row: Row) -> None:
    method = route.split()[0] if not route.startswith("MOUNT") else "GET"
    n = twin.n
    mine, other = twin.with_b, twin.without_b
    probes = [row.own, *row.probes]

    # (d) no key, a wrong key
    for probe in probes:
        for key in ("none", "wrong"):
            got = await send(mine, key, method, probe, n)
            if row.kind == PUBLIC:
                assert ok(got), (key, probe, got.text)
            elif row.kind == PAGE and key == "none":
                assert got.status_code == 303, (key, probe, got.text)
                assert got.headers["location"].startswith("/ui/login?next=")
            else:
                assert got.status_code == 401, (key, probe, got.text)
                assert "API key" in got.text

    # (b) read-only keys write nothing; they read like any key
    for key in ("read_only", "bound_ro"):
        if row.kind in (WRITE, ADMIN):
            before = await snapshot(mine)
            for probe in probes:
                got = await send(mine, key, method, probe, n)
                assert got.status_code == 403 and "read_only" in got.text, (key, probe, got.text)
            assert await snapshot(mine) == before
        else:
            assert ok(await send(mine, key, method, row.own, n)), key

    # admin-only routes refuse a bound read-write key
    if row.kind == ADMIN:
        for probe in probes:
            got = await send(mine, "bound", method, probe, n)
            assert got.status_code == 403 and "not bound to an agent" in got.text, got.text

    # (a) a key bound to A cannot tell B's data from data never stored
    bound_keys = ["bound"] if row.kind in (WRITE, ADMIN) else ["bound", "bound_ro"]
    for key in bound_keys:
        for probe in row.probes:
            with_b = await send(mine, key, method, probe, n)
            without_b = await send(other, key, method, probe, n)
            assert scrub(with_b) == scrub(without_b), (key, probe)
            if "{SECRET}" not in repr(probe):  # B's word, unless the request itself holds it
                assert SECRET not in with_b.text, (key, probe)
    if row.kind in (READ, WRITE, PAGE):
        got = await send(mine, "bound", method, row.own, n)
        assert ok(got), got.text  # a bound key uses its own agent's data

    # (c) the admin key: its own request works, and the probes do reach B's data
    assert ok(await send(mine, "admin", method, row.own, n))
    if row.probes and store_kind in row.admin_sees_b:
        differs = False
        for probe in row.probes:
            with_b = await send(mine, "admin", method, probe, n)
            without_b = await send(other, "admin", method, probe, n)
            differs = differs or scrub(with_b) != scrub(without_b)
        assert differs, "no probe of this row reaches B's data: the row tests nothing"
