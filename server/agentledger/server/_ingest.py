"""Turn validated request items into :class:`PreparedEvent` rows for the store.

Preparation happens before the store's write lock: input limits (depth, integer range),
write-time redaction (before the checksum), timestamp normalisation and the body
fingerprint that decides *duplicate* versus *conflict* for repeated ``event_id`` or
``idempotency_key``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from agentledger.protocol.errors import LedgerError
from agentledger.protocol.redaction import redact
from agentledger.server._canonical import InputLimitError, inspect_value
from agentledger.server._schemas import BatchItemIn, EventIn

__all__ = [
    "ItemError",
    "PreparedEvent",
    "format_ts",
    "now_ts",
    "parse_ts",
    "prepare",
    "validate_item",
    "validate_items",
]

_ITEM = TypeAdapter(BatchItemIn)
_ITEMS = TypeAdapter(list[BatchItemIn])


class ItemError(LedgerError, ValueError):
    """A bad item: HTTP-like ``status`` and a ``detail`` naming the field."""

    def __init__(self, status: int, detail: str, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.loc = loc

    def as_fastapi_detail(self) -> list[dict[str, object]]:
        """The FastAPI-style 422 ``detail`` list for this error."""
        return [{"loc": ["body", *self.loc], "msg": self.detail, "type": "value_error"}]


def format_ts(value: datetime) -> str:
    """The one stored timestamp format: UTC, microseconds, ``+00:00`` (fixed width, sortable).

    Naive datetimes are taken as UTC.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def now_ts() -> str:
    """The server clock in the stored timestamp format."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def parse_ts(text: str) -> str:
    """Normalise an ISO-8601 string (``Z`` accepted) to the stored format.

    Raises:
        ValueError: not ISO-8601.
    """
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    return format_ts(datetime.fromisoformat(value))


def _loc(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "body"


def validate_item(raw: Any) -> BatchItemIn:
    """Validate one batch/import item.

    Raises:
        ItemError: 422 whose detail names each bad field.
    """
    try:
        return _ITEM.validate_python(raw)
    except ValidationError as error:
        detail = "; ".join(f"{_loc(e['loc'])}: {e['msg']}" for e in error.errors())
        raise ItemError(422, detail) from None


def validate_items(raws: list[Any]) -> list[BatchItemIn | ItemError]:
    """Validate batch items: one pydantic call when all are valid, else item by item.

    Returns:
        Per item, the validated model or the :class:`ItemError` (422) naming its bad fields.
    """
    try:
        return list(_ITEMS.validate_python(raws))
    except ValidationError:
        pass
    out: list[BatchItemIn | ItemError] = []
    for raw in raws:
        try:
            out.append(validate_item(raw))
        except ItemError as error:
            out.append(error)
    return out


@dataclass(slots=True)
class PreparedEvent:
    """An event ready for the store's write path.

    ``event_id`` and ``timestamp`` are ``None``/server time when the client gave none;
    ``fingerprint`` is SHA-256 of the body as sent (after redaction), used to tell a retry
    (same body: duplicate) from a conflict (different body: 409).
    """

    agent: str
    event: str
    data: dict[str, Any]
    parent_id: str | None
    session_id: str | None
    metadata: dict[str, Any] | None
    supersedes: str | None
    importance: float | None
    idempotency_key: str | None
    event_id: str | None
    timestamp: str
    fast_ok: bool
    fingerprint: str
    parent_index: int | None = None
    #: further causes as ``(event_id, kind or None)``, each once, none equal to the event
    caused_by: tuple[tuple[str, str | None], ...] = ()
    scope_id: str | None = None


def _causes(item: EventIn) -> tuple[tuple[str, str | None], ...]:
    """``caused_by`` as lowercase ``(event_id, kind)`` pairs, the first label of each id kept."""
    if not item.caused_by:
        return ()
    out: dict[str, str | None] = {}
    for entry in item.caused_by:
        cause, kind = (
            (entry.lower(), None)
            if isinstance(entry, str)
            else (
                entry.event_id.lower(),
                entry.kind,
            )
        )
        if out.get(cause) is None:
            out[cause] = kind
    return tuple(out.items())


def prepare(
    item: EventIn,
    *,
    max_depth: int,
    patterns: Collection[str],
    received_at: str,
    parent_index: int | None = None,
) -> PreparedEvent:
    """Check limits, redact, and fingerprint one validated item.

    Args:
        item: a validated :class:`EventIn` (or :class:`BatchItemIn`).
        max_depth: nesting limit for ``data`` and ``metadata``.
        patterns: redaction patterns configured on the server.
        received_at: the server clock for this request (used when no timestamp was sent).
        parent_index: the batch-relative parent, resolved by the store.

    Raises:
        ItemError: 422 for a limit (nesting, integer range), naming the field.
    """
    data = item.data
    metadata = item.metadata
    try:
        fast = inspect_value(data, max_depth=max_depth)
    except InputLimitError as error:
        loc = ("data", *error.path)
        raise ItemError(422, f"{_loc(loc)}: {error.message}", loc) from None
    if metadata is not None:
        try:
            fast = inspect_value(metadata, max_depth=max_depth) and fast
        except InputLimitError as error:
            loc = ("metadata", *error.path)
            raise ItemError(422, f"{_loc(loc)}: {error.message}", loc) from None
    # in place: the request body was parsed for this request alone
    data = redact(data, patterns=patterns, in_place=True)
    if metadata is not None:
        metadata = redact(metadata, patterns=patterns, in_place=True)
    event_id = item.event_id.lower() if item.event_id is not None else None
    parent_id = item.parent_id.lower() if item.parent_id is not None else None
    supersedes = item.supersedes.lower() if item.supersedes is not None else None
    sent = item.timestamp
    client_ts = sent if sent is None or isinstance(sent, str) else format_ts(sent)
    caused_by = _causes(item)
    scope_id = item.scope_id.lower() if item.scope_id is not None else None
    body: list[Any] = [
        item.agent,
        item.event,
        data,
        parent_id if parent_index is None else ["$index", parent_index],
        item.session_id,
        metadata,
        supersedes,
        item.importance,
        item.idempotency_key,
        event_id,
        client_ts,
    ]
    if caused_by or scope_id is not None:  # absent from older bodies: their fingerprints hold
        body.append([list(caused_by), scope_id])
    fingerprint = hashlib.sha256(
        orjson.dumps(body, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    ).hexdigest()
    return PreparedEvent(
        agent=item.agent,
        event=item.event,
        data=data,
        parent_id=parent_id,
        session_id=item.session_id,
        metadata=metadata,
        supersedes=supersedes,
        # -0.0 as 0.0: SQLite reads a stored -0.0 back as 0.0, so both stores show the same
        importance=item.importance + 0.0 if item.importance is not None else None,
        idempotency_key=item.idempotency_key,
        event_id=event_id,
        timestamp=client_ts or received_at,
        fast_ok=fast,
        fingerprint=fingerprint,
        parent_index=parent_index,
        caused_by=caused_by,
        scope_id=scope_id,
    )
