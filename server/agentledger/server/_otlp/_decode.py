"""Decode an OTLP/HTTP trace export (protobuf or OTLP JSON, optionally gzip) into plain spans.

Decoding uses the official ``opentelemetry-proto`` messages. A span becomes a JSON-ready dict
(:class:`SpanDict` keys below) so it can wait in the ``otlp_spans`` table; spans without a valid
trace or span id are counted as rejected, as the OTLP partial-success answer reports them.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from agentledger.protocol.errors import LedgerError

__all__ = [
    "JSON",
    "PROTOBUF",
    "Decoded",
    "OtlpError",
    "decode_export",
    "encode_response",
    "encode_status",
    "media_type",
]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUS = {0: "unset", 1: "ok", 2: "error"}


class OtlpError(LedgerError, ValueError):
    """An export refused whole: ``status`` is the HTTP status (400, 413, 415)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Decoded:
    """The spans of one export and what was rejected."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


def media_type(content_type: str | None) -> str:
    """``PROTOBUF`` or ``JSON`` for a ``Content-Type`` header; :class:`OtlpError` 415 else."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in (PROTOBUF, JSON):
        return kind
    raise OtlpError(
        415, f"Content-Type: {kind or 'none'} is not supported; send {PROTOBUF} or {JSON}"
    )


def _inflate(body: bytes, encoding: str | None, limit: int) -> bytes:
    coding = (encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "deflate"):
        raise OtlpError(415, f"Content-Encoding: {coding} is not supported; use gzip")
    inflater = zlib.decompressobj(wbits=31 if coding == "gzip" else 15)
    try:
        out = inflater.decompress(body, limit + 1)
    except (zlib.error, gzip.BadGzipFile) as error:
        raise OtlpError(400, f"body: not valid {coding} data ({error})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise OtlpError(413, f"body: more than {limit} bytes once decompressed")
    return out


def _hex_to_b64(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        return value
    try:
        return base64.b64encode(bytes.fromhex(value)).decode()
    except ValueError:
        return ""  # an invalid id: the span is rejected below, not the export


def _json_request(body: bytes) -> ExportTraceServiceRequest:
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise OtlpError(400, f"body: not valid JSON ({error})") from None
    if not isinstance(raw, dict):
        raise OtlpError(400, "body: an ExportTraceServiceRequest object expected")
    # OTLP JSON writes trace and span ids as hex; the protobuf JSON mapping reads base64.
    for resource_spans in _list(raw.get("resourceSpans", raw.get("resource_spans"))):
        for scope_spans in _list(_get(resource_spans, "scopeSpans", "scope_spans")):
            for span in _list(_get(scope_spans, "spans")):
                if not isinstance(span, dict):
                    continue
                for key in ("traceId", "trace_id", "spanId", "span_id"):
                    if key in span:
                        span[key] = _hex_to_b64(span[key])
                for key in ("parentSpanId", "parent_span_id"):
                    if key in span:
                        span[key] = _hex_to_b64(span[key])
                for link in _list(span.get("links")):
                    if isinstance(link, dict):
                        for key in ("traceId", "trace_id", "spanId", "span_id"):
                            if key in link:
                                link[key] = _hex_to_b64(link[key])
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(raw, request, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as error:
        raise OtlpError(400, f"body: not an OTLP JSON trace export ({error})") from None
    return request


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _get(mapping: Any, *keys: str) -> Any:
    if isinstance(mapping, dict):
        for key in keys:
            if key in mapping:
                return mapping[key]
    return None


def any_value(value: AnyValue) -> Any:
    """A Python value for an OTLP ``AnyValue``."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return {
            "$bytes": len(value.bytes_value),
            "base64": base64.b64encode(value.bytes_value).decode(),
        }
    return getattr(value, which)


def attributes(pairs: Any) -> dict[str, Any]:
    """The ``KeyValue`` list as a dict (a repeated key keeps its last value)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        out[pair.key] = any_value(pair.value)
    return out


def decode_export(body: bytes, kind: str, encoding: str | None, limit: int) -> Decoded:
    """The spans of an export body. Raises :class:`OtlpError` for a body refused whole."""
    data = _inflate(body, encoding, limit)
    if kind == JSON:
        request = _json_request(data)
    else:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as error:
            raise OtlpError(
                400, f"body: not a protobuf ExportTraceServiceRequest ({error})"
            ) from None
    out = Decoded()
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                trace_id = binascii.hexlify(span.trace_id).decode()
                span_id = binascii.hexlify(span.span_id).decode()
                if len(span.trace_id) != 16 or trace_id == _ZERO_TRACE:
                    out.rejected += 1
                    out.errors.append(f"span {span.name!r}: traceId must be 16 non-zero bytes")
                    continue
                if len(span.span_id) != 8 or span_id == _ZERO_SPAN:
                    out.rejected += 1
                    out.errors.append(f"span {span.name!r}: spanId must be 8 non-zero bytes")
                    continue
                parent = binascii.hexlify(span.parent_span_id).decode()
                out.spans.append(
                    {
                        "trace_id": trace_id,
                        "span_id": span_id,
                        "parent_span_id": parent if len(span.parent_span_id) == 8 else None,
                        "name": span.name,
                        "kind": _KINDS.get(span.kind, str(span.kind)),
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano or span.start_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "events": [
                            {
                                "name": e.name,
                                "time_ns": e.time_unix_nano,
                                "attributes": attributes(e.attributes),
                            }
                            for e in span.events
                        ],
                        "status": {
                            "code": _STATUS.get(span.status.code, str(span.status.code)),
                            "message": span.status.message,
                        },
                        "resource": resource,
                        "scope": scope,
                    }
                )
    return out


def encode_response(kind: str, rejected: int, message: str) -> bytes:
    """An ``ExportTraceServiceResponse`` in the request's encoding (partial success if any)."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if kind == JSON:
        return orjson.dumps(json_format.MessageToDict(response))
    return bytes(response.SerializeToString())


def encode_status(kind: str, code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` body for a refused export, in the request's encoding."""
    status = status_pb2.Status(code=code, message=message)
    if kind == JSON:
        return orjson.dumps(json_format.MessageToDict(status))
    return bytes(status.SerializeToString())
