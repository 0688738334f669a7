"""The reference client's ``token_usage``, ``token_optimization``, ``suggestions`` and
``report`` against ``agentledger serve`` on either store, cross-checked against the stored
events; the reference client's local dev key; agent-bound keys; the price table."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

zizkadb = pytest.importorskip("zizkadb")

SYSTEM = "You are the billing agent of Example Corp. " * 120  # ~5,000 chars, ~1,200 tokens
# USD per million tokens, from the shipped table (server/.../_query/model_prices.json)
SONNET = {"input": 3.0, "cache_read": 0.3, "cache_write": 3.75, "output": 15.0}
GPT4O = {"input": 2.5, "cache_read": 1.25, "cache_write": 2.5, "output": 10.0}
MINI = {"input": 0.15, "cache_read": 0.075, "cache_write": 0.15, "output": 0.6}


def cost(price: dict[str, float], inp: int, out: int, read: int = 0, write: int = 0) -> float:
    return (
        (inp - read - write) * price["input"]
        + read * price["cache_read"]
        + write * price["cache_write"]
        + out * price["output"]
    ) / 1e6


@pytest.fixture
def db(store_server: Any) -> Any:
    return zizkadb.ZizkaDB(api_key=store_server.api_key, host=store_server.url)


def _range() -> tuple[str, str]:
    now = datetime.now(UTC)
    return (now - timedelta(hours=1)).isoformat(), (now + timedelta(hours=1)).isoformat()


async def _model_call(
    db: Any,
    agent: str,
    session: str,
    model: str,
    usage: dict[str, Any],
    *,
    finish: str = "stop",
    system: str = SYSTEM,
) -> str:
    start = await db.log(
        agent=agent,
        event="llm_start",
        data={"model": model, "messages": [{"role": "system", "content": system}]},
        session_id=session,
    )
    end = await db.log(
        agent=agent,
        event="llm_end",
        data={"text": "ok", "token_usage": usage, "finish_reason": finish},
        parent_id=start.event_id,
        session_id=session,
    )
    result: str = end.event_id
    return result


async def test_token_usage_cache_split_cost_and_breakdowns(db: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk. ``token_usage`` sums the stored usage per
    model and session with the cache split (reads and writes are parts of the input) and
    prices it from the model price table; usage in the reference's shape (``token_usage=``
    on any event, ``cached_tokens``) and in OpenAI's raw shape counts too."""
    a = agent_name
    vocab = {"input_tokens": 2000, "output_tokens": 100, "cache_read_tokens": 1500}
    await _model_call(db, a, "s1", "claude-sonnet-4-5", vocab)
    write = {"input_tokens": 1800, "output_tokens": 50, "cache_write_tokens": 1600}
    await _model_call(db, a, "s1", "claude-sonnet-4-5-20250929", write)
    await db.log(
        agent=a,
        event="llm_end",
        data={"text": "hi"},
        session_id="s2",
        token_usage={"model": "gpt-4o", "input_tokens": 400, "output_tokens": 30}
        | {"cached_tokens": 99},
    )
    raw = {"prompt_tokens": 50, "completion_tokens": 5}
    raw["prompt_tokens_details"] = {"cached_tokens": 0}
    await _model_call(db, a, "s2", "gpt-4o-mini-2024-07-18", raw)
    await _model_call(db, a, "s2", "my-local-model", {"input_tokens": 7, "output_tokens": 1})
    await db.log(agent=a, event="llm_end", data={"text": "no usage"}, session_id="s2")
    await db.log(agent=a, event="llm_error", data={"error": "rate limited"}, session_id="s2")

    since, until = _range()
    usage = await db.token_usage(a, since, until)
    totals = usage["totals"]
    assert totals["input_tokens"] == 2000 + 1800 + 400 + 50 + 7
    assert totals["output_tokens"] == 100 + 50 + 30 + 5 + 1
    assert totals["cache_read_tokens"] == 1500 + 99 and totals["cached_tokens"] == 1599
    assert totals["cache_write_tokens"] == 1600
    assert totals["uncached_input_tokens"] == 500 + 200 + 301 + 50 + 7
    assert totals["calls_without_usage"] == 1 and totals["failed_count"] == 1
    assert totals["unpriced_calls"] == 1 and usage["unpriced_models"] == ["my-local-model"]
    expected = (
        cost(SONNET, 2000, 100, read=1500)
        + cost(SONNET, 1800, 50, write=1600)
        + cost(GPT4O, 400, 30, read=99)
        + cost(MINI, 50, 5)
    )
    assert totals["total_cost"] == pytest.approx(expected, abs=1e-6)
    by_model = {row["key"]: row for row in usage["breakdown"]["model"]}
    assert by_model["claude-sonnet-4-5"]["cache_hit_rate_pct"] == 75.0
    dated = by_model["claude-sonnet-4-5-20250929"]  # priced as claude-sonnet-4-5
    assert dated["cost"] == pytest.approx(cost(SONNET, 1800, 50, write=1600), abs=1e-6)
    assert by_model["my-local-model"]["cost"] == 0 and by_model["unknown"]["requests"] == 1
    by_session = {row["key"]: row for row in usage["breakdown"]["session"]}
    assert by_session["s1"]["tokens"] == 2000 + 100 + 1800 + 50
    assert usage["breakdown"]["agent"][0]["key"] == a
    assert sum(b["tokens"] for b in usage["trend"]) == totals["total_tokens"]
    assert usage["period"]["granularity"] == "hour"

    stored = [e async for e in db.iter_events(a)]
    stored_input = sum(
        (e.data.get("token_usage") or {}).get("input_tokens", 0)
        + (e.data.get("token_usage") or {}).get("prompt_tokens", 0)
        for e in stored
    )
    assert stored_input == totals["input_tokens"]

    daily = await db.token_usage(a, since[:10], until[:10], granularity="day")
    assert daily["totals"]["total_tokens"] == totals["total_tokens"]
    assert all(b["bucket"].endswith("T00:00:00+00:00") for b in daily["trend"])


