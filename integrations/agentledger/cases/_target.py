"""Where a suite's runs are logged: a ledger that is kept (``--url``) or a throwaway embedded
one (:func:`ledger_target`)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agentledger.cases._factory import SpecError
from agentledger.client import Ledger, resolve_api_key
from agentledger.testing import EmbeddedServer

__all__ = ["DEFAULT_RUN_AGENT", "RunTarget", "ledger_target"]

#: The agent runs are logged under unless the suite names one.
DEFAULT_RUN_AGENT = "agentledger-cases"


@dataclass
class RunTarget:
    """Where runs are logged: a ledger client and its URL (``kept``: a ledger that outlives
    the suite, not the temporary embedded one)."""

    ledger: Ledger
    url: str
    kept: bool = True


@contextmanager
def ledger_target(
    url: str | None = None, api_key: str | None = None, agent: str = DEFAULT_RUN_AGENT
) -> Iterator[RunTarget]:
    """A ledger for the runs: the server at ``url``, or an embedded throwaway one.

    Raises:
        SpecError: ``url`` without an API key (argument or ``AGENTLEDGER_API_KEY``).
        EmbeddedServerError: the embedded server did not start (``agentledger.testing``,
            re-exported by ``agentledger.cases``).
    """
    if url is not None:
        key = resolve_api_key(api_key)
        if not key:
            raise SpecError("--url needs --api-key (or AGENTLEDGER_API_KEY)")
        ledger = Ledger(url=url, api_key=key, agent=agent, spill_dir=None, redact=False)
        try:
            yield RunTarget(ledger, url)
        finally:
            ledger.close(timeout_s=10.0)
        return
    with (
        tempfile.TemporaryDirectory(prefix="agentledger-cases-") as tmp,
        EmbeddedServer(Path(tmp) / "ledger.db") as server,
    ):
        ledger = Ledger(
            url=server.url, api_key=server.api_key, agent=agent, spill_dir=None, redact=False
        )
        try:
            yield RunTarget(ledger, server.url, kept=False)
        finally:
            ledger.close(timeout_s=10.0)
