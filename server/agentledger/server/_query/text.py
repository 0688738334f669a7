"""Text helpers shared by search, embeddings and memory context (no SQL).

* :func:`query_words` turns user text into search words: Unicode letters and digits only, so FTS
  syntax (quotes, ``*``, ``NEAR``, ``-``, parentheses, column filters) in user text is never
  interpreted, only searched for (query syntax characters never cause an error).
* :func:`event_text` is the text of an event that is indexed and embedded: the event type and
  every string value under ``data`` in document order (the same text the SQLite FTS5 index
  computes with ``json_tree``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from agentledger.server._search.base import string_values

__all__ = ["MAX_QUERY_WORDS", "event_text", "query_words", "summarize"]

#: Words kept from one query (the rest are ignored): bounds the cost of a pasted paragraph.
MAX_QUERY_WORDS = 32

#: Letters and digits; ``_`` separates words as in FTS5's ``unicode61`` tokenizer.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def query_words(text: str) -> list[str]:
    """Distinct lowercase words of ``text`` in order, at most :data:`MAX_QUERY_WORDS`."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word not in seen:
            seen[word] = None
            if len(seen) == MAX_QUERY_WORDS:
                break
    return list(seen)


def event_text(event: str, data: Any, *, max_chars: int = 8000) -> str:
    """The searchable text of an event: its type and the string values under ``data``.

    Args:
        event: the event type.
        data: the event's ``data`` object.
        max_chars: the text is cut to this many characters (embedding inputs are bounded).
    """
    text = " ".join([event, *string_values(data)])
    return text[:max_chars]


def summarize(event: dict[str, Any], *, max_chars: int = 300) -> str:
    """One line describing an event for a prompt: ``type [tool]: key=value ...``.

    ``event`` is a wire-shape event dict; the result is at most ``max_chars`` characters.
    """
    data = event.get("data") or {}
    label = str(event.get("event", ""))
    name = data.get("tool") or data.get("name")
    if isinstance(name, str):
        label += f" {name}"
    parts = []
    for key, value in data.items():
        if key in ("tool", "name"):
            continue
        rendered = value if isinstance(value, str) else _compact(value)
        parts.append(f"{key}={rendered}")
    line = f"{label}: {'; '.join(parts)}" if parts else label
    if len(line) > max_chars:
        line = line[: max_chars - 1] + "…"
    return line


def _compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)
