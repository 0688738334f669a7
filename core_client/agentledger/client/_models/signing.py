"""Answers of the signed-head reads: ``signing_keys()``, ``sign_head()``, ``signed_heads()``,
``rotate_signing_key()`` (wire: ``/v1/signing-keys``, ``/v1/signed-heads``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentledger.client._models._json import value_or

__all__ = ["KeyRotation", "SignedHead", "SigningKey"]


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A public Ed25519 key of the server: ``public_key`` is the base64 raw key, ``fingerprint``
    the SHA-256 hex of it (compare it out of band); retired keys keep verifying old heads."""

    key_id: str
    public_key: str
    fingerprint: str
    algorithm: str = "ed25519"
    created_at: str | None = None
    retired_at: str | None = None
    active: bool = False

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> SigningKey:
        return cls(
            key_id=str(obj.get("key_id", "")),
            public_key=str(obj.get("public_key", "")),
            fingerprint=str(obj.get("fingerprint", "")),
            algorithm=str(value_or(obj, "algorithm", "ed25519")),
            created_at=obj.get("created_at"),
            retired_at=obj.get("retired_at"),
            active=bool(obj.get("active", False)),
        )


@dataclass(frozen=True, slots=True)
class SignedHead:
    """An agent's ``(sequence_no, chain_hash)`` signed at ``signed_at`` by ``key_id``;
    :meth:`as_wire` gives the object the signature covers (plus ``signature``)."""

    agent: str
    sequence_no: int
    chain_hash: str
    signed_at: str
    key_id: str
    hmac_links: bool
    signature: str

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> SignedHead:
        return cls(
            agent=str(obj.get("agent", "")),
            sequence_no=int(value_or(obj, "sequence_no", 0)),
            chain_hash=str(obj.get("chain_hash", "")),
            signed_at=str(obj.get("signed_at", "")),
            key_id=str(obj.get("key_id", "")),
            hmac_links=bool(obj.get("hmac_links", False)),
            signature=str(obj.get("signature", "")),
        )

    def as_wire(self) -> dict[str, Any]:
        """The head as the server sent it (what a published head file holds)."""
        return {
            "agent": self.agent,
            "sequence_no": self.sequence_no,
            "chain_hash": self.chain_hash,
            "signed_at": self.signed_at,
            "key_id": self.key_id,
            "hmac_links": self.hmac_links,
            "signature": self.signature,
        }


@dataclass(frozen=True, slots=True)
class KeyRotation:
    """``rotate_signing_key()``: the new active key id, the one retired, and every key."""

    key_id: str
    retired_key_id: str
    keys: list[SigningKey]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> KeyRotation:
        return cls(
            key_id=str(obj.get("key_id", "")),
            retired_key_id=str(obj.get("retired_key_id", "")),
            keys=[SigningKey.from_wire(k) for k in obj.get("keys") or [] if isinstance(k, dict)],
        )