async def test_token_optimization_rules_cite_stored_numbers(db: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk. ``token_optimization`` finds a long prompt
    sent again without cache reads, an expensive model used for short answers, answers cut at
    the output limit and a large tool output read again by later calls; each saving is the
    documented formula over the stored usage."""
    a = agent_name
    ids = []
    for i in range(4):
        usage = {"input_tokens": 1500, "output_tokens": 20, "model": "gpt-4o"}
        finish = "length" if i == 3 else "stop"
        ids.append(await _model_call(db, a, "s1", "gpt-4o", usage, finish=finish))
        if i == 1:
            await db.log_tool_result(a, "search_orders", result="x" * 12_000, session_id="s1")
    since, until = _range()
    advice = await db.token_optimization(a, from_=since, to=until)
    by_kind = {s["category"]: s for s in advice["suggestions"]}
    assert set(by_kind) == {
        "cache_opportunity",
        "model_optimization",
        "truncation",
        "tool_output_size",
    }
    prefix = len(SYSTEM) // 4
    cache = by_kind["cache_opportunity"]
    assert cache["estimated_token_reduction"] == prefix * 3
    assert cache["estimated_savings_usd"] == pytest.approx(
        prefix * 3 * (GPT4O["input"] - GPT4O["cache_read"]) / 1e6, abs=1e-6
    )
    assert sorted(cache["samples"]) == sorted(ids)
    model = by_kind["model_optimization"]
    assert model["recommended_state"]["model"] == "gpt-4o-mini"
    assert model["estimated_savings_usd"] == pytest.approx(
        4 * (cost(GPT4O, 1500, 20) - cost(MINI, 1500, 20)), abs=1e-6
    )
    truncation = by_kind["truncation"]
    assert truncation["samples"] == [ids[3]] and truncation["estimated_token_reduction"] == 20
    tool = by_kind["tool_output_size"]
    # the 12,002-character JSON string is read again by the 2 later calls of the session
    assert tool["estimated_token_reduction"] == (12_002 - 2000) // 4 * 2
    assert tool["affected"] == {"agent": a, "tool": "search_orders"}
    aggregates = advice["aggregates"]
    assert aggregates["suggestion_count"] == 4
    assert aggregates["total_cost"] == pytest.approx(4 * cost(GPT4O, 1500, 20), abs=1e-6)
    assert advice["status"] == "ok"

    empty = await db.token_optimization(f"{a}-idle")
    assert empty["status"] == "no_data" and empty["suggestions"] == []


async def test_suggestions_and_report_match_the_stored_events(db: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk. ``suggestions`` names the evidence each
    suggestion rests on (a failing tool, a token saving); ``report`` counts the stored events,
    errors, sessions and token usage of the period, per session too."""
    a = agent_name
    for i in range(4):
        call = await db.log_tool(a, "refund", args={"i": i}, session_id=f"r{i % 2}")
        if i < 2:
            await db.log_tool_result(
                a, "refund", error=RuntimeError("503"), parent_id=call.event_id, session_id="r0"
            )
        else:
            await db.log_tool_result(a, "refund", result="ok", parent_id=call.event_id)
    for _ in range(3):
        await _model_call(db, a, "r1", "gpt-4o", {"input_tokens": 1200, "output_tokens": 10})
    since, until = _range()
    found = await db.suggestions(a, from_=since, to=until, refresh=True)
    assert found["status"] == "ok"
    evidence = {e["id"]: e for e in found["evidence"]}
    assert evidence["tool_errors:refund"]["metrics"] == {
        "results": 4,
        "errors": 2,
        "error_rate_pct": 50.0,
    }
    for suggestion in found["suggestions"]:
        assert suggestion["evidence"] and set(suggestion["evidence"]) <= set(evidence)
    assert {s["category"] for s in found["suggestions"]} >= {"reliability", "cost"}
    assert found["generated_by"] == "rules" and found["model"] is None
    again = await db.suggestions(a, from_=since, to=until)
    assert again["suggestions"] == found["suggestions"]  # refresh changes nothing

    report = await db.report(a, since, until)
    stored = [e async for e in db.iter_events(a)]
    summary = report["summary"]
    assert summary["total_events"] == len(stored) == 4 + 4 + 6
    assert summary["error_count"] == 2 and summary["sessions"] == 2
    assert summary["model_calls"] == 3 and summary["total_tokens"] == 3 * 1210
    assert sum(b["events"] for b in report["timeseries"]) == len(stored)
    top = {t["event_type"]: t["count"] for t in report["top_events"]}
    assert top == {"tool_call": 4, "tool_error": 2, "tool_result": 2, "llm_start": 3, "llm_end": 3}
    sessions = {s["session_id"]: s for s in report["sessions"]}
    assert sessions["r1"]["tokens"] == 3 * 1210 and sessions["r0"]["errors"] == 2
    assert report["tools"] == [
        {"tool": "refund", "results": 4, "errors": 2, "error_rate_pct": 50.0}
    ]
    assert any(r["category"] == "reliability" for r in report["recommendations"])

    one = await db._get(f"/v1/agents/{a}/report", {"session_id": "r1"})
    assert one["summary"]["total_events"] == 2 + 6 and one["summary"]["sessions"] == 1


async def test_bad_ranges_name_the_field(db: Any, agent_name: str) -> None:
    """Bad input gets a 422 naming the field."""
    since, until = _range()
    with pytest.raises(zizkadb.ZizkaDBError) as info:
        await db.token_usage(agent_name, until, since)
    assert info.value.status_code == 422 and "from" in str(info.value)
    with pytest.raises(zizkadb.ZizkaDBError) as info:
        await db.report(agent_name, since, until, granularity="month")
    assert info.value.status_code == 422 and "granularity" in str(info.value)
    with pytest.raises(zizkadb.ZizkaDBError) as info:
        await db.token_usage(agent_name, "yesterday", until)
    assert info.value.status_code == 422 and "from" in str(info.value)
    for since, until, field in (
        (None, "9999-12-31", "to"),  # the whole day would end past year 9999
        ("0001-01-01T00:00+01:00", None, "from"),
        (None, "0001-01-05", "to"),
        ("2000-01-01", "9999-12-30", "from"),  # too many weekly buckets
        ("2000-01-01", "2003-01-01T00:00", "granularity"),  # 26,304 hours
    ):
        params = {
            "from": since,
            "to": until,
            "granularity": "hour" if field == "granularity" else None,
        }
        with pytest.raises(zizkadb.ZizkaDBError) as info:
            await db._get(f"/v1/agents/{agent_name}/report", {k: v for k, v in params.items() if v})
        assert info.value.status_code == 422 and f"'{field}'" in str(info.value), info.value
    last = await db.report(agent_name, "9999-12-31T00:00", "9999-12-31T23:59:59")
    assert last["summary"]["total_events"] == 0 and len(last["timeseries"]) == 24


async def test_agent_bound_key_sees_only_its_agent(store_server: Any, agent_name: str) -> None:
    """README: Compatibility with zizkadb-sdk. A key bound to an agent reads the usage,
    suggestions and report of that agent only (403 for another), and the usage across agents
    holds only its agent."""
    admin = zizkadb.ZizkaDB(api_key=store_server.api_key, host=store_server.url)
    other = f"{agent_name}-other"
    mine_id = await _model_call(
        admin, agent_name, "k", "gpt-4o", {"input_tokens": 10, "output_tokens": 1}
    )
    other_id = await _model_call(
        admin, other, "k", "gpt-4o", {"input_tokens": 99, "output_tokens": 9}
    )
    created = httpx.post(
        f"{store_server.url}/v1/keys",
        json={"name": "bound", "agent": agent_name, "scope": "read_only"},
        headers=store_server.headers(),
    )
    assert created.status_code == 201, created.text
    bound = zizkadb.ZizkaDB(api_key=created.json()["key"], host=store_server.url)
    since, until = _range()
    assert (await bound.token_usage(agent_name, since, until))["totals"]["input_tokens"] == 10
    for call in (
        bound.token_usage(other, since, until),
        bound.token_optimization(other),
        bound.suggestions(other),
        bound.report(other, since, until),
    ):
        with pytest.raises(zizkadb.AgentScopeError):
            await call
    mine = await bound._get("/v1/token-usage", {"from": since, "to": until})
    assert mine["agents"] == [agent_name] and mine["totals"]["input_tokens"] == 10
    everyone = await admin._get("/v1/token-usage", {"from": since, "to": until})
    assert (await bound.session("k").why(mine_id)).chain[-1].event_id == mine_id
    with pytest.raises(zizkadb.NotFoundError):
        await bound.session("k").why(other_id)
    with pytest.raises(zizkadb.NotFoundError):
        await admin.session("another-session").why(other_id)
    assert {agent_name, other} <= set(everyone["agents"])


async def test_reference_dev_key_on_loopback(
    server_factory: Any, monkeypatch: pytest.MonkeyPatch, agent_name: str
) -> None:
    """README: Compatibility with zizkadb-sdk. Given no key, the reference client sends its
    own dev key to a localhost host; a server started with ``--dev-key`` on loopback accepts
    it for local requests only, and a server without a dev key says why it refuses it."""
    for name in ("ZIZKADB_API_KEY", "AGENTDB_API_KEY", "DEV_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    server = server_factory()
    for host in (server.url, server.url.replace("127.0.0.1", "localhost")):
        keyless = zizkadb.ZizkaDB(host=host)
        assert keyless._api_key == "zizkadb_dev_local"
        written = await keyless.log(agent=agent_name, event="user_message", data={"t": 1})
        assert (await keyless.why(written.event_id)).chain[0].event_id == written.event_id
    foreign = httpx.get(
        f"{server.url}/v1/agents",
        headers={"Authorization": "Bearer zizkadb_dev_local", "Host": "evil.example"},
    )
    assert foreign.status_code == 403 and "Host header" in foreign.text
    relayed = httpx.get(
        f"{server.url}/v1/agents",
        headers={"Authorization": "Bearer zizkadb_dev_local", "X-Forwarded-For": "192.0.2.7"},
    )
    assert relayed.status_code == 403

    no_dev = server_factory(start=False)
    no_dev.api_key = ""  # --dev-key "": no dev key
    no_dev.start()
    with pytest.raises(zizkadb.AuthError) as info:
        await zizkadb.ZizkaDB(host=no_dev.url).log(agent=agent_name, event="e", data={})
    assert "--dev-key" in str(info.value)


def test_price_file_extends_the_table_and_bad_files_are_refused(
    server_factory: Any, tmp_path: Path, agent_name: str
) -> None:
    """README: Compatibility with zizkadb-sdk (price table). ``AGENTLEDGER_MODEL_PRICES``
    names a JSON or TOML file whose entries add models or replace shipped prices; a malformed
    entry stops the server at start-up with the file, model and field named."""
    prices = tmp_path / "prices.toml"
    prices.write_text(
        "[models.my-local-model]\ninput = 1.0\noutput = 2.0\ncache_read = 0.5\n\n"
        "[models.gpt-4o]\ninput = 100.0\noutput = 100.0\n"
    )
    server = server_factory(env={"AGENTLEDGER_MODEL_PRICES": str(prices)})
    headers = server.headers()
    table = httpx.get(f"{server.url}/v1/model-prices", headers=headers).json()
    entries = {m["model"]: m for m in table["models"]}
    assert entries["my-local-model"]["cache_write"] == 1.0  # defaults to the input price
    assert entries["gpt-4o"]["cache_read"] == 100.0 and str(prices) in table["sources"]
    events = [
        {"agent": agent_name, "event": "llm_end", "data": {"token_usage": usage}}
        for usage in (
            {"model": "my-local-model", "input_tokens": 1_000_000, "output_tokens": 500_000},
            {"model": "gpt-4o-2024-08-06", "input_tokens": 10_000, "output_tokens": 0},
        )
    ]
    stored = httpx.post(f"{server.url}/v1/events/batch", json={"events": events}, headers=headers)
    assert stored.status_code == 200, stored.text
    usage = httpx.get(f"{server.url}/v1/agents/{agent_name}/token-usage", headers=headers).json()
    assert usage["totals"]["total_cost"] == pytest.approx(1.0 + 1.0 + 1.0)
    assert usage["unpriced_models"] == []

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {"m": {"input": "cheap", "output": 1}}}))
    broken = server_factory(env={"AGENTLEDGER_MODEL_PRICES": str(bad)}, start=False)
    with pytest.raises(RuntimeError) as info:
        broken.start(timeout_s=20)
    assert "models.m.input" in str(info.value) and str(bad) in str(info.value)


