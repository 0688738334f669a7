"""Token usage and cost (``GET /v1/agents/{agent}/token-usage``, ``GET /v1/token-usage``) and
the agent or session report (``GET /v1/agents/{agent}/report``) from one :class:`Scan`.

Cost of a call, USD: uncached input (``input - cache_read - cache_write``) at the ``input``
price, cache reads at ``cache_read``, cache writes at ``cache_write``, output at ``output``
(:mod:`.prices`). A call whose model the table does not know has no cost: its model is listed in
``unpriced_models`` and its tokens still count.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from agentledger.server._query.prices import PER_TOKENS, PriceTable
from agentledger.server._query.usage import Call, Scan, event_type_counts

__all__ = ["GRANULARITIES", "Cost", "bucket_of", "call_cost", "report", "token_usage"]

GRANULARITIES = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Cost:
    """USD of one call, split by kind of token."""

    input: float
    cache_read: float
    cache_write: float
    output: float

    @property
    def total(self) -> float:
        """All four parts."""
        return self.input + self.cache_read + self.cache_write + self.output


def call_cost(call: Call, prices: PriceTable, model: str | None = None) -> Cost | None:
    """What ``call`` cost (as ``model`` when given); ``None``: no usage or an unknown model."""
    price = prices.lookup(model or call.model)
    usage = call.usage
    if price is None or usage is None:
        return None
    uncached = max(usage.input - usage.cache_read - usage.cache_write, 0)
    return Cost(
        input=uncached * price.input / PER_TOKENS,
        cache_read=usage.cache_read * price.cache_read / PER_TOKENS,
        cache_write=usage.cache_write * price.cache_write / PER_TOKENS,
        output=usage.output * price.output / PER_TOKENS,
    )


def bucket_of(timestamp: str, granularity: str) -> str:
    """The start of the hour, day or ISO week (Monday) of a stored timestamp."""
    if granularity == "hour":
        return timestamp[:13] + ":00:00+00:00"
    day = timestamp[:10]
    if granularity == "day":
        return day + "T00:00:00+00:00"
    start = datetime.fromisoformat(day)
    return (start - timedelta(days=start.weekday())).date().isoformat() + "T00:00:00+00:00"


def _buckets(since: str, until: str, granularity: str) -> list[str]:
    step = GRANULARITIES[granularity]
    current = datetime.fromisoformat(bucket_of(since, granularity))
    end = datetime.fromisoformat(until)
    out = []
    while current < end:
        out.append(current.isoformat())
        try:
            current += step
        except OverflowError:  # the last bucket of year 9999
            break
    return out


class _Sum:
    """Running totals of a group of calls."""

    __slots__ = (
        "cache_read",
        "cache_write",
        "cost",
        "input",
        "output",
        "priced",
        "reasoning",
        "requests",
    )

    def __init__(self) -> None:
        self.input = self.output = self.cache_read = self.cache_write = self.reasoning = 0
        self.cost = 0.0
        self.priced = 0
        self.requests = 0

    def add(self, call: Call, cost: Cost | None) -> None:
        self.requests += 1
        if call.usage is not None:
            u = call.usage
            self.input += u.input
            self.output += u.output
            self.cache_read += u.cache_read
            self.cache_write += u.cache_write
            self.reasoning += u.reasoning
        if cost is not None:
            self.cost += cost.total
            self.priced += 1

    def to_dict(self) -> dict[str, Any]:
        tokens = self.input + self.output
        return {
            "requests": self.requests,
            "tokens": tokens,
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "uncached_input_tokens": max(self.input - self.cache_read - self.cache_write, 0),
            "reasoning_tokens": self.reasoning,
            "cache_hit_rate_pct": round(100 * self.cache_read / self.input, 2)
            if self.input
            else 0.0,
            "cost": round(self.cost, 6),
        }


def _breakdown(
    costed: list[tuple[Call, Cost | None]], key: Callable[[Call], str | None]
) -> list[dict[str, Any]]:
    groups: dict[str, _Sum] = defaultdict(_Sum)
    for call, cost in costed:
        groups[key(call) or UNKNOWN].add(call, cost)
    rows = [{"key": name, **total.to_dict()} for name, total in groups.items()]
    rows.sort(key=lambda row: (-row["tokens"], row["key"]))
    return rows


def _period(found: Scan, granularity: str) -> dict[str, Any]:
    w = found.window
    return {"from": w.since, "to": w.until, "granularity": granularity, "session_id": w.session_id}


def token_usage(found: Scan, prices: PriceTable, granularity: str) -> dict[str, Any]:
    """Totals with the cache split and the cost split, breakdowns by model, agent and session,
    a gap-filled trend, and the models without a price."""
    costed = [(call, call_cost(call, prices)) for call in found.calls]
    total = _Sum()
    split = {"input": 0.0, "cache_read": 0.0, "cache_write": 0.0, "output": 0.0}
    for call, cost in costed:
        total.add(call, cost)
        if cost is not None:
            for part in split:
                split[part] += getattr(cost, part)
    unknown_usage = sum(1 for call in found.calls if call.usage is None)
    failed = found.llm_errors
    requests = total.requests + failed
    totals = {
        **total.to_dict(),
        "total_requests": requests,
        "success_count": total.requests,
        "failed_count": failed,
        "success_rate_pct": round(100 * total.requests / requests, 2) if requests else 0.0,
        "total_tokens": total.input + total.output,
        "cached_tokens": total.cache_read,
        "avg_tokens_per_request": round((total.input + total.output) / total.requests, 2)
        if total.requests
        else 0.0,
        "total_cost": round(total.cost, 6),
        "cost_breakdown": {part: round(value, 6) for part, value in split.items()},
        "calls_without_usage": unknown_usage,
        "unpriced_calls": sum(1 for c, cost in costed if cost is None and c.usage is not None),
    }
    breakdown = {
        "model": _breakdown(costed, lambda c: c.model),
        "agent": _breakdown(costed, lambda c: c.agent),
        "session": _breakdown(costed, lambda c: c.session_id),
    }
    models = {c.model for c in found.calls if c.model}
    return {
        "agent": found.window.agents[0]
        if found.window.agents and len(found.window.agents) == 1
        else None,
        "agents": sorted({c.agent for c in found.calls}),
        "generated_at": datetime.now(UTC).isoformat(timespec="microseconds"),
        "period": _period(found, granularity),
        "totals": totals,
        "unpriced_models": sorted(m for m in models if prices.lookup(m) is None),
        "breakdown": breakdown,
        "trend": _trend(found, costed, granularity),
        "top_consumers": {dim: rows[:10] for dim, rows in breakdown.items()},
        "prices": {
            **prices.describe(),
            "used": {m: p.to_dict() for m in sorted(models) if (p := prices.lookup(m)) is not None},
        },
        "events_read": len(found.events),
        "truncated": found.truncated,
    }


def _trend(
    found: Scan, costed: list[tuple[Call, Cost | None]], granularity: str
) -> list[dict[str, Any]]:
    groups: dict[str, _Sum] = defaultdict(_Sum)
    for call, cost in costed:
        groups[bucket_of(call.timestamp, granularity)].add(call, cost)
    keys = sorted(set(_buckets(found.window.since, found.window.until, granularity)) | set(groups))
    return [{"bucket": key, **groups.get(key, _Sum()).to_dict()} for key in keys]


# -- the report ------------------------------------------------------------------------------


def _sessions(found: Scan, costed: Iterable[tuple[Call, Cost | None]]) -> list[dict[str, Any]]:
    info: dict[str, dict[str, Any]] = {}
    types: dict[str, set[str]] = defaultdict(set)
    for agent, sid, event, ts, error in found.events:
        if sid is None:
            continue
        row = info.setdefault(
            sid,
            {"session_id": sid, "agent": agent, "event_count": 0, "errors": 0, "started_at": ts},
        )
        row["event_count"] += 1
        row["errors"] += int(error)
        row["ended_at"] = ts
        types[sid].add(event)
    usage: dict[str, _Sum] = defaultdict(_Sum)
    for call, cost in costed:
        if call.session_id is not None:
            usage[call.session_id].add(call, cost)
    for sid, row in info.items():
        row["event_types"] = len(types[sid])
        start, end = (datetime.fromisoformat(row[k]) for k in ("started_at", "ended_at"))
        row["duration_seconds"] = round((end - start).total_seconds(), 3)
        totals = usage.get(sid, _Sum()).to_dict()
        row.update(tokens=totals["tokens"], cost=totals["cost"], model_calls=totals["requests"])
    return sorted(info.values(), key=lambda r: r["ended_at"], reverse=True)[:100]


def report(found: Scan, prices: PriceTable, granularity: str) -> dict[str, Any]:
    """Activity, errors, sessions and token usage of the window, with the same suggestions
    as ``token-optimization`` and ``suggestions`` turned into recommendations by the caller."""
    costed = [(call, call_cost(call, prices)) for call in found.calls]
    counts = event_type_counts(found)
    total = len(found.events)
    errors = sum(1 for *_, error in found.events if error)
    sessions = {sid for _, sid, *_ in found.events if sid is not None}
    days = {ts[:10] for *_, ts, _ in found.events}
    series: dict[str, Counter[str]] = defaultdict(Counter)
    series_sessions: dict[str, set[str]] = defaultdict(set)
    for _, sid, _, ts, error in found.events:
        bucket = bucket_of(ts, granularity)
        series[bucket]["events"] += 1
        series[bucket]["errors"] += int(error)
        if sid is not None:
            series_sessions[bucket].add(sid)
    keys = sorted(set(_buckets(found.window.since, found.window.until, granularity)) | set(series))
    usage = token_usage(found, prices, granularity)
    since, until = (datetime.fromisoformat(v) for v in (found.window.since, found.window.until))
    return {
        "agent": usage["agent"],
        "generated_at": usage["generated_at"],
        "report_version": "1.0",
        "period": {**_period(found, granularity), "days": (until - since).days},
        "summary": {
            "total_events": total,
            "unique_event_types": len(counts),
            "sessions": len(sessions),
            "active_days": len(days),
            "error_count": errors,
            "error_rate_pct": round(100 * errors / total, 2) if total else 0.0,
            "first_event": found.events[0][3] if found.events else None,
            "last_event": found.events[-1][3] if found.events else None,
            "model_calls": len(found.calls),
            "total_tokens": usage["totals"]["total_tokens"],
            "total_cost": usage["totals"]["total_cost"],
            "health": "idle" if not total else "error" if errors * 10 > total else "healthy",
        },
        "timeseries": [
            {
                "bucket": key,
                "events": series[key]["events"],
                "errors": series[key]["errors"],
                "sessions": len(series_sessions[key]),
            }
            for key in keys
        ],
        "top_events": [
            {"event_type": name, "count": n, "pct": round(100 * n / total, 2)}
            for name, n in counts.most_common(10)
        ],
        "tools": [
            {"tool": name, "results": n, "errors": e, "error_rate_pct": round(100 * e / n, 2)}
            for name, (n, e) in sorted(found.tools.items())
        ],
        "sessions": _sessions(found, costed),
        "token_usage": {k: usage[k] for k in ("totals", "breakdown", "unpriced_models")},
        "truncated": found.truncated,
    }
