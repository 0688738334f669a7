"""Client-side use of the shared :func:`~agentledger.protocol.redaction.redact` (same rules as the
server), with a byte-level pre-check so events without secret-looking keys skip the walk.

The pre-check is exact for key rules: a key that names a secret contains every word of that
secret name (the table compares words), so if no secret name's last word occurs in the
lower-cased JSON bytes, no key can match and the bytes go out unchanged. Patterns (email,
card...) look at every string value, so with patterns the walk always runs.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import orjson

from agentledger.protocol.redaction import SECRET_KEYS, redact

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
        words = {name.split("_")[-1].lower().encode() for name in SECRET_KEYS}
        # "apikey" contains "key": keep only words that contain no other word
        stems = sorted(w for w in words if not any(o != w and o in w for o in words))
        self._stem_re = re.compile(b"|".join(re.escape(w) for w in stems))

    def might_hold_secrets(self, raw: bytes) -> bool:
        """Whether the walk is needed for these JSON bytes (see the module docstring)."""
        if self._patterns:
            return True
        return self._stem_re.search(raw.lower()) is not None  # ASCII lower-casing, as keys

    def value(self, raw: bytes) -> Any:
        """The value to embed in the wire line: the bytes as they are, or redacted."""
        if not self.might_hold_secrets(raw):
            return orjson.Fragment(raw)
        return redact(orjson.loads(raw), patterns=self._patterns)