def test_reference_doctor_passes_against_a_dev_key_server(server_factory: Any) -> None:
    """README: Compatibility with zizkadb-sdk. The reference's ``zizkadb doctor --minimal``
    passes: ``GET /health/deep`` names its database check and the keyless test write is
    accepted on loopback."""
    import subprocess
    import sys

    server = server_factory()
    env = {k: v for k, v in os.environ.items() if k not in ("ZIZKADB_API_KEY", "DEV_API_KEY")}
    doctor = str(Path(sys.executable).with_name("zizkadb"))
    done = subprocess.run(
        [doctor, "doctor", "--host", server.url, "--minimal", "--agent", "doctor-probe"],
        capture_output=True,
        text=True,
        env={**env, "ZIZKADB_TELEMETRY": "false"},
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "database" in done.stdout and "Write test event" in done.stdout
    agents = httpx.get(f"{server.url}/v1/agents", headers=server.headers()).json()
    assert [a["agent"] for a in agents] == ["doctor-probe"]


async def test_a_session_report_needs_no_dates(db: Any, store_server: Any, agent_name: str) -> None:
    """Given ``session_id`` and neither ``from`` nor ``to``, usage and report cover the whole
    session, however old."""
    usage = {"model": "gpt-4o", "input_tokens": 1000, "output_tokens": 100}
    events = [
        {
            "agent": agent_name,
            "event": "llm_end",
            "session_id": "old",
            "timestamp": ts,
            "data": {"text": "a", "token_usage": usage},
        }
        for ts in ("2024-03-01T10:00:00Z", "2024-03-03T10:00:00Z")
    ]
    stored = httpx.post(
        f"{store_server.url}/v1/events/batch",
        json={"events": events},
        headers=store_server.headers(),
    )
    assert stored.json()["written"] == 2, stored.text
    report = await db._get(f"/v1/agents/{agent_name}/report", {"session_id": "old"})
    assert report["summary"]["total_events"] == 2 and report["summary"]["active_days"] == 2
    assert report["period"]["from"] == "2024-03-01T10:00:00.000000+00:00"
    assert report["summary"]["total_cost"] == pytest.approx(2 * cost(GPT4O, 1000, 100))
    recent = await db.token_usage(agent_name, *_range())
    assert recent["totals"]["total_requests"] == 0
