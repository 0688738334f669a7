"""Dashboard pages: ``/ui/``, sessions, agents, login (the event, why and impact pages are
in :mod:`._lineage_pages`).

Each page reads through :class:`~agentledger.server._ui._api.LedgerAPI` (the app's own
``/v1`` routes in process) and renders a Jinja2 template with autoescaping on: event data is
only ever text in the HTML, and the Content-Security-Policy allows no inline script, so even
a missed escape could not run one.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import jinja2
from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SESSION_CHARS
from agentledger.server._routes.health import server_version
from agentledger.server._schemas import AGENT_PATTERN
from agentledger.server._ui._api import ApiError, LedgerAPI
from agentledger.server._ui._charts import baseline_charts, report_metrics, report_scalars
from agentledger.server._ui._present import (
    EventView,
    flatten_tree,
    format_duration_ms,
    replay_source,
    session_stats,
    view_events,
)
from agentledger.server._ui._viewer import (
    COOKIE,
    DEV_COOKIE,
    Viewer,
    dev_token_matches,
    safe_next,
    viewer_for,
)

__all__ = ["build_page", "render", "router", "url_segment"]

router = APIRouter(prefix="/ui", include_in_schema=False)

#: Sessions listed on the index page.
INDEX_SESSIONS = 50
#: Events read in total to fill the index page's error/token columns; sessions beyond the
#: budget show their counts only (bounded work per page view).
INDEX_STATS_BUDGET_EVENTS = 20_000
#: Timeline rows per page (``per_page`` may ask for up to ``MAX_PER_PAGE``).
PER_PAGE = 200
MAX_PER_PAGE = 1000
#: Events read for one session page (the replay route's own maximum).
MAX_SESSION_EVENTS = 100_000
#: Causal-tree lines drawn on a session or event page.
TREE_LINES = 1000
#: Agents with more events than this are verified on request only (verify runs ~100k/s).
AUTO_VERIFY_EVENTS = 200_000
#: Smallest recent window the agent page picks by itself for the baseline comparison.
AUTO_RECENT_MIN = 10

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def _env(request: Request) -> jinja2.Environment:
    env: jinja2.Environment = request.app.state.ui_templates
    return env


def render(
    request: Request, template: str, *, status_code: int = 200, viewer: Viewer, **context: Any
) -> HTMLResponse:
    """Render ``template`` with the common context and the dashboard's security headers."""
    html = (
        _env(request)
        .get_template(template)
        .render(
            request_path=request.url.path,
            viewer=viewer,
            version=server_version(),
            **context,
        )
    )
    return HTMLResponse(html, status_code=status_code, headers=_SECURITY_HEADERS)


