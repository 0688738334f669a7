"""Published signed-head files: where the server writes one (``<agent>/<sequence_no>-<key
id>.json`` under the publish directory) and the strict reading a checker needs (a file that is
not a whole signed head is an error naming the file and what is wrong, never skipped).

Shared by the server that publishes and the CLI that checks a ledger against the files.
Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from agentledger.protocol.errors import LedgerError
from agentledger.protocol.signed_heads import HEAD_FIELDS

__all__ = ["HeadFileError", "head_file_name", "head_file_paths", "load_head_file"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: field -> the JSON types it may have in a head file
_TYPES: dict[str, tuple[type, ...]] = {
    "agent": (str,),
    "chain_hash": (str,),
    "hmac_links": (bool,),
    "key_id": (str,),
    "sequence_no": (int,),
    "signed_at": (str,),
    "signature": (str,),
}


class HeadFileError(LedgerError, ValueError):
    """A published head file cannot be read or is not a whole signed head."""


def head_file_name(head: dict[str, Any]) -> str:
    """``<agent>/<sequence_no, 12 digits>-<key id>.json`` (unsafe characters as ``_``)."""
    agent = _UNSAFE.sub("_", str(head["agent"]))
    key = _UNSAFE.sub("_", str(head["key_id"]))
    return f"{agent}/{int(head['sequence_no']):012d}-{key}.json"


def head_file_paths(directory: str | Path, agent: str | None = None) -> list[Path]:
    """The head files under ``directory`` (of one agent's folder when ``agent`` is given),
    sorted; temporary files of a write in progress (``.head-*``) are left out."""
    root = Path(directory)
    pattern = f"{_UNSAFE.sub('_', agent)}/*.json" if agent is not None else "*/*.json"
    return sorted(p for p in root.glob(pattern) if not p.name.startswith("."))


def load_head_file(path: str | Path) -> dict[str, Any]:
    """One published head: a JSON object with every signed field and ``signature``.

    Raises:
        HeadFileError: unreadable, not JSON, not an object, a field missing or of the wrong
            type, or a ``chain_hash`` that is not 64 lowercase hex digits.
    """
    try:
        head = orjson.loads(Path(path).read_bytes())
    except OSError as error:
        raise HeadFileError(f"published head {path}: unreadable ({error.strerror})") from None
    except orjson.JSONDecodeError as error:
        raise HeadFileError(f"published head {path}: not JSON ({error})") from None
    if not isinstance(head, dict):
        raise HeadFileError(f"published head {path}: not a JSON object")
    for name in (*HEAD_FIELDS, "signature"):
        if name not in head:
            raise HeadFileError(f"published head {path}: field {name!r} is missing")
        value = head[name]
        wrong_bool = name != "hmac_links" and isinstance(value, bool)
        if not isinstance(value, _TYPES[name]) or wrong_bool:
            raise HeadFileError(
                f"published head {path}: field {name!r} has the wrong type ({type(value).__name__})"
            )
    if not _HEX64.match(head["chain_hash"]):
        raise HeadFileError(f"published head {path}: chain_hash is not 64 lowercase hex digits")
    if head["sequence_no"] < 1:
        raise HeadFileError(f"published head {path}: sequence_no must be 1 or more")
    return head
