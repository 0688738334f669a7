"""Token usage, cost, suggestions and reports (the reference client's ``token_usage``,
``token_optimization``, ``suggestions`` and ``report``), plus usage across agents and the price
table in force.

Every route reads one window of events (:func:`agentledger.server._query.usage.scan`):
``from`` (default: 30 days before ``to``) up to ``to`` (default: now), exclusive; a date
without a time as ``to`` includes that whole day. A key bound to an agent sees only that agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SESSION_CHARS
from agentledger.server._auth import Principal, ReadPrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._ingest import format_ts
from agentledger.server._query.prices import PriceTable
from agentledger.server._query.token_advice import improvement_suggestions, token_optimization
from agentledger.server._query.usage import Scan, Window, scan, session_span
from agentledger.server._query.usage_report import GRANULARITIES, report, token_usage
from agentledger.server._schemas import AGENT_PATTERN, NO_NUL

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["usage"], route_class=StrictJSONRoute)

AgentPath = Annotated[str, Path(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)]
TimeParam = Annotated[str | None, Query(max_length=64, pattern=NO_NUL)]
FromParam = Annotated[str | None, Query(alias="from", max_length=64, pattern=NO_NUL)]
Granularity = Annotated[str | None, Query(max_length=8)]
SessionParam = Annotated[str | None, Query(max_length=MAX_SESSION_CHARS, pattern=NO_NUL)]
MaxEvents = Annotated[int, Query(ge=1, le=1_000_000)]
DEFAULT_SPAN = timedelta(days=30)
MAX_BUCKETS = 10_000
_FIRST = datetime(1, 1, 2, tzinfo=UTC)


def _bad(field: str, message: str) -> HTTPException:
    return HTTPException(422, [{"loc": ["query", field], "msg": message, "type": "value_error"}])


def _time(value: str, field: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise _bad(field, f"{field} must be an ISO-8601 date or time, got {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed = parsed.astimezone(UTC)
        if field == "to" and len(text) == 10:  # a date: the whole day
            parsed += timedelta(days=1)
        if parsed < _FIRST:
            raise OverflowError
    except OverflowError:
        raise _bad(field, f"{field} is out of range (years 1 to 9999, UTC)") from None
    return parsed


def _granularity(value: str | None, since: datetime, until: datetime) -> str:
    span = until - since
    field = "granularity"
    if value is None or value == "":
        field = "from"
        days = timedelta(days=1)
        value = "hour" if span <= 2 * days else "day" if span <= 92 * days else "week"
    if value not in GRANULARITIES:
        raise _bad(field, f"granularity must be one of {', '.join(GRANULARITIES)}")
    if span / GRANULARITIES[value] > MAX_BUCKETS:
        raise _bad(field, f"{value} buckets over this range exceed {MAX_BUCKETS:,}")
    return value


async def _window(
    request: Request,
    agents: tuple[str, ...] | None,
    since: str | None,
    until: str | None,
    granularity: str | None,
    session_id: str | None,
) -> tuple[Window, str]:
    if session_id and not (since or until):  # the whole session
        span = await run_in_threadpool(session_span, request.app.state.store, session_id, agents)
        if span is not None:
            since, last = span[0], datetime.fromisoformat(span[1])
            until = format_ts(last + timedelta(microseconds=1)) if last.year < 9999 else None
    end = _time(until, "to") if until else datetime.now(UTC)
    if since:
        start = _time(since, "from")
    elif end - _FIRST < DEFAULT_SPAN:
        raise _bad("to", "to is too early to take the default 30 days before it; give from")
    else:
        start = end - DEFAULT_SPAN
    if start >= end:
        raise _bad("from", "from must be earlier than to")
    window = Window(agents, format_ts(start), format_ts(end), session_id or None)
    return window, _granularity(granularity, start, end)


@dataclass(frozen=True, slots=True)
class _Period:
    """The query parameters every usage route shares."""

    since: str | None
    until: str | None
    granularity: str | None
    session_id: str | None
    max_events: int


def _period(
    from_: FromParam = None,
    to: TimeParam = None,
    granularity: Granularity = None,
    session_id: SessionParam = None,
    max_events: MaxEvents = 200_000,
) -> _Period:
    return _Period(from_, to, granularity, session_id, max_events)


Period = Annotated[_Period, Depends(_period)]


async def _read(
    request: Request, agents: tuple[str, ...] | None, period: _Period
) -> tuple[Scan, PriceTable, str]:
    """The events of ``period`` (of ``agents``; ``None``: every agent), the price table and
    the time unit of trends."""
    window, unit = await _window(
        request, agents, period.since, period.until, period.granularity, period.session_id
    )
    state = request.app.state
    found = await run_in_threadpool(scan, state.store, window, max_events=period.max_events)
    return found, state.prices, unit


@router.get("/agents/{agent}/token-usage")
async def agent_token_usage(
    agent: AgentPath,
    principal: ReadPrincipal,
    request: Request,
    period: Period,
) -> Response:
    """Token usage of ``agent`` with the cache split, cost, breakdowns and a trend."""
    principal.check_agent(agent)
    found, prices, unit = await _read(request, (agent,), period)
    return json_response(token_usage(found, prices, unit))


def _agents_for(principal: Principal, agent: str | None) -> tuple[str, ...] | None:
    if agent is not None:
        principal.check_agent(agent)
        return (agent,)
    return (principal.agent,) if principal.agent is not None else None


@router.get("/token-usage")
async def all_token_usage(
    principal: ReadPrincipal,
    request: Request,
    period: Period,
    agent: Annotated[str | None, Query(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)] = None,
) -> Response:
    """Token usage of every agent the key may read (or of ``agent``), by agent, model and
    session."""
    found, prices, unit = await _read(request, _agents_for(principal, agent), period)
    return json_response(token_usage(found, prices, unit))


@router.get("/agents/{agent}/token-optimization")
async def agent_token_optimization(
    agent: AgentPath,
    principal: ReadPrincipal,
    request: Request,
    period: Period,
) -> Response:
    """Token-saving suggestions from the stored usage (fixed rules, numbers cited)."""
    principal.check_agent(agent)
    found, prices, _ = await _read(request, (agent,), period)
    return json_response(token_optimization(found, prices))


@router.get("/agents/{agent}/suggestions")
async def agent_suggestions(
    agent: AgentPath,
    principal: ReadPrincipal,
    request: Request,
    from_: FromParam = None,
    to: TimeParam = None,
    refresh: bool = False,
    session_id: SessionParam = None,
    max_events: MaxEvents = 200_000,
) -> Response:
    """Improvement suggestions (cost and reliability), each resting on cited evidence.
    ``refresh`` is accepted and changes nothing: answers are computed on every request."""
    principal.check_agent(agent)
    period = _Period(from_, to, None, session_id, max_events)
    found, prices, _ = await _read(request, (agent,), period)
    return json_response(improvement_suggestions(found, prices))


def _recommendations(advice: dict[str, Any]) -> list[dict[str, Any]]:
    recs = [
        {
            "severity": s["severity"],
            "category": s["category"],
            "title": s["title"],
            "detail": s["recommendation"],
            "expected_impact": s["expected_impact"],
        }
        for s in advice["suggestions"]
    ]
    return recs or [
        {
            "severity": "positive",
            "category": "health",
            "title": "No issues found",
            "detail": "No rule found a saving or a failing tool in this period.",
            "expected_impact": "",
        }
    ]


@router.get("/agents/{agent}/report")
async def agent_report(
    agent: AgentPath,
    principal: ReadPrincipal,
    request: Request,
    period: Period,
) -> Response:
    """Activity, errors, sessions, token usage and recommendations of ``agent`` (or of one of
    its sessions) over the period."""
    principal.check_agent(agent)
    found, prices, unit = await _read(request, (agent,), period)
    body = report(found, prices, unit)
    body["recommendations"] = _recommendations(improvement_suggestions(found, prices))
    return json_response(body)


@router.get("/model-prices")
def model_prices(principal: ReadPrincipal, request: Request) -> Response:
    """The price table in force (shipped table plus ``AGENTLEDGER_MODEL_PRICES``)."""
    prices: PriceTable = request.app.state.prices
    return json_response(
        {
            **prices.describe(),
            "unit": "USD per million tokens",
            "models": [p.to_dict() for _, p in sorted(prices.prices.items())],
        }
    )
