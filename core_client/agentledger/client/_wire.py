"""Non-I/O wire helpers shared by both twins and the background sender.

Event items travel from ``log()`` to the sender as :data:`Item` tuples (cheap to build in the
caller's thread) and become one JSON line each (:func:`item_line`) just before they are sent
or spilled. A batch body is the lines joined by commas, so spilled lines are resent byte for
byte without parsing.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from agentledger.client._redaction import ClientRedactor

__all__ = [
    "BatchOutcome",
    "Item",
    "batch_body",
    "iso_from_ns",
    "item_line",
    "parse_batch_response",
]


class Item(NamedTuple):
    """One logged event between ``log()`` and the sender (``data``/``metadata`` are JSON)."""

    event_id: str
    agent: str
    event: str
    data: bytes
    time_ns: int
    session_id: str | None
    parent_id: str | None
    metadata: bytes | None
    idempotency_key: str | None
    supersedes: str | None
    importance: float | None
    #: further causes as ``(event_id, kind or None)``; ``None`` when there are none
    caused_by: tuple[tuple[str, str | None], ...] | None = None
    scope_id: str | None = None


@functools.lru_cache(maxsize=8)
def _second(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def iso_from_ns(time_ns: int) -> str:
    """ISO-8601 UTC with microseconds and a ``Z`` suffix, from ``time.time_ns()``."""
    seconds, rest = divmod(time_ns, 1_000_000_000)
    return f"{_second(seconds)}.{rest // 1000:06d}Z"


def item_line(item: Item, redactor: ClientRedactor | None) -> bytes:
    """The wire JSON object of one event (redacted when ``redactor`` is given)."""
    data: Any
    metadata: Any
    if redactor is None:
        data = orjson.Fragment(item.data)
        metadata = orjson.Fragment(item.metadata) if item.metadata is not None else None
    else:
        data = redactor.value(item.data)
        metadata = redactor.value(item.metadata) if item.metadata is not None else None
    obj: dict[str, Any] = {
        "event_id": item.event_id,
        "agent": item.agent,
        "event": item.event,
        "data": data,
        "timestamp": iso_from_ns(item.time_ns),
    }
    if item.session_id is not None:
        obj["session_id"] = item.session_id
    if item.parent_id is not None:
        obj["parent_id"] = item.parent_id
    if item.caused_by:
        obj["caused_by"] = [
            cause if kind is None else {"event_id": cause, "kind": kind}
            for cause, kind in item.caused_by
        ]
    if item.scope_id is not None:
        obj["scope_id"] = item.scope_id
    if metadata is not None:
        obj["metadata"] = metadata
    if item.idempotency_key is not None:
        obj["idempotency_key"] = item.idempotency_key
    if item.supersedes is not None:
        obj["supersedes"] = item.supersedes
    if item.importance is not None:
        obj["importance"] = item.importance
    return memoryview(orjson.dumps(obj)).tobytes()  # right-sized (orjson over-allocates)


def batch_body(lines: Sequence[bytes]) -> bytes:
    """``{"events":[...]}`` from ready JSON lines (wire: ``POST /v1/events/batch``)."""
    return b'{"events":[' + b",".join(lines) + b"]}"


@dataclass(frozen=True)
class BatchOutcome:
    """The parsed answer of one batch: ``ok`` and ``duplicate`` counts, per-item failures
    as ``(index, status, error)``."""

    ok: int
    duplicates: int
    failures: list[tuple[int, int | None, str]]


def parse_batch_response(body: Any, sent: int) -> BatchOutcome | None:
    """Parse ``{written, failed, results:[{ok, event_id, sequence_no, duplicate, error?}]}``.

    ``None`` when the body is not such an answer for ``sent`` events (a proxy's or login
    page's 200, say): nothing is known to be stored. An answer without ``results`` whose
    ``written`` + ``duplicates`` equal ``sent`` (and nothing ``failed``) counts every line
    as written. ``results`` shorter than the batch is a ``Prefer: return=minimal`` answer:
    the failed items only, each with its ``index``, and counts that cover the rest. It is
    told by its shape, not by the ``Preference-Applied`` header, which a proxy may drop
    (when every item failed, both forms are the same list).
    """
    if not isinstance(body, dict):
        return None
    results = body.get("results")
    if not isinstance(results, list):
        written, dups, failed = body.get("written"), body.get("duplicates", 0), body.get("failed")
        if (
            isinstance(written, int)
            and isinstance(dups, int)
            and failed == 0
            and written + dups == sent
        ):
            return BatchOutcome(ok=sent, duplicates=dups, failures=[])
        return None
    if len(results) != sent:
        return _parse_minimal(body, sent)
    ok = dups = 0
    failures: list[tuple[int, int | None, str]] = []
    for index, result in enumerate(body["results"]):
        if not isinstance(result, dict):
            continue
        if result.get("ok", True):
            ok += 1
            if result.get("duplicate"):
                dups += 1
        else:
            failures.append(_failure(index, result))
    return BatchOutcome(ok=ok, duplicates=dups, failures=failures)


def _failure(index: int, result: dict[str, Any]) -> tuple[int, int | None, str]:
    """``(index, status or None, reason)`` of a failed item's result."""
    status = result.get("status")
    return (
        index,
        status if isinstance(status, int) else None,
        str(result.get("error") or "rejected"),
    )


def _parse_minimal(body: dict[str, Any], sent: int) -> BatchOutcome | None:
    """A ``return=minimal`` answer: counts adding up to ``sent`` and one entry per failure."""
    written, dups, failed = body.get("written"), body.get("duplicates"), body.get("failed")
    results = body.get("results")
    if not (
        type(written) is int
        and type(dups) is int
        and type(failed) is int
        and min(written, dups, failed) >= 0
        and written + dups + failed == sent
        and isinstance(results, list)
        and len(results) == failed
    ):
        return None
    failures: list[tuple[int, int | None, str]] = []
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        if type(index) is not int or not 0 <= index < sent or result.get("ok", False):
            return None
        failures.append(_failure(index, result))
    if len({index for index, _, _ in failures}) != failed:
        return None
    return BatchOutcome(ok=sent - failed, duplicates=dups, failures=sorted(failures))
