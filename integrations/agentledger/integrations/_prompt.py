"""The system prompt a model call was made with, and its content hash as a prompt version.

Every integration that logs ``llm_start`` puts the system prompt's text in
``data.system_prompt`` and its hash in ``data.prompt_hash``, so a replay can swap the prompt and
drift and ``at()`` can tell calls made with different prompts apart even when nobody named a
version. Messages come in the integrations' wire shape (``{"role": ..., "content": ...}``,
content a string or a list of parts); nothing here imports a framework.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["SYSTEM_ROLES", "content_text", "prompt_fields", "prompt_hash", "system_prompt"]

#: Roles whose messages make up the system prompt (OpenAI's ``developer`` is its new name).
SYSTEM_ROLES: Final = frozenset({"system", "developer"})


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts
    (``{"type": "text", "text": ...}``, plain strings) joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, (bytes, Mapping)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return ""


def system_prompt(messages: Iterable[Mapping[str, Any]]) -> str | None:
    """The text of the system (and developer) messages, in order, joined by a blank line;
    ``None`` when there is none."""
    texts = [
        content_text(m.get("content"))
        for m in messages
        if isinstance(m, Mapping) and m.get("role") in SYSTEM_ROLES
    ]
    return "\n\n".join(texts) if texts else None


def prompt_hash(text: str) -> str:
    """``sha256:`` and the first 16 hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def prompt_fields(messages: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{"system_prompt": ..., "prompt_hash": ...}`` for an ``llm_start``, or ``{}`` when the
    messages carry no system prompt."""
    text = system_prompt(messages)
    if text is None:
        return {}
    return {"system_prompt": text, "prompt_hash": prompt_hash(text)}
