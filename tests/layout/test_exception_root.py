"""One exception root: every exception a public module exports derives from ``LedgerError``.

``except agentledger.protocol.LedgerError`` catches anything agentledger raises on purpose: the
client's HTTP errors, the server's startup and configuration errors, the integrations' and the
regression cases' errors.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import pytest

import agentledger
from agentledger.protocol import LedgerError


def _public_modules() -> Iterator[str]:
    for info in pkgutil.walk_packages(agentledger.__path__, "agentledger.", onerror=lambda _: None):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        yield info.name


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError as exc:  # a framework extra not installed in this environment
        if "pip install" in str(exc):
            return None
        raise


@pytest.mark.parametrize("name", sorted(_public_modules()))
def test_public_exceptions_derive_from_ledger_error(name: str) -> None:
    """Layout rule: every exported exception class has ``LedgerError`` as an ancestor."""
    module = _import(name)
    if module is None:
        pytest.skip(f"{name}: its framework extra is not installed here")
    exported = getattr(module, "__all__", ())
    strays = [
        attr
        for attr in exported
        if isinstance(obj := getattr(module, attr, None), type)
        and issubclass(obj, BaseException)
        and not issubclass(obj, LedgerError)
    ]
    assert not strays, f"{name} exports exceptions outside LedgerError: {strays}"
