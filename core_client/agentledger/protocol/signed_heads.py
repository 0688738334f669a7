"""The bytes a signed chain head signs, shared by the server that signs and the evidence
verifier that checks (neither imports the other).

Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "BUNDLE_DOMAIN",
    "HEAD_DOMAIN",
    "HEAD_FIELDS",
    "head_payload",
    "key_fingerprint",
    "key_id",
    "manifest_payload",
]

#: Prefix of every signed head's signed bytes (a signature over a head is never one over
#: anything else).
HEAD_DOMAIN = b"agentledger signed chain head v1\n"
#: Prefix of a bundle manifest's signed bytes.
BUNDLE_DOMAIN = b"agentledger evidence bundle v1\n"
#: The fields a head signature covers, in this order of the JSON object (sorted keys).
HEAD_FIELDS = ("agent", "chain_hash", "hmac_links", "key_id", "sequence_no", "signed_at")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def head_payload(head: Mapping[str, Any]) -> bytes:
    """The signed bytes of a head: :data:`HEAD_DOMAIN` + sorted-key compact JSON of
    :data:`HEAD_FIELDS`.

    Raises:
        KeyError: a field is missing.
    """
    return HEAD_DOMAIN + _canonical({name: head[name] for name in HEAD_FIELDS})


def manifest_payload(manifest: Mapping[str, Any]) -> bytes:
    """The signed bytes of a bundle manifest (every field but ``signature``)."""
    return BUNDLE_DOMAIN + _canonical({k: v for k, v in manifest.items() if k != "signature"})


def key_fingerprint(public_key: bytes) -> str:
    """SHA-256 hex of a raw 32-byte Ed25519 public key."""
    return hashlib.sha256(public_key).hexdigest()


def key_id(public_key: bytes) -> str:
    """The short id a signature names its key by: ``ed25519:`` + 16 hex of the fingerprint."""
    return "ed25519:" + key_fingerprint(public_key)[:16]
