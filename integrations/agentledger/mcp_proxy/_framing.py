"""Framing and parsing for the proxy's logging thread: newline-terminated JSON-RPC lines,
exact ids, and what a line too long to parse still tells (``docs/design/mcp.md``)."""

from __future__ import annotations

import decimal
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "NOT_JSON",
    "Framer",
    "LongLine",
    "exact_loads",
    "id_key",
    "may_be_rounded",
    "scan_long_line",
    "server_info",
    "storable",
]

_SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"
#: Bytes kept of the start and of the end of a line too long to parse (to find its id).
_EDGE_BYTES: Final = 65536


# -- framing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LongLine:
    """A line that was forwarded but is too long to parse: its size and its edges."""

    size: int  # bytes, without the newline
    head: bytes  # the first _EDGE_BYTES bytes
    tail: bytes  # the last _EDGE_BYTES bytes


class LongLineEdges:
    """Accumulates the size, head and tail of a line that is too long (never all of it)."""

    def __init__(self) -> None:
        self.size = 0
        self.head = bytearray()
        self.tail = b""

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if len(self.head) < _EDGE_BYTES:
            self.head += data[: _EDGE_BYTES - len(self.head)]
        self.tail = (self.tail + data[-_EDGE_BYTES:])[-_EDGE_BYTES:]

    def done(self) -> LongLine:
        return LongLine(self.size, bytes(self.head), self.tail)


class Framer:
    """Splits one direction's byte stream into newline-terminated lines (logging side)."""

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._buf = bytearray()
        self._cut = False  # inside a line cut by lost bytes: dropped up to its newline
        self._long: LongLineEdges | None = None  # inside a line longer than the cap
        self.skipped = 0
        self.ended = False

    def lines(self, chunk: bytes, gap: bool) -> list[bytes | LongLine]:
        """The lines (without the newline) ending in ``chunk``, in order; a line longer than
        the cap comes as a :class:`LongLine`.

        Args:
            chunk: the next bytes of the stream.
            gap: bytes were lost just before ``chunk``: the line they cut is dropped.
        """
        if gap:
            self._buf.clear()
            self._long = None
            self._cut = True
        out: list[bytes | LongLine] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self._cut:
                self._cut = False
            elif self._long is None and not self._buf and end - start <= self._max:
                out.append(chunk[start:end])  # the common case: a whole line in one chunk
            else:
                self._extend(chunk[start:end])
                out.append(self._pop())
            start = end + 1
        if start < len(chunk):
            self._extend(chunk[start:])
        return out

    def end(self) -> list[bytes | LongLine]:
        """At the end of the stream: its last line when it lacks a newline (once)."""
        if self.ended:
            return []
        self.ended = True
        if self._cut:
            self._cut = False
            return []
        if self._long is None and not self._buf:
            return []
        return [self._pop()]

    def _extend(self, data: bytes) -> None:
        if self._cut:
            return
        if self._long is not None:
            self._long.add(data)
        elif len(self._buf) + len(data) <= self._max:
            self._buf += data
        else:
            self._long = LongLineEdges()
            self._long.add(bytes(self._buf))
            self._buf.clear()
            self._long.add(data)

    def _pop(self) -> bytes | LongLine:
        if self._long is not None:
            edges, self._long = self._long, None
            self.skipped += 1
            return edges.done()
        line = bytes(self._buf)
        self._buf.clear()
        return line


_SPACE = rb"[ \t\r\n]*"
_SCALAR = rb'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null'
_OPEN_OBJECT: Final = re.compile(_SPACE + rb"\{")
_MEMBER_NAME: Final = re.compile(_SPACE + rb'"((?:[^"\\]|\\.)*)"' + _SPACE + rb":" + _SPACE)
_SCALAR_MEMBER: Final = re.compile(rb"(" + _SCALAR + rb")" + _SPACE + rb"([,}])")
# For valid JSON, a match is the last member of the top-level object: the quote before
# ``id`` follows ``{`` or ``,`` (so it is not escaped) and cannot close a string (a bare
# ``id`` would follow), and only one ``}`` stands between the value and the line's end.
_LAST_ID: Final = re.compile(
    rb"[{,]" + _SPACE + rb'"id"' + _SPACE + rb":" + _SPACE + rb"(" + _SCALAR + rb")"
    + _SPACE + rb"\}" + _SPACE + rb"\Z"
)  # fmt: skip


