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
        "agentledger.server._store.postgres, agentledger.server._ui, agentledger.server.admin\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentledger.client')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_settings_read_the_server_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentledger.server._settings import EmbeddingConfig, Settings

    monkeypatch.setenv("AGENTLEDGER_SEARCH_INDEXER", "off")
    monkeypatch.setenv("AGENTLEDGER_TIKTOKEN_ENCODING", "o200k_base")
    monkeypatch.setenv("AGENTLEDGER_PG_POOL_SIZE", "3")
    monkeypatch.setenv("AGENTLEDGER_PG_STATEMENT_TIMEOUT_S", "2.5")
    monkeypatch.setenv("AGENTLEDGER_EMBEDDINGS_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("AGENTLEDGER_EMBEDDINGS_MODEL", "m")
    settings = Settings.from_env()
    assert settings.search_indexer is False
    assert settings.tiktoken_encoding == "o200k_base"
    assert (settings.pg_pool_size, settings.pg_statement_timeout_s) == (3, 2.5)
    assert settings.embeddings == EmbeddingConfig(url="http://127.0.0.1:9/v1/embeddings", model="m")
    monkeypatch.setenv("AGENTLEDGER_PG_POOL_SIZE", "many")
    with pytest.raises(ValueError, match="AGENTLEDGER_PG_POOL_SIZE"):
        Settings.from_env()
    monkeypatch.delenv("AGENTLEDGER_PG_POOL_SIZE")
    monkeypatch.setenv("AGENTLEDGER_EMBEDDINGS_MODEL", "")
    with pytest.raises(ValueError, match="AGENTLEDGER_EMBEDDINGS_MODEL"):
        Settings.from_env()
    assert Settings().embeddings is None and Settings().search_indexer