def _login_redirect(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/ui/login?{urlencode({'next': target})}", status_code=303)


def _dev_session(request: Request) -> Response:
    token = request.query_params.get("token")
    rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
    response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
    if dev_token_matches(request, token):
        response.set_cookie(
            DEV_COOKIE,
            str(token),
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
    return response


async def build_page(
    request: Request, build: Callable[[LedgerAPI, Viewer], Awaitable[Response]]
) -> Response:
    """Run ``build`` with an API client for the viewer; map API errors to pages.

    A ``token`` query parameter is the dev-session link: when it is this server's token (and
    the request local), the browser gets the dev-session cookie and is sent to the same page
    without the token; any other token is dropped and the page asks for a key as usual."""
    if "token" in request.query_params:
        return _dev_session(request)
    viewer = viewer_for(request)
    if viewer.key is None:
        return _login_redirect(request)
    request_id = request.scope.get("state", {}).get("request_id")
    async with LedgerAPI(request.app, viewer.key, origin=request, request_id=request_id) as api:
        try:
            return await build(api, viewer)
        except ApiError as error:
            if error.status == 401 and viewer.source != "header":
                response = _login_redirect(request)
                if viewer.source == "cookie":
                    response.delete_cookie(COOKIE, path="/ui")
                return response
            return render(
                request,
                "error.html",
                status_code=error.status,
                viewer=viewer,
                status=error.status,
                message=error.message,
            )


# -- index -----------------------------------------------------------------------------------


@router.get("", response_class=HTMLResponse)
async def ui_root() -> Response:
    """``/ui`` → ``/ui/``."""
    return RedirectResponse("/ui/", status_code=307)


@router.get("/", response_class=HTMLResponse)
async def index(
    request: Request,
    agent: Annotated[str | None, Query(max_length=MAX_AGENT_CHARS)] = None,
    q: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """Agents and recent sessions (event counts, start/end, errors, tokens), agent filter,
    keyword search when the search route exists."""
    agent = agent or None
    query = (q or "").strip() or None

    async def build(api: LedgerAPI, viewer: Viewer) -> Response:
        agents = await api.agents()
        sessions = await api.sessions(agent=agent, limit=INDEX_SESSIONS)
        budget = INDEX_STATS_BUDGET_EVENTS
        rows = []
        for session in sessions:
            stats = None
            count = int(session.get("event_count") or 0)
            if count <= budget:
                budget -= count
                events = await api.session_events(
                    session["session_id"], agent=None, limit=max(count, 1)
                )
                stats = session_stats(view_events(events))
            rows.append({"session": session, "stats": stats})
        search = None
        search_error = None
        if query is not None and api.can_search:
            try:
                found = await api.search(query, agent=agent, limit=50)
                results = found.get("results", [])
                search = {
                    "query": query,
                    "mode": found.get("mode"),
                    "pending": found.get("index_pending") or 0,
                    "notes": [str(n) for n in found.get("notes") or []],
                    "hits": [
                        {"view": view, "score": hit.get("score")}
                        for view, hit in zip(view_events(results), results, strict=True)
                    ],
                }
            except ApiError as error:
                if error.status in (401, 403):
                    raise
                search_error = error.message
        return render(
            request,
            "index.html",
            viewer=viewer,
            agents=agents,
            agent=agent,
            rows=rows,
            query=query or "",
            can_search=api.can_search,
            search=search,
            search_error=search_error,
        )

    return await build_page(request, build)


# -- session ---------------------------------------------------------------------------------


def _page_url(request: Request, **changes: Any) -> str:
    params = {k: v[-1] for k, v in parse_qs(request.url.query).items()}
    params.update({k: str(v) for k, v in changes.items() if v is not None})
    for key in [k for k, v in changes.items() if v is None]:
        params.pop(key, None)
    return request.url.path + ("?" + urlencode(params) if params else "")


@router.get("/sessions/{session_id:path}", response_class=HTMLResponse)
async def session_page(
    request: Request,
    session_id: Annotated[str, Path(min_length=1, max_length=MAX_SESSION_CHARS)],
    agent: Annotated[str | None, Query(max_length=MAX_AGENT_CHARS)] = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    per_page: Annotated[int, Query(ge=10, le=MAX_PER_PAGE)] = PER_PAGE,
    focus: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """The session as a timeline, oldest first, ``per_page`` rows a page, with its causal
    tree; ``focus`` opens the page holding that event and selects it."""
    agent = agent or None

    async def build(api: LedgerAPI, viewer: Viewer) -> Response:
        started = time.perf_counter()
        events = await api.session_events(session_id, agent=agent, limit=MAX_SESSION_EVENTS)
        if not events:
            raise ApiError(404, f"session_id: no events in session {session_id!r}")
        views = view_events(events)
        current = page
        if focus:
            hit = next((v.index for v in views if v.event_id == focus), None)
            if hit is not None:
                current = hit // per_page + 1
        pages = max(1, -(-len(views) // per_page))
        current = min(current, pages)
        shown = views[(current - 1) * per_page : current * per_page]
        # A large session's tree is drawn around the page shown (its events and their
        # ancestors), so it stays readable and the page stays small.
        tree_scope = None if len(views) <= TREE_LINES else [v.event_id for v in shown]
        tree, tree_total = flatten_tree(views, limit=TREE_LINES, around=tree_scope)
        page_of = {v.event_id: v.index // per_page + 1 for v in views}

        def tree_link(view: EventView) -> str:
            if page_of[view.event_id] == current:
                return f"#e-{view.event_id}"
            return _page_url(request, page=None, focus=view.event_id) + f"#e-{view.event_id}"

        return render(
            request,
            "session.html",
            viewer=viewer,
            session_id=session_id,
            agent=agent,
            stats=session_stats(views),
            replay=replay_source(events),
            rows=shown,
            tree=tree,
            tree_total=tree_total,
            tree_link=tree_link,
            tree_partial=tree_scope is not None,
            page=current,
            pages=pages,
            per_page=per_page,
            focus=focus,
            truncated=len(events) >= MAX_SESSION_EVENTS,
            prev_url=_page_url(request, page=current - 1, focus=None) if current > 1 else None,
            next_url=(
                _page_url(request, page=current + 1, focus=None) if current < pages else None
            ),
            build_ms=(time.perf_counter() - started) * 1000,
        )

    return await build_page(request, build)


# -- agent -----------------------------------------------------------------------------------


@router.get("/agents/{agent}", response_class=HTMLResponse)
async def agent_page(
    request: Request,
    agent: Annotated[str, Path(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)],
    verify: Annotated[bool, Query()] = False,
    recent: Annotated[int | None, Query(ge=1, le=100_000)] = None,
) -> Response:
    """Chain verification status and head, recent sessions, and baseline vs recent
    distributions when the baseline route exists."""

    async def build(api: LedgerAPI, viewer: Viewer) -> Response:
        found = [a for a in await api.agents() if a.get("agent") == agent]
        if not found:
            raise ApiError(404, f"agent: no events for agent {agent!r}")
        info = found[0]
        report = None
        verify_ms = None
        if verify or int(info.get("event_count") or 0) <= AUTO_VERIFY_EVENTS:
            started = time.perf_counter()
            report = await api.verify_chain(agent)
            verify_ms = (time.perf_counter() - started) * 1000
        sessions = await api.sessions(agent=agent, limit=20)
        baseline = None
        baseline_error = None
        if api.can_baseline:
            try:
                baseline = await api.baseline(agent, recent_window=recent)
                split = _auto_split(baseline) if recent is None else None
                if split is not None:
                    baseline = await api.baseline(agent, recent_window=split)
            except ApiError as error:
                if error.status in (401, 403):
                    raise
                baseline_error = error.message
        return render(
            request,
            "agent.html",
            viewer=viewer,
            agent=agent,
            info=info,
            report=report,
            verify_ms=verify_ms,
            sessions=sessions,
            can_baseline=api.can_baseline,
            baseline=baseline,
            baseline_error=baseline_error,
            recent=recent,
            charts=baseline_charts(baseline) if baseline else [],
            scalars=report_scalars(baseline) if baseline else [],
            metrics=report_metrics(baseline) if baseline else [],
            reasons=_reasons(baseline),
        )

    return await build_page(request, build)


def _auto_split(report: dict[str, Any]) -> int | None:
    """A ``recent_window`` that leaves a baseline when the route's default took every session
    as recent: the last third (at least ``AUTO_RECENT_MIN``), or ``None`` to keep the report."""
    sessions = report.get("sessions")
    if report.get("verdict") != "insufficient_data" or not isinstance(sessions, dict):
        return None
    base, recent = sessions.get("baseline"), sessions.get("recent")
    if not isinstance(base, int) or not isinstance(recent, int) or base > 0:
        return None
    split = max(AUTO_RECENT_MIN, recent // 3)
    return split if recent - split >= AUTO_RECENT_MIN else None


def _reasons(report: dict[str, Any] | None) -> list[str]:
    drift = report.get("drift") if report else None
    reasons = drift.get("reasons") if isinstance(drift, dict) else None
    if isinstance(drift, dict) and not reasons and drift.get("reason"):
        reasons = [drift["reason"]]
    return [str(r) for r in reasons] if isinstance(reasons, list) else []


# -- login -----------------------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
async def login_form(
    request: Request, next: Annotated[str | None, Query(max_length=2000)] = None
) -> Response:
    """The key form (a key is asked once per browser session)."""
    return render(
        request, "login.html", viewer=viewer_for(request), next=safe_next(next), error=None
    )


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    parts = urlsplit(origin)
    return parts.netloc == request.headers.get("host", "")


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    """Check the key against the API (``GET /v1/agents``) and keep it in a session cookie."""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=10)
    key = (fields.get("key") or [""])[-1].strip()
    target = safe_next((fields.get("next") or [""])[-1])
    viewer = viewer_for(request)
    error = None
    if not _same_origin(request):
        error = "cross-site login refused"
    elif not key:
        error = "enter an API key"
    else:
        async with LedgerAPI(request.app, key, origin=request) as api:
            try:
                await api.agents()
            except ApiError as failure:
                error = failure.message
    if error is not None:
        return render(
            request, "login.html", status_code=401, viewer=viewer, next=target, error=error
        )
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        key,
        path="/ui",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout() -> Response:
    """Forget the key cookie."""
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


def url_segment(value: object) -> str:
    """Percent-encode a path segment (every reserved character, ``/`` included)."""
    return quote(str(value), safe="")


def duration(ms: float | None) -> str:
    """Template filter: :func:`format_duration_ms`."""
    return format_duration_ms(ms)
