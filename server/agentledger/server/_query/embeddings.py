"""Embeddings from an OpenAI-compatible ``POST /v1/embeddings`` endpoint (Ollama, vLLM, OpenAI).

Configuration (environment, read once when the app starts; semantic and hybrid search are off
while ``AGENTLEDGER_EMBEDDINGS_URL`` is unset):

| variable | default | meaning |
|---|---|---|
| ``AGENTLEDGER_EMBEDDINGS_URL`` | unset | base URL (``http://host:11434/v1``) or ``…/embeddings`` |
| ``AGENTLEDGER_EMBEDDINGS_MODEL`` | unset (required with the URL) | model name sent as ``model`` |
| ``AGENTLEDGER_EMBEDDINGS_API_KEY`` | unset | sent as ``Authorization: Bearer``; never logged |
| ``AGENTLEDGER_EMBEDDINGS_BATCH`` | ``64`` | events per request of the background worker |
| ``AGENTLEDGER_EMBEDDINGS_TIMEOUT_S`` | ``30`` | seconds per request |

Vectors are computed after the write by a background worker
(:class:`~agentledger.server._query.workers.DrainWorker`), so ingest never waits for the
endpoint; a failing endpoint is retried with backoff and logged as a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from agentledger.protocol.errors import LedgerError

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


@dataclass(frozen=True)
class EmbeddingConfig:
    """Where and how to compute embeddings.

    Attributes:
        url: the full ``.../embeddings`` URL.
        model: the model name.
        api_key: bearer key or ``None``.
        batch: texts per request (background worker).
        timeout_s: seconds per request.
    """

    url: str
    model: str
    api_key: str | None = None
    batch: int = 64
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EmbeddingConfig | None:
        """The configuration from ``AGENTLEDGER_EMBEDDINGS_*``, or ``None`` when unset.

        Raises:
            ValueError: a URL without a model, or a non-numeric batch/timeout.
        """
        env = os.environ if environ is None else environ
        url = env.get("AGENTLEDGER_EMBEDDINGS_URL", "").strip()
        if not url:
            return None
        model = env.get("AGENTLEDGER_EMBEDDINGS_MODEL", "").strip()
        if not model:
            raise ValueError("AGENTLEDGER_EMBEDDINGS_MODEL must be set with the embeddings URL")
        url = url.rstrip("/")
        if not url.endswith("/embeddings"):
            url += "/embeddings"
        batch = int(env.get("AGENTLEDGER_EMBEDDINGS_BATCH", "64"))
        if not 1 <= batch <= 2048:
            raise ValueError("AGENTLEDGER_EMBEDDINGS_BATCH must be between 1 and 2048")
        return cls(
            url=url,
            model=model,
            api_key=env.get("AGENTLEDGER_EMBEDDINGS_API_KEY") or None,
            batch=batch,
            timeout_s=float(env.get("AGENTLEDGER_EMBEDDINGS_TIMEOUT_S", "30")),
        )


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
