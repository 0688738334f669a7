"""Verify an agentledger evidence bundle offline: no server, no database, only the server's
public key. Depends on the standard library, :mod:`agentledger.protocol`, orjson and
``cryptography`` (an import-linter contract keeps the server and the client out).

>>> report = verify_bundle("bundle.zip", public_key="keys.json")  # doctest: +SKIP
>>> report.ok, [str(p) for p in report.problems]  # doctest: +SKIP

What a bundle proves and what not: ``docs/pages/evidence.md``, "Evidence bundles".
"""

from __future__ import annotations

from agentledger.evidence._errors import (
    BundleError,
    CorruptBundle,
    MissingFile,
    WrongAgent,
    WrongKey,
)
from agentledger.evidence._keys import load_public_keys
from agentledger.evidence._report import Problem, Report
from agentledger.evidence._verify import verify_bundle

__all__ = [
    "BundleError",
    "CorruptBundle",
    "MissingFile",
    "Problem",
    "Report",
    "WrongAgent",
    "WrongKey",
    "load_public_keys",
    "verify_bundle",
]
