"""The server's Ed25519 signing keys: one JSON file (mode 0600), generated on first use,
rotated by ``agentledger signing rotate`` (``POST /v1/signing-keys/rotate``); retired keys
keep their public half so old signatures stay verifiable. Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from agentledger.protocol.errors import LedgerError
from agentledger.protocol.signed_heads import key_fingerprint, key_id

__all__ = ["Keyring", "KeyringError", "default_keyring_path"]


class KeyringError(LedgerError, ValueError):
    """The signing-key file cannot be read, is malformed, or is readable by others."""


def default_keyring_path(db: str) -> str:
    """Next to a SQLite file (``<db>.signing-keys.json``); for a PostgreSQL URL, in the
    server user's ``~/.agentledger/`` (never the working directory, where a checkout could
    pick the private key up)."""
    if db.startswith("postgresql"):
        return str(Path.home() / ".agentledger" / "signing-keys.json")
    path = db.removeprefix("sqlite:///") if db.startswith("sqlite:") else db
    return str(Path(path).expanduser()) + ".signing-keys.json"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class _Entry:
    key_id: str
    public_key: bytes
    created_at: str
    retired_at: str | None
    private_key: Ed25519PrivateKey | None


class Keyring:
    """The keys in ``path``; the file is created with a fresh key when missing.

    Raises:
        KeyringError: unreadable, malformed, or group/world-accessible (POSIX).
    """

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._entries: list[_Entry] = [self._fresh()]
        if self.path.exists() or not self._save(exclusive=True):
            self._entries = self._load()  # it existed, or another process created it first
        self._mtime = self.path.stat().st_mtime_ns

    def refresh(self) -> None:
        """Reload the file when another process (a rotation) changed
        it; a stat per call."""
        mtime = self.path.stat().st_mtime_ns
        if mtime != self._mtime:
            self._entries = self._load()
            self._mtime = mtime

    @staticmethod
    def _fresh() -> _Entry:
        private = Ed25519PrivateKey.generate()
        public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return _Entry(key_id(public), public, _now(), None, private)

    def _load(self) -> list[_Entry]:
        if os.name == "posix" and self.path.stat().st_mode & 0o077:
            raise KeyringError(
                f"signing keys {self.path}: readable by others; chmod 600 {self.path}"
            )
        try:
            doc = orjson.loads(self.path.read_bytes())
            entries = []
            for item in doc["keys"]:
                public = base64.b64decode(item["public_key"])
                private = None
                if item.get("private_key"):
                    private = Ed25519PrivateKey.from_private_bytes(
                        base64.b64decode(item["private_key"])
                    )
                entries.append(
                    _Entry(
                        key_id(public), public, item["created_at"], item.get("retired_at"), private
                    )
                )
        except (OSError, KeyError, TypeError, ValueError) as error:
            raise KeyringError(f"signing keys {self.path}: unreadable ({error})") from None
        if not entries or entries[-1].private_key is None or entries[-1].retired_at:
            raise KeyringError(f"signing keys {self.path}: no active key (the last one)")
        return entries

    def _save(self, *, exclusive: bool = False) -> bool:
        """Write the file (temporary file, then renamed); ``exclusive``: only when no file
        exists yet (a hard link, atomic), ``False`` when another process was first."""
        keys: list[dict[str, Any]] = []
        for entry in self._entries:
            item: dict[str, Any] = {
                "key_id": entry.key_id,
                "public_key": _b64(entry.public_key),
                "created_at": entry.created_at,
                "retired_at": entry.retired_at,
            }
            if entry.private_key is not None:
                item["private_key"] = _b64(entry.private_key.private_bytes_raw())
            keys.append(item)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".signing-keys-")
        try:
            os.chmod(tmp, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(orjson.dumps({"keys": keys}, option=orjson.OPT_INDENT_2))
            if not exclusive:
                os.replace(tmp, self.path)
                return True
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return False
            finally:
                Path(tmp).unlink(missing_ok=True)
            return True
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @property
    def active_id(self) -> str:
        """The id of the key that signs."""
        return self._entries[-1].key_id

    def sign(self, payload: bytes) -> tuple[str, str]:
        """``(key_id, base64 signature)`` of ``payload`` with the active key."""
        self.refresh()
        entry = self._entries[-1]
        assert entry.private_key is not None  # checked when loaded
        return entry.key_id, _b64(entry.private_key.sign(payload))

    def rotate(self) -> str:
        """Retire the active key (its private half is deleted, its public half kept) and
        make a fresh one active; returns the new key id."""
        old = self._entries[-1]
        self._entries[-1] = _Entry(old.key_id, old.public_key, old.created_at, _now(), None)
        self._entries.append(self._fresh())
        self._save()
        self._mtime = self.path.stat().st_mtime_ns
        return self.active_id

    def public_keys(self) -> list[dict[str, Any]]:
        """Every key, oldest first: id, base64 raw public key, SHA-256 fingerprint, times."""
        self.refresh()
        return [
            {
                "key_id": e.key_id,
                "algorithm": "ed25519",
                "public_key": _b64(e.public_key),
                "fingerprint": key_fingerprint(e.public_key),
                "created_at": e.created_at,
                "retired_at": e.retired_at,
                "active": e is self._entries[-1],
            }
            for e in self._entries
        ]
