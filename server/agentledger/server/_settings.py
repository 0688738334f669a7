"""Server configuration: one frozen dataclass, environment variables as defaults.

Each environment variable is read once by :meth:`Settings.from_env`; command-line options and
constructor arguments override it (style.md point 14).

| variable | default | meaning |
|---|---|---|
| ``AGENTLEDGER_DB`` | ``agentledger.db`` | SQLite file path (or ``postgresql://`` URL, own issue) |
| ``AGENTLEDGER_DEV_KEY`` | unset | a full-access key accepted only on a loopback bind |
| ``AGENTLEDGER_CHAIN_KEY`` | unset | HMAC-SHA256 key for chain links (plain SHA-256 when unset) |
| ``AGENTLEDGER_REDACT_PATTERNS`` | empty | comma list of ``email,phone,card,iban,ipv4`` |
| ``AGENTLEDGER_MAX_BODY_BYTES`` | ``16777216`` | request body limit in bytes (413 above it) |
| ``AGENTLEDGER_MAX_JSON_DEPTH`` | ``64`` | nesting limit of ``data``/``metadata`` (422 above it) |
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field

from agentledger.protocol.redaction import PATTERN_NAMES

__all__ = ["Settings", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only listens on the loopback interface."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _env_patterns() -> tuple[str, ...]:
    raw = os.environ.get("AGENTLEDGER_REDACT_PATTERNS", "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


@dataclass(frozen=True)
class Settings:
    """Everything the server needs to run.

    Attributes:
        db: SQLite file path, ``:memory:``-free (the store needs a file for WAL), or a
            ``sqlite:///`` / ``postgresql://`` URL.
        host: the address uvicorn binds; decides whether the dev key is honoured.
        port: TCP port.
        dev_key: a full-access key accepted only while ``host`` is loopback (wire contract).
        chain_key: when set, chain links are HMAC-SHA256 with this key instead of SHA-256.
        redact_patterns: optional redaction patterns applied at write time, before the checksum
            (names from ``agentledger.protocol.redaction.PATTERN_NAMES``).
        max_body_bytes: request bodies above this size get 413.
        max_json_depth: ``data``/``metadata`` nested deeper than this get 422.
        max_batch_items: batch size limit (422 above it).
    """

    db: str = "agentledger.db"
    host: str = "127.0.0.1"
    port: int = 8765
    dev_key: str | None = None
    chain_key: str | None = None
    redact_patterns: tuple[str, ...] = field(default_factory=tuple)
    max_body_bytes: int = 16 * 1024 * 1024
    max_json_depth: int = 64
    max_batch_items: int = 500

    def __post_init__(self) -> None:
        unknown = set(self.redact_patterns) - PATTERN_NAMES
        if unknown:
            raise ValueError(
                f"unknown redaction pattern(s) {sorted(unknown)}; known: {sorted(PATTERN_NAMES)}"
            )
        if self.max_json_depth < 2 or self.max_json_depth > 512:
            raise ValueError("max_json_depth must be between 2 and 512")

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from ``AGENTLEDGER_*`` variables, with non-``None`` ``overrides`` on top.

        Raises:
            ValueError: an unknown redaction pattern or a non-integer size variable.
        """
        values: dict[str, object] = {
            "db": os.environ.get("AGENTLEDGER_DB", "agentledger.db"),
            "dev_key": os.environ.get("AGENTLEDGER_DEV_KEY") or None,
            "chain_key": os.environ.get("AGENTLEDGER_CHAIN_KEY") or None,
            "redact_patterns": _env_patterns(),
            "max_body_bytes": int(os.environ.get("AGENTLEDGER_MAX_BODY_BYTES", 16 * 1024 * 1024)),
            "max_json_depth": int(os.environ.get("AGENTLEDGER_MAX_JSON_DEPTH", 64)),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    @property
    def dev_key_active(self) -> bool:
        """The dev key is honoured only on a loopback bind (wire contract, General)."""
        return bool(self.dev_key) and is_loopback(self.host)
