"""The FastAPI application factory."""

from __future__ import annotations

import gc
import logging
import secrets
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from starlette.types import ASGIApp

from agentledger.protocol.errors import LedgerError
from agentledger.server._db_errors import DATABASE_ERRORS, refusal_response
from agentledger.server._http import NulGuardMiddleware, RequestIdMiddleware, json_response
from agentledger.server._query.prices import load_price_table
from agentledger.server._retention import routes as retention
from agentledger.server._routes import (
    catalog,
    decision,
    events,
    evidence,
    health,
    keys,
    ledger,
    otlp,
    query,
    signing,
    usage,
)
from agentledger.server._routes.health import server_version
from agentledger.server._settings import Settings, is_loopback
from agentledger.server._store import open_store
from agentledger.server._store.base import LedgerStore
from agentledger.server._ui import mount as mount_dashboard
from agentledger.server._verify_ranges import RangeVerifier

__all__ = ["StartupRefused", "create_app"]

logger = logging.getLogger("agentledger.server")

#: The collector's thresholds while the server runs (see ``create_app``'s lifespan).
_GC_THRESHOLDS = (50_000, 20, 100)


class StartupRefused(LedgerError, RuntimeError):
    """The configuration would expose the ledger without real keys."""


class _LedgerApp(FastAPI):
    """FastAPI with :class:`RequestIdMiddleware` outside everything, so responses made by the
    outer layers (413 body limit, 500 error handler, the NUL guard's 422) carry
    ``X-Request-ID`` too."""

    def build_middleware_stack(self) -> ASGIApp:
        return RequestIdMiddleware(NulGuardMiddleware(super().build_middleware_stack()))


def create_app(
    settings: Settings,
    *,
    store: LedgerStore | None = None,
    extra_routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """Build the ledger app.

    Args:
        settings: server configuration (see :class:`Settings`).
        store: an open store to serve; by default ``settings.db`` is opened (and migrated).
            The app closes it on shutdown either way; ``app.state.store`` holds it.
        extra_routers: routers of other features (e.g. search, baselines, ``/v1/events/at``);
            they are included before the ``/v1/events/{event_id}`` routes so their fixed
            paths win.

    Raises:
        StartupRefused: ``settings.host`` is not loopback and the database has no active key
            (a dev key alone is only honoured on loopback; wire contract, "General"). On
            loopback without any key the app starts and logs a warning.
        ValueError: ``settings.model_prices`` names a file that cannot be read or is malformed.
    """
    prices = load_price_table(settings.model_prices)
    store = store or open_store(
        settings.db,
        chain_key=settings.chain_key,
        pg_pool_size=settings.pg_pool_size,
        pg_statement_timeout_s=settings.pg_statement_timeout_s,
    )
    if not settings.dev_key_active and store.count_active_keys() == 0:
        if not is_loopback(settings.host):
            store.close()
            raise StartupRefused(
                f"refusing to serve on {settings.host}: no API key exists and a dev key is only "
                "honoured on a loopback address; create one first "
                "(agentledger keys-admin create --db ...) or bind to 127.0.0.1"
            )
        logger.warning(
            "no API key exists and no dev key is set: every request will get 401 "
            "(pass --dev-key or run agentledger keys-admin create)"
        )
    if settings.dev_key and not settings.dev_key_active:
        logger.warning("dev key ignored: %s is not a loopback address", settings.host)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The objects of start-up (modules, the app, the store) live as long as the server:
        # frozen, the collector stops re-scanning them on every full collection, which a
        # request that builds many objects (a why() of 10,000 events, a 500-event batch)
        # otherwise triggers.
        # A 500-event batch allocates tens of thousands of containers that die with the
        # request; at the default threshold (700) the youngest generation is collected dozens
        # of times per batch and the older ones often. 50,000 keeps that to about once per
        # batch: 10-15 % less CPU per event in bench_ingest.py, a few MB more at most.
        thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(*_GC_THRESHOLDS)
        try:
            yield
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
            verifier.close()
            store.close()

    verifier = RangeVerifier(settings.verify_workers, settings.verify_split_rows)
    app = _LedgerApp(
        title="agentledger",
        version=server_version(),
        summary="An operational database for LLM agents: causal events, why(), hash chain.",
        docs_url="/swagger",
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
        max_body_size=settings.max_body_bytes,
    )
    app.state.settings = settings
    app.state.store = store
    app.state.verifier = verifier
    app.state.prices = prices
    app.state.dev_key = settings.dev_key if settings.dev_key_active else None
    app.state.dashboard_token = (
        (settings.dashboard_token or secrets.token_urlsafe(24)) if app.state.dev_key else None
    )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        # FastAPI's own shape; ``input`` echoes are dropped (they may be huge or secret).
        for error in exc.errors():
            if isinstance(error, dict):
                error.pop("input", None)
        return await request_validation_exception_handler(request, exc)

    async def internal_error(request: Request, exc: Exception) -> Response:
        request_id = request.scope.get("state", {}).get("request_id", "")
        refusal = refusal_response(exc, request_id)
        if refusal is not None:
            return refusal
        logger.error("agentledger internal error (request %s)", request_id, exc_info=exc)
        return json_response(
            {"detail": "internal server error", "request_id": request_id}, status_code=500
        )

    app.add_exception_handler(Exception, internal_error)
    for error_class in DATABASE_ERRORS:
        app.add_exception_handler(error_class, internal_error)

    # FastAPI tries the routes in this order on every request, so the hot ones come first: the
    # writes, then the reads by event id. Every fixed path the `/v1/events/{event_id}` routes
    # would also match (`/v1/events/chain`, `/export`, `/at`, and the extra routers') must come
    # before them; the other routers cannot collide with those and follow.
    app.include_router(health.router)
    app.include_router(events.router)
    app.include_router(ledger.router)  # chain, export: before /v1/events/{event_id}
    app.include_router(query.router)  # search, baselines, at, forget, memory: before it too
    for router in extra_routers:
        app.include_router(router)
    app.include_router(events.lineage_router)
    app.include_router(decision.router)  # GET /v1/events/{id}/decision
    app.include_router(evidence.router)  # GET /v1/events/{id}/evidence (zip)
    app.include_router(catalog.router)
    app.include_router(keys.router)
    app.include_router(usage.router)  # token usage, cost, suggestions, reports
    app.include_router(retention.router)  # policies, sweep, erasure log
    app.include_router(signing.router)  # public signing keys of signed chain heads
    app.include_router(otlp.router)  # OpenTelemetry trace ingest (POST /v1/traces)
    mount_dashboard(app)  # /ui/ pages + /ui/static
    return app
