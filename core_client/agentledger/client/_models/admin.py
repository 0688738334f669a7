"""Answers of key management (``create_key()``, ``list_keys()``) and ``import_events()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentledger.client._models._json import value_or

__all__ = ["ApiKey", "ImportResult"]


@dataclass(frozen=True, slots=True)
class ImportResult:
    """``import_events()`` totals over every chunk sent (wire: ``POST /v1/events/import``).

    ``errors`` holds ``{"index": i, "detail": ...}`` with ``i`` counted over the whole input.
    """

    imported: int = 0
    duplicates: int = 0
    failed: int = 0
    parents_dropped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def plus(self, obj: dict[str, Any], offset: int) -> ImportResult:
        """This result plus one chunk's answer (``offset`` = index of the chunk's first line)."""
        errors = [
            {**e, "index": int(e.get("index", 0)) + offset}
            for e in obj.get("errors") or []
            if isinstance(e, dict)
        ]
        return ImportResult(
            imported=self.imported + int(value_or(obj, "imported", 0)),
            duplicates=self.duplicates + int(value_or(obj, "duplicates", 0)),
            failed=self.failed + int(value_or(obj, "failed", 0)),
            parents_dropped=self.parents_dropped + int(value_or(obj, "parents_dropped", 0)),
            errors=[*self.errors, *errors],
        )


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key; ``key`` (the secret) is set only in the answer that created it."""

    key_id: str
    name: str | None
    agent: str | None
    scope: str | None
    created_at: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None
    prefix: str | None = None
    key: str | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ApiKey:
        return cls(
            key_id=str(obj.get("key_id", obj.get("id", ""))),
            name=obj.get("name"),
            agent=obj.get("agent"),
            scope=obj.get("scope"),
            created_at=obj.get("created_at"),
            expires_at=obj.get("expires_at"),
            revoked_at=obj.get("revoked_at"),
            prefix=obj.get("prefix"),
            key=obj.get("key") or obj.get("api_key"),
        )
