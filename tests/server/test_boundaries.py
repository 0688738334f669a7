"""The server's boundaries: it imports ``agentledger.protocol`` and never the client, and every
exception it raises on purpose derives from :class:`agentledger.protocol.LedgerError` (keeping
its older base, so existing ``except ValueError`` clauses still catch it)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from agentledger.protocol import LedgerError

ERRORS = [
    ("agentledger.server._app", "StartupRefused", RuntimeError),
    ("agentledger.server._store.postgres", "StoreStartupError", ValueError),
    ("agentledger.server._query.embeddings", "EmbeddingError", RuntimeError),
    ("agentledger.server._search.base", "KeywordSearchUnavailable", RuntimeError),
    ("agentledger.server._query.search", "SearchModeUnavailable", ValueError),
    ("agentledger.server._canonical", "InputLimitError", ValueError),
    ("agentledger.server._ingest", "ItemError", ValueError),
    ("agentledger.server._ui._api", "ApiError", Exception),
]


@pytest.mark.parametrize(("module", "name", "older_base"), ERRORS)
def test_server_errors_derive_from_ledger_error(
    module: str, name: str, older_base: type[BaseException]
) -> None:
    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, LedgerError)
    assert issubclass(error, older_base)


def test_the_server_never_imports_the_client() -> None:
    code = (
        "import sys, agentledger.server._app, agentledger.server._store.sqlite, "
        "agentledger.server._store.postgres, agentledger.server._ui, agentledger.server._cli\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentledger.client')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
