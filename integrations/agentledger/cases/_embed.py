"""Embeddings for ``similar_to`` checks and the corpus similarity gate.

Two sources, in this order:

* an OpenAI-compatible ``POST {url}/embeddings``, configured with ``--embeddings-url`` /
  ``AGENTLEDGER_EMBEDDINGS_URL`` (base URL, e.g. ``http://127.0.0.1:11434/v1``),
  ``--embeddings-model`` / ``AGENTLEDGER_EMBEDDINGS_MODEL`` and the key in
  ``AGENTLEDGER_EMBEDDINGS_API_KEY`` (optional);
* without a URL, an offline model that ships inside a PyPI package (WordLlama's 256-dimension
  ``l2_supercat`` token embeddings, extra ``agentledger[similarity]``): no service, no
  download, a few milliseconds per batch on a CPU.

With neither, :func:`resolve_embedder` says why, and the checks that need similarity fail
(they are never skipped silently; ``--no-similarity`` turns them off explicitly).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agentledger.cases._checks import Embedder
from agentledger.client import (
    resolve_embeddings_api_key,
    resolve_embeddings_model,
    resolve_embeddings_url,
)

__all__ = [
    "EmbedderChoice",
    "default_choice",
    "http_embedder",
    "local_embedder",
    "resolve_embedder",
]

#: What the offline model is called in reports (scores of different models do not compare).
LOCAL_MODEL_NAME = "wordllama l2_supercat_256 (offline)"


@dataclass(frozen=True)
class EmbedderChoice:
    """The embedder a run uses (``None`` when none is available), what it is (``name``, kept in
    the report next to the scores) and, when there is none, why (``reason``)."""

    embed: Embedder | None
    name: str
    reason: str = ""


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


_load_lock = threading.Lock()


def _import_wordllama() -> Any:
    """``import wordllama`` without letting it configure the host's logging: the package calls
    ``logging.basicConfig(level=INFO)`` at import, which would add a handler to the root logger
    and print every INFO record of the host application. The root logger's handlers and level
    are put back as they were."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    return wordllama


_loaded: list[Any] = []  # the model, once loaded (a list: no global statement needed)


def _local_model() -> Any:
    """The offline model, loaded once per process (threads asking at once wait for one load)."""
    with _load_lock:
        if not _loaded:
            wordllama = _import_wordllama()
            # the package ships its weights and tokenizer; pointing the cache at the package's
            # own directory finds both there, and disable_download makes sure nothing is fetched
            _loaded.append(
                wordllama.WordLlama.load(
                    cache_dir=Path(wordllama.__file__).parent, disable_download=True
                )
            )
        return _loaded[0]


def local_embedder() -> Embedder | None:
    """The offline embedder, or ``None`` when ``wordllama`` is not installed.

    Raises (when called):
        FileNotFoundError: the installed package lacks its bundled weights.
    """
    try:
        _import_wordllama()
    except ImportError:
        return None

    def embed(texts: Sequence[str]) -> list[list[float]]:
        vectors = _local_model().embed(list(texts))
        return [[float(x) for x in row] for row in vectors]

    return embed


def resolve_embedder(url: str | None = None, model: str | None = None) -> EmbedderChoice:
    """The configured endpoint, else the offline model, else none (with the reason)."""
    remote = http_embedder(url, model)
    if remote is not None:
        base = resolve_embeddings_url(url) or ""
        return EmbedderChoice(remote, f"{resolve_embeddings_model(model)} at {base}")
    local = local_embedder()
    if local is not None:
        return EmbedderChoice(local, LOCAL_MODEL_NAME)
    return EmbedderChoice(
        None,
        "none",
        "no embeddings available: install agentledger[similarity] for the offline model "
        "or pass --embeddings-url (--no-similarity turns similarity checks off)",
    )


@functools.cache
def default_choice() -> EmbedderChoice:
    """:func:`resolve_embedder` from the environment, resolved once per process."""
    return resolve_embedder()
