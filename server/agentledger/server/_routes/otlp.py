"""OTLP/HTTP trace ingest: ``POST /v1/traces`` (protobuf or OTLP JSON, gzip allowed).

Any OpenTelemetry exporter speaking OTLP/HTTP can send here with the bearer key of a
``read_write`` key. Spans become ledger events (:mod:`agentledger.server._otlp`); spans with a
bad trace or span id are counted in ``partial_success.rejected_spans``. A body refused whole
gets 400 (malformed) / 413 (too large) / 415 (content type or encoding) with a
``google.rpc.Status`` in the request's encoding.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from agentledger.server._auth import WritePrincipal
from agentledger.server._otlp._decode import (
    PROTOBUF,
    OtlpError,
    decode_export,
    encode_response,
    encode_status,
    media_type,
)
from agentledger.server._otlp._spans import ingest_spans
from agentledger.server._routes._deps import SettingsDep, StoreDep
from agentledger.server._store._sql import SQLStore

__all__ = ["router"]

router = APIRouter(tags=["opentelemetry"])

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
    result = await run_in_threadpool(
        ingest_spans,
        store,
        decoded.spans,
        bound_agent=principal.agent,
        max_depth=settings.max_json_depth,
        patterns=settings.redact_patterns,
    )
    errors = decoded.errors + result.errors
    message = "; ".join(errors[:20])
    if result.failed:
        message = f"{result.failed} event(s) not written: {message}"
    return Response(
        encode_response(kind, decoded.rejected, message), status_code=200, media_type=kind
    )
