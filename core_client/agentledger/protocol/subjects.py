"""How erasure recognises a subject's value inside an identifier (a session id, a case's source
session): as a whole token, bounded by the ends of the identifier or by characters that are
neither letters nor digits. ``chat-alice@example.com`` names ``alice@example.com``;
``sess-u-23`` does not name ``u-2``. Shared by the server's forget and the case files' forget.
"""

from __future__ import annotations

__all__ = ["names_value"]


def names_value(identifier: str, value: str) -> bool:
    """Whether ``identifier`` contains ``value`` as a whole token."""
    if not value:
        return False
    start = identifier.find(value)
    while start != -1:
        end = start + len(value)
        before = identifier[start - 1] if start else ""
        after = identifier[end] if end < len(identifier) else ""
        if not before.isalnum() and not after.isalnum():
            return True
        start = identifier.find(value, start + 1)
    return False