def scan_long_line(line: LongLine) -> tuple[str, bytes | None]:
    """What a line too long to parse is, from its edges: ``("request" | "response" |
    "unknown", the id's JSON text or None)``.

    The members at the start of the top-level object are read while their values are
    scalars (``{"jsonrpc":"2.0","id":7,"result":{...``); ``method`` or ``params`` make it a
    request, ``result`` or ``error`` a response. An id not among them is looked for as the
    object's last member (``...},"id":7}``).
    """
    head = line.head
    kind = "unknown"
    ident: bytes | None = None
    opened = _OPEN_OBJECT.match(head)
    pos = opened.end() if opened else len(head)
    while (member := _MEMBER_NAME.match(head, pos)) is not None:
        name = member.group(1)
        if name in (b"method", b"params"):
            return "request", ident
        if name in (b"result", b"error"):
            kind = "response"
        value = _SCALAR_MEMBER.match(head, member.end())
        if value is None:  # an object or array, or a value the head cuts
            break
        if name == b"id":
            ident = value.group(1)
        if value.group(2) == b"}":
            break
        pos = value.end()
    if ident is None and kind == "response":
        last = _LAST_ID.search(line.tail)
        if last is not None:
            ident = last.group(1)
    return kind, ident


# -- parsing ---------------------------------------------------------------------------


NOT_JSON: Final = object()


def exact_loads(line: bytes) -> Any:
    """The stdlib parse of ``line`` (numbers exact: ``int``, ``Decimal``), or ``NOT_JSON``."""
    try:
        return json.loads(line, parse_float=decimal.Decimal)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
        return NOT_JSON


def may_be_rounded(message: Any) -> bool:
    """Whether orjson may have rounded an id of ``message`` (a number it made a float)."""
    for element in message if isinstance(message, list) else (message,):
        if isinstance(element, dict):
            if type(element.get("id")) is float:
                return True
            params = element.get("params")
            if isinstance(params, dict) and type(params.get("requestId")) is float:
                return True
    return False


def storable(value: Any) -> Any:
    """A copy of a stdlib-parsed value with its ``Decimal`` fractions as floats (JSON numbers,
    as orjson would have read them). Lone surrogates and integers beyond 2**53 are the ledger
    client's to sanitize (U+FFFD, decimal strings), as for every integration."""
    if isinstance(value, dict):
        return {key: storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable(item) for item in value]
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def id_key(value: Any) -> tuple[str, Any] | None:
    """Hashable key of a JSON-RPC id, ``None`` when invalid.

    Strings by text, numbers by exact value (``1`` and ``1.0`` are one id, ``1`` and ``"1"``
    two; ``Decimal("1.0") == 1`` and their hashes agree).
    """
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return ("number", value)
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return ("number", value)
    if isinstance(value, float) and math.isfinite(value):
        return ("number", value)
    return None


def server_info(result: Any) -> dict[str, Any] | None:
    """``{name, version}`` of the server from a result that carries it, else ``None``: the
    ``initialize`` result's ``serverInfo`` or any result's ``_meta`` stamp (2026-07-28
    protocol, ``server/discover`` included)."""
    if not isinstance(result, dict):
        return None
    info = result.get("serverInfo")
    meta = result.get("_meta")
    if not isinstance(info, dict) and isinstance(meta, dict):
        info = meta.get(_SERVER_INFO_META)
    if not isinstance(info, dict):
        return None
    return {k: info[k] for k in ("name", "version") if k in info} or None
