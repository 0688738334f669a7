"""Turn any value an agent logs into JSON without ever dropping the event.

:func:`snapshot` is what ``log()`` uses; :func:`jsonable` and :func:`cut_string` are public for
integrations that shape values themselves. The conversion rules and the fast/slow paths are
described in docs/design/client-sanitize.md."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import hashlib
import uuid
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final

import orjson

__all__ = [
    "DEFAULT_MAX_STRING_CHARS",
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "cut_string",
    "jsonable",
    "snapshot",
    "valid_text",
]

#: Default limit of one string value in ``data`` (characters).
DEFAULT_MAX_STRING_CHARS: Final = 65_536

#: Containers nested deeper than this are replaced by a marker (orjson's own limit is 254).
MAX_DEPTH: Final = 200

#: Integers beyond ±(2**53 - 1) do not survive JSON as numbers (RFC 7493 I-JSON section 2.2,
#: RFC 8785): the server refuses them, so they are sent as their decimal string instead.
MAX_SAFE_INTEGER: Final = 2**53 - 1
# OPT_STRICT_INTEGER makes the fast path fail on such an integer; the slow path converts it.
_OPTIONS: Final = (
    orjson.OPT_NON_STR_KEYS
    | orjson.OPT_SERIALIZE_NUMPY
    | orjson.OPT_UTC_Z
    | orjson.OPT_STRICT_INTEGER
)


def _bytes_marker(value: bytes | bytearray | memoryview) -> dict[str, Any]:
    raw = bytes(value)
    return {"$bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<unrepresentable {type(value).__qualname__}>"


def _default(value: Any) -> Any:
    """orjson ``default``: one conversion step for a type orjson does not know."""
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_marker(value)
    if isinstance(value, set | frozenset):
        return _sorted_list(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return dict(value)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and not isinstance(value, type):
        try:
            return model_dump()
        except Exception:
            return _safe_repr(value)
    tolist = getattr(value, "tolist", None)  # numpy arrays/scalars orjson did not take
    if callable(tolist) and not isinstance(value, type):
        try:
            return tolist()
        except Exception:
            return _safe_repr(value)
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return _safe_repr(value)


def _sorted_list(value: set[Any] | frozenset[Any]) -> list[Any]:
    try:
        return sorted(value)
    except TypeError:
        return list(value)


def valid_text(value: str) -> str:
    """``value`` with each lone surrogate (``"\\ud83d"``: half an emoji, as JavaScript's
    ``JSON.stringify`` writes a cut string) replaced by U+FFFD, so it can be UTF-8 encoded;
    surrogate pairs are joined. Unchanged (the same object) when it is valid already."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def cut_string(value: str, max_chars: int) -> str:
    """``value`` itself, or its first ``max_chars`` characters plus ``…[cut, N chars]``; lone
    surrogates replaced (:func:`valid_text`)."""
    value = valid_text(value)
    if len(value) <= max_chars:
        return value
    return f"{value[:max_chars]}…[cut, {len(value)} chars]"


def jsonable(value: Any, *, max_string_chars: int = DEFAULT_MAX_STRING_CHARS) -> Any:
    """Convert any value to plain JSON types (dict/list/str/int/float/bool/None).

    The slow, complete path: cycle and depth markers, non-string keys stringified, long
    strings cut. :func:`snapshot` uses it only when the fast path cannot be used.
    """
    active: set[int] = set()

    def walk(obj: Any, depth: int) -> Any:
        if obj is None or isinstance(obj, bool | float):
            return obj
        if isinstance(obj, int):
            return obj if -MAX_SAFE_INTEGER <= obj <= MAX_SAFE_INTEGER else str(obj)
        if isinstance(obj, str):
            return cut_string(obj, max_string_chars)
        if isinstance(obj, dt.datetime | dt.date | dt.time):
            return obj.isoformat()
        if isinstance(obj, uuid.UUID):
            return str(obj)
        if isinstance(obj, enum.Enum):
            return walk(obj.value, depth)
        if depth > MAX_DEPTH:
            return {"$depth": type(obj).__qualname__}
        is_container = isinstance(obj, Mapping | list | tuple | set | frozenset) or (
            dataclasses.is_dataclass(obj) and not isinstance(obj, type)
        )
        if is_container:
            if id(obj) in active:
                return {"$cycle": type(obj).__qualname__}
            active.add(id(obj))
            try:
                if isinstance(obj, Mapping):
                    return {_key(k): walk(v, depth + 1) for k, v in obj.items()}
                if isinstance(obj, list | tuple):
                    return [walk(v, depth + 1) for v in obj]
                if isinstance(obj, set | frozenset):
                    return [walk(v, depth + 1) for v in _sorted_list(obj)]
                return {
                    f.name: walk(getattr(obj, f.name, None), depth + 1)
                    for f in dataclasses.fields(obj)
                }
            finally:
                active.discard(id(obj))
        converted = _default(obj)
        if isinstance(converted, str):
            return cut_string(converted, max_string_chars)
        if id(obj) in active:
            return {"$cycle": type(obj).__qualname__}
        active.add(id(obj))
        try:
            return walk(converted, depth + 1)
        finally:
            active.discard(id(obj))

    return walk(value, 0)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return valid_text(key)
    if isinstance(key, enum.Enum):
        return str(key.value)
    if isinstance(key, dt.datetime | dt.date | dt.time):
        return key.isoformat()
    return (
        str(key)
        if isinstance(key, int | float | bool | uuid.UUID) or key is None
        else (_safe_repr(key))
    )


def snapshot(value: Any, *, max_string_chars: int = DEFAULT_MAX_STRING_CHARS) -> bytes:
    """Serialize ``value`` to JSON bytes by the rules of the sanitizer; never raises.

    Args:
        value: anything the agent passed as ``data`` / ``metadata``.
        max_string_chars: longest string kept whole (characters); longer ones are cut.

    Returns:
        UTF-8 JSON bytes (an independent copy of the value at call time).
    """
    try:
        out = orjson.dumps(value, default=_default, option=_OPTIONS)
    except (TypeError, ValueError, RecursionError):
        out = b""
    if out and len(out) <= max_string_chars:
        # orjson hands back a bytes object with a >= 4 KiB buffer; a right-sized copy keeps a
        # full queue of small events ~10x smaller (measured: 412 MB vs 32 MB per 100k).
        return memoryview(out).tobytes()
    if out:
        # Long output: it may hold an oversize string; re-walk the plain JSON to cut it.
        plain = orjson.loads(out)
        cut = orjson.dumps(jsonable(plain, max_string_chars=max_string_chars))
        return memoryview(cut).tobytes()
    try:
        walked = orjson.dumps(jsonable(value, max_string_chars=max_string_chars), option=_OPTIONS)
        return memoryview(walked).tobytes()
    except Exception:
        return orjson.dumps({"$unserializable": _safe_repr(value)[:max_string_chars]})
