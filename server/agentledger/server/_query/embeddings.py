"""Embeddings from an OpenAI-compatible ``POST /v1/embeddings`` endpoint (Ollama, vLLM, OpenAI).

Configured by :class:`~agentledger.server._settings.EmbeddingConfig` (``Settings.embeddings``,
from the ``AGENTLEDGER_EMBEDDINGS_*`` variables); semantic and hybrid search are off without it.

Vectors are computed after the write by a background worker
(:class:`~agentledger.server._query.workers.DrainWorker`), so ingest never waits for the
endpoint; a failing endpoint is retried with backoff and logged as a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from agentledger.protocol.errors import LedgerError
from agentledger.server._settings import EmbeddingConfig

__all__ = ["HOW_TO_ENABLE", "Embedder", "EmbeddingConfig", "EmbeddingError"]

#: What a 400 says when semantic search is asked while embeddings are off.
HOW_TO_ENABLE = (
    "mode: semantic and hybrid search need embeddings, which are off on this server; start "
    "it with AGENTLEDGER_EMBEDDINGS_URL (an OpenAI-compatible /v1/embeddings endpoint, e.g. "
    "Ollama's http://127.0.0.1:11434/v1) and AGENTLEDGER_EMBEDDINGS_MODEL set (and "
    "AGENTLEDGER_EMBEDDINGS_API_KEY if it needs a key), or use mode=keyword"
)


class EmbeddingError(LedgerError, RuntimeError):
    """The endpoint failed or answered something that is not an embeddings response."""


class Embedder:
    """A small client of one embeddings endpoint (thread-safe: one ``httpx.Client``).

    Args:
        config: endpoint, model and limits.
        transport: an httpx transport to use instead of the network (tests, proxies).
    """

    def __init__(
        self, config: EmbeddingConfig, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._http = httpx.Client(timeout=config.timeout_s, headers=headers, transport=transport)

    @property
    def model(self) -> str:
        """The model name."""
        return self.config.model

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()

    def embed(self, texts: Sequence[str]) -> list[np.ndarray[Any, np.dtype[np.float32]]]:
        """One float32 vector per text, in order.

        Raises:
            EmbeddingError: transport error, non-2xx status, or a malformed answer.
        """
        if not texts:
            return []
        try:
            response = self._http.post(
                self.config.url, json={"model": self.config.model, "input": list(texts)}
            )
        except httpx.HTTPError as error:
            raise EmbeddingError(f"embeddings endpoint unreachable: {error}") from None
        if response.status_code >= 400:
            raise EmbeddingError(
                f"embeddings endpoint answered {response.status_code}: {response.text[:200]}"
            )
        try:
            items = response.json()["data"]
            ordered = sorted(items, key=lambda item: int(item.get("index", 0)))
            vectors = [np.asarray(item["embedding"], dtype=np.float32) for item in ordered]
        except (ValueError, KeyError, TypeError) as error:
            raise EmbeddingError(f"not an embeddings response: {error}") from None
        if len(vectors) != len(texts) or any(v.ndim != 1 or not v.size for v in vectors):
            raise EmbeddingError(
                f"embeddings endpoint returned {len(vectors)} vectors for {len(texts)} inputs"
            )
        return vectors
