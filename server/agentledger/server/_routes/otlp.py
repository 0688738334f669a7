"""OTLP/HTTP trace ingest: ``POST /v1/traces`` (protobuf or OTLP JSON, gzip allowed).

Any OpenTelemetry exporter speaking OTLP/HTTP can send here with the bearer key of a
``read_write`` key. Spans become ledger events (:mod:`agentledger.server._otlp`); spans with a
bad trace or span id, and the spans of a trace whose events the store refused, are counted in
``partial_success.rejected_spans``. A body refused whole gets 400 (malformed) / 413 (too
large) / 415 (content type or encoding), a busy database 503 and a full one 507 (with
``Retry-After``), each with a ``google.rpc.Status`` in the request's encoding.

The router's lifespan starts the timer that writes spans whose trace root never arrived
(:class:`._otlp._flush.OtlpFlusher`, every ``Settings.otlp_flush_interval_s`` seconds).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from agentledger.server._auth import WritePrincipal
from agentledger.server._db_errors import DATABASE_ERRORS, database_busy, database_full
from agentledger.server._otlp._decode import (
    PROTOBUF,
    OtlpError,
    decode_export,
    encode_response,
    encode_status,
    media_type,
)
from agentledger.server._otlp._flush import OtlpFlusher
from agentledger.server._otlp._spans import ingest_spans
from agentledger.server._routes._deps import SettingsDep, StoreDep
from agentledger.server._store._sql import SQLStore

__all__ = ["router"]

logger = logging.getLogger("agentledger.server")


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = app.state.settings
    flusher: OtlpFlusher | None = None
    if settings.otlp_flush_interval_s > 0 and isinstance(app.state.store, SQLStore):
        flusher = OtlpFlusher(
            app.state.store,
            interval_s=settings.otlp_flush_interval_s,
            pending_s=settings.otlp_pending_s,
            max_depth=settings.max_json_depth,
            patterns=settings.redact_patterns,
        )
        flusher.start()
    app.state.otlp_flusher = flusher
    try:
        yield
    finally:
        if flusher is not None:
            await run_in_threadpool(flusher.stop)


router = APIRouter(tags=["opentelemetry"], lifespan=_lifespan)

#: ``google.rpc.Code`` values for the refusals.
_RPC_CODE = {400: 3, 413: 8, 415: 3}


@router.post(
    "/v1/traces",
    responses={
        200: {
            "description": "ExportTraceServiceResponse (partial_success when spans were rejected)"
        },
        400: {"description": "malformed export (google.rpc.Status)"},
        413: {"description": "export above the body limit"},
        415: {"description": "unsupported Content-Type or Content-Encoding"},
        503: {"description": "database busy: nothing written, retry (Retry-After)"},
        507: {"description": "database full: nothing written (Retry-After)"},
    },
)
async def export_traces(
    request: Request, principal: WritePrincipal, store: StoreDep, settings: SettingsDep
) -> Response:
    """Ingest an OTLP trace export; the answer is an ``ExportTraceServiceResponse``."""
    kind = PROTOBUF
    try:
        kind = media_type(request.headers.get("content-type"))
        body = await request.body()
        if len(body) > settings.max_body_bytes:
            raise OtlpError(413, f"body: more than {settings.max_body_bytes} bytes")
        decoded = decode_export(
            body, kind, request.headers.get("content-encoding"), settings.max_body_bytes
        )
    except OtlpError as error:
        return Response(
            encode_status(kind, _RPC_CODE.get(error.status, 3), error.message),
            status_code=error.status,
            media_type=kind,
        )
    if not isinstance(store, SQLStore):  # pragma: no cover - both stores are SQL stores
        raise TypeError("OTLP ingest needs a SQL store")
    try:
        result = await run_in_threadpool(
            ingest_spans,
            store,
            decoded.spans,
            bound_agent=principal.agent,
            max_depth=settings.max_json_depth,
            patterns=settings.redact_patterns,
            pending_s=settings.otlp_pending_s,
        )
    except DATABASE_ERRORS as error:
        # nothing of the export was written (one transaction); busy: the exporter retries
        refused = _refused(error, kind)
        if refused is None:
            raise
        return refused
    errors = decoded.errors + result.errors
    return Response(
        encode_response(kind, decoded.rejected + result.rejected, "; ".join(errors[:20])),
        status_code=200,
        media_type=kind,
    )


def _refused(error: Exception, kind: str) -> Response | None:
    """503 (busy, ``UNAVAILABLE``) or 507 (full, ``RESOURCE_EXHAUSTED``) with ``Retry-After``
    as a ``google.rpc.Status``; ``None`` for any other error (a bug: 500)."""
    if database_busy(error):
        logger.warning("OTLP export: database busy: %s", error)
        status, code, message, retry = 503, 14, "database busy, retry later", "1"
    elif database_full(error):
        logger.warning("OTLP export: database full: %s", error)
        status, code, message, retry = 507, 8, "database full; nothing was written", "30"
    else:
        return None
    return Response(
        encode_status(kind, code, message),
        status_code=status,
        media_type=kind,
        headers={"Retry-After": retry},
    )
