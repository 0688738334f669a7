"""Client-side use of the shared :func:`~agentledger.protocol.redaction.redact` (same rules as the
server), with a byte-level pre-check so events without secret-looking keys skip the walk.

The pre-check (:func:`~agentledger.protocol.redaction.might_hold_secrets`) is exact: a key (or
header name, or ``key=value`` in a string) that names a secret contains that name's last word,
and every secret shape contains one of the table's triggers; so bytes holding none of them go
out unchanged. Personal data patterns (email, card...) look at every string value, so with them
the walk always runs.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import orjson

from agentledger.protocol.redaction import might_hold_secrets, redact

__all__ = ["ClientRedactor"]


class ClientRedactor:
    """Redacts snapshotted JSON before it leaves the process.

    Args:
        patterns: extra pattern names for :func:`redact` (``email``, ``phone``, ``card``,
            ``iban``, ``ipv4``).

    Raises:
        ValueError: an unknown pattern name.
    """

    def __init__(self, patterns: Collection[str] = ()) -> None:
        self._patterns = tuple(patterns)
        redact({}, patterns=self._patterns)  # validate names now

    def might_hold_secrets(self, raw: bytes) -> bool:
        """Whether the walk is needed for these JSON bytes (see the module docstring)."""
        return bool(self._patterns) or might_hold_secrets(raw)

    def value(self, raw: bytes) -> Any:
        """The value to embed in the wire line: the bytes as they are, or redacted."""
        if not self.might_hold_secrets(raw):
            return orjson.Fragment(raw)
        # freshly parsed, owned here: no copy needed
        return redact(orjson.loads(raw), patterns=self._patterns, in_place=True)
