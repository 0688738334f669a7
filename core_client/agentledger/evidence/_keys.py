"""Public keys given to the verifier: raw bytes, hex, base64, PEM, or a file holding one of
them or the JSON of ``GET /v1/signing-keys``."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)

from agentledger.evidence._errors import BundleError
from agentledger.protocol.signed_heads import key_id

__all__ = ["PublicKeyInput", "load_public_keys"]

#: What ``public_key=`` accepts: one key or several.
PublicKeyInput = (
    bytes | str | Path | Ed25519PublicKey | Iterable[bytes | str | Path | Ed25519PublicKey]
)


def _from_text(text: str) -> list[bytes]:
    text = text.strip()
    if text.startswith("-----BEGIN"):
        key = load_pem_public_key(text.encode())
        if not isinstance(key, Ed25519PublicKey):
            raise BundleError("the PEM public key is not an Ed25519 key")
        return [key.public_bytes(Encoding.Raw, PublicFormat.Raw)]
    if text.startswith("{"):
        doc: Any = orjson.loads(text)
        return [base64.b64decode(item["public_key"]) for item in doc.get("keys", [])]
    if len(text) == 64:
        try:
            return [bytes.fromhex(text)]
        except ValueError:
            pass
    try:
        return [base64.b64decode(text, validate=True)]
    except (binascii.Error, ValueError):
        raise BundleError(
            "public key: expected 64 hex digits, base64, PEM, or a file holding one"
        ) from None


def _one(value: bytes | str | Path | Ed25519PublicKey) -> list[bytes]:
    if isinstance(value, Ed25519PublicKey):
        return [value.public_bytes(Encoding.Raw, PublicFormat.Raw)]
    if isinstance(value, bytes):
        return [value]
    if isinstance(value, Path) or (len(value) < 4096 and Path(value).is_file()):
        try:
            return _from_text(Path(value).read_text())
        except (OSError, UnicodeDecodeError, orjson.JSONDecodeError, KeyError) as error:
            raise BundleError(f"public key file {value}: unreadable ({error})") from None
    return _from_text(value)


def load_public_keys(value: PublicKeyInput) -> dict[str, Ed25519PublicKey]:
    """The given keys by key id.

    Raises:
        BundleError: a value that is no Ed25519 public key.
    """
    values = [value] if isinstance(value, bytes | str | Path | Ed25519PublicKey) else list(value)
    keys: dict[str, Ed25519PublicKey] = {}
    for item in values:
        for raw in _one(item):
            if len(raw) != 32:
                raise BundleError(f"public key: {len(raw)} bytes, an Ed25519 key has 32")
            keys[key_id(raw)] = Ed25519PublicKey.from_public_bytes(raw)
    if not keys:
        raise BundleError("no public key given")
    return keys
