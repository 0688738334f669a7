"""Embeddings for ``similar_to`` checks: an OpenAI-compatible ``POST {url}/embeddings``.

Configured with ``--embeddings-url`` / ``AGENTLEDGER_EMBEDDINGS_URL`` (base URL, e.g.
``http://127.0.0.1:11434/v1``), ``--embeddings-model`` / ``AGENTLEDGER_EMBEDDINGS_MODEL``
and the key in ``AGENTLEDGER_EMBEDDINGS_API_KEY`` (optional). Without a URL, ``similar_to``
checks are skipped and reported as such.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from agentledger.cases._checks import Embedder
from agentledger.client import (
    resolve_embeddings_api_key,
    resolve_embeddings_model,
    resolve_embeddings_url,
)

__all__ = ["http_embedder"]


def http_embedder(
    url: str | None = None, model: str | None = None, timeout_s: float = 30.0
) -> Embedder | None:
    """An :data:`Embedder` calling ``{url}/embeddings``, or ``None`` when no URL is set.

    Raises (when called):
        httpx.HTTPError: the endpoint failed.
    """
    base = resolve_embeddings_url(url)
    if not base:
        return None
    name = resolve_embeddings_model(model)
    key = resolve_embeddings_api_key()
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    def embed(texts: Sequence[str]) -> list[list[float]]:
        response = httpx.post(
            base.rstrip("/") + "/embeddings",
            json={"model": name, "input": list(texts)},
            headers=headers,
            timeout=timeout_s,
        )
        response.raise_for_status()
        rows = sorted(response.json()["data"], key=lambda r: r["index"])
        return [list(map(float, r["embedding"])) for r in rows]

    return embed
