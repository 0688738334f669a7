"""Server configuration: one frozen dataclass, environment variables as defaults.

This module is the only place on the server side that reads the environment: each variable is
read once by :meth:`Settings.from_env`, and command-line options and constructor arguments
override it. Everything below it (store, query features, workers) gets its values passed down
from :class:`Settings`.

| variable | field | default | meaning |
|---|---|---|---|
| ``AGENTLEDGER_DB`` | ``db`` | ``agentledger.db`` | SQLite file path or ``postgresql://`` URL |
| ``AGENTLEDGER_DEV_KEY`` | ``dev_key`` | unset | full-access key, honoured on loopback only |
| ``AGENTLEDGER_DASHBOARD_TOKEN`` | ``dashboard_token`` | random | dashboard dev-session link |
| ``AGENTLEDGER_CHAIN_KEY`` | ``chain_key`` | unset | HMAC-SHA256 key for chain links |
| ``AGENTLEDGER_REDACT_PATTERNS`` | ``redact_patterns`` | empty | ``email,phone,card,iban,ipv4`` |
| ``AGENTLEDGER_MAX_BODY_BYTES`` | ``max_body_bytes`` | ``16777216`` | body limit (413 above) |
| ``AGENTLEDGER_MAX_JSON_DEPTH`` | ``max_json_depth`` | ``64`` | nesting of ``data``/``metadata`` |
| ``AGENTLEDGER_SEARCH_INDEXER`` | ``search_indexer`` | ``on`` | ``off``: searches index alone |
| ``AGENTLEDGER_TIKTOKEN_ENCODING`` | ``tiktoken_encoding`` | ``cl100k_base`` | memory tokens |
| ``AGENTLEDGER_PG_POOL_SIZE`` | ``pg_pool_size`` | ``10`` | PostgreSQL connections per process |
| ``AGENTLEDGER_PG_STATEMENT_TIMEOUT_S`` | ``pg_statement_timeout_s`` | ``30`` | statement/lock s |
| ``AGENTLEDGER_MODEL_PRICES`` | ``model_prices`` | unset | JSON/TOML file of model prices |
| ``AGENTLEDGER_RETENTION_INTERVAL_S`` | ``retention_interval_s`` | ``3600`` | sweep period; 0 off |
| ``AGENTLEDGER_RETENTION_BATCH`` | ``retention_batch`` | ``500`` | events per sweep transaction |
| ``AGENTLEDGER_OTLP_PENDING_S`` | ``otlp_pending_s`` | ``30`` | OTLP span wait for its root |
| ``AGENTLEDGER_OTLP_FLUSH_INTERVAL_S`` | ``otlp_flush_interval_s`` | ``5`` | stale flush; 0 off |
| ``AGENTLEDGER_SIGNING_KEYS`` | ``signing_keys`` | ``<db>.signing-keys.json`` | head-signing key |
| ``AGENTLEDGER_SIGN_INTERVAL_S`` | ``sign_interval_s`` | ``60`` | head signing period; 0 off |
| ``AGENTLEDGER_PUBLISH_HEADS_DIR`` | ``publish_heads_dir`` | unset | a file per signed head |
| ``AGENTLEDGER_PUBLISH_HEADS_URL`` | ``publish_heads_url`` | unset | webhook POST per head |
| ``AGENTLEDGER_VERIFY_WORKERS`` | ``verify_workers`` | cores - 1, at most 3 | split verify |
| ``AGENTLEDGER_VERIFY_SPLIT_ROWS`` | ``verify_split_rows`` | ``50000`` | rows split from |
| ``AGENTLEDGER_EVIDENCE_MAX_ROWS`` | ``evidence_max_rows`` | ``200000`` | rows per segment |
| ``AGENTLEDGER_EMBEDDINGS_URL`` | ``embeddings.url`` | unset | ``…/v1`` or ``…/embeddings`` |
| ``AGENTLEDGER_EMBEDDINGS_MODEL`` | ``embeddings.model`` | unset | required with the URL |
| ``AGENTLEDGER_EMBEDDINGS_API_KEY`` | ``embeddings.api_key`` | unset | bearer key, never logged |
| ``AGENTLEDGER_EMBEDDINGS_BATCH`` | ``embeddings.batch`` | ``64`` | texts per worker request |
| ``AGENTLEDGER_EMBEDDINGS_TIMEOUT_S`` | ``embeddings.timeout_s`` | ``30`` | seconds per request |

Semantic and hybrid search are off while ``AGENTLEDGER_EMBEDDINGS_URL`` is unset
(``embeddings`` is ``None``).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from agentledger.protocol.redaction import PATTERN_NAMES

__all__ = ["EmbeddingConfig", "Settings", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only listens on the loopback interface."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _env_patterns() -> tuple[str, ...]:
    raw = os.environ.get("AGENTLEDGER_REDACT_PATTERNS", "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def default_verify_workers() -> int:
    """Worker processes of split verification by default: the cores this process may run on
    minus one, at most 3."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(0, min(cores - 1, 3))


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


@dataclass(frozen=True)
class EmbeddingConfig:
    """Where and how the server computes embeddings (``Settings.embeddings``).

    Attributes:
        url: the full ``.../embeddings`` URL (a base URL such as ``http://host:11434/v1`` gets
            ``/embeddings`` appended).
        model: the model name sent as ``model``.
        api_key: bearer key or ``None``.
        batch: texts per request of the background worker (1..2048).
        timeout_s: seconds per request.

    Raises:
        ValueError: an empty URL or model, or a batch size out of range.
    """

    url: str
    model: str
    api_key: str | None = None
    batch: int = 64
    timeout_s: float = 30.0

    def __post_init__(self) -> None:
        url = self.url.strip().rstrip("/")
        if not url:
            raise ValueError("the embeddings URL must not be empty")
        if not url.endswith("/embeddings"):
            url += "/embeddings"
        object.__setattr__(self, "url", url)
        if not self.model.strip():
            raise ValueError("AGENTLEDGER_EMBEDDINGS_MODEL must be set with the embeddings URL")
        if not 1 <= self.batch <= 2048:
            raise ValueError("AGENTLEDGER_EMBEDDINGS_BATCH must be between 1 and 2048")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EmbeddingConfig | None:
        """The configuration from ``AGENTLEDGER_EMBEDDINGS_*``, or ``None`` when the URL is
        unset.

        Raises:
            ValueError: a URL without a model, or a non-numeric batch/timeout.
        """
        env = os.environ if environ is None else environ
        url = env.get("AGENTLEDGER_EMBEDDINGS_URL", "").strip()
        if not url:
            return None
        return cls(
            url=url,
            model=env.get("AGENTLEDGER_EMBEDDINGS_MODEL", "").strip(),
            api_key=env.get("AGENTLEDGER_EMBEDDINGS_API_KEY") or None,
            batch=int(env.get("AGENTLEDGER_EMBEDDINGS_BATCH", "64")),
            timeout_s=float(env.get("AGENTLEDGER_EMBEDDINGS_TIMEOUT_S", "30")),
        )


@dataclass(frozen=True)
class Settings:
    """Everything the server needs to run.

    Attributes:
        db: SQLite file path, ``:memory:``-free (the store needs a file for WAL), or a
            ``sqlite:///`` / ``postgresql://`` URL.
        host: the address uvicorn binds; decides whether the dev key is honoured.
        port: TCP port.
        dev_key: a full-access key accepted only while ``host`` is loopback, and then only for
            local requests (``_loopback``; wire contract, "General").
        dashboard_token: the secret of the dashboard's dev-session link
            (``/ui/?token=...``), the only way to open the dashboard without entering a key;
            random per start when unset (``agentledger serve`` prints the link).
        chain_key: when set, chain links are HMAC-SHA256 with this key instead of SHA-256.
        redact_patterns: optional redaction patterns applied at write time, before the checksum
            (names from ``agentledger.protocol.redaction.PATTERN_NAMES``).
        max_body_bytes: request bodies above this size get 413.
        max_json_depth: ``data``/``metadata`` nested deeper than this get 422.
        max_batch_items: batch size limit (422 above it).
        search_indexer: run the background full-text indexer (off: every search indexes
            what is pending itself; the benchmark's "index off" side).
        tiktoken_encoding: the tiktoken encoding that counts memory-context tokens (an
            estimate of 4 characters per token when tiktoken or the encoding is missing).
        pg_pool_size: PostgreSQL connections pooled per process (+ as many overflow).
        pg_statement_timeout_s: PostgreSQL statement and lock timeout, seconds.
        embeddings: the embeddings endpoint (``None``: semantic and hybrid search off).
        model_prices: a JSON or TOML file of model prices (USD per million tokens) that
            extends or overrides the shipped table (``_query/prices.py``); read at start-up.
        retention_interval_s: seconds between two retention sweeps of the background job
            (``0``: no scheduled sweep; ``POST /v1/retention/run`` still works).
        retention_batch: events erased per write transaction of a sweep (1..10000).
        otlp_pending_s: seconds an OTLP span waits for its trace's root span before it is
            written without it (> 0).
        otlp_flush_interval_s: seconds between two flushes of such spans by the background
            timer (``0``: only the next export writes them).
        signing_keys: the Ed25519 signing-key file of signed chain heads (``None``: next to
            a SQLite file, ``<db>.signing-keys.json``; PostgreSQL: ``~/.agentledger/``); created
            on first use, mode 0600.
        sign_interval_s: seconds between two rounds of the background head signer, which signs
            every agent whose chain head moved (``0``: heads are signed on demand only,
            ``POST /v1/signed-heads``).
        publish_heads_dir: a directory that gets one JSON file per signed head (``None``: none).
        publish_heads_url: a webhook URL that gets each signed head POSTed (``None``: none).
        evidence_max_rows: chain rows one agent's segment of an evidence bundle may hold
            (from the lineage's earliest record to the signed head ending it); a bundle that
            needs more is refused with a 422 (>= 1).
        verify_workers: processes that verify ranges of a long SQLite chain beside the server
            process (``0``: every chain is verified in the server process alone); started on
            the first long chain and kept. Default: the cores minus one, at most 3.
        verify_split_rows: the fewest rows one verification reads that it splits (>= 1000).
    """

    db: str = "agentledger.db"
    host: str = "127.0.0.1"
    port: int = 8765
    dev_key: str | None = None
    dashboard_token: str | None = None
    chain_key: str | None = None
    redact_patterns: tuple[str, ...] = field(default_factory=tuple)
    max_body_bytes: int = 16 * 1024 * 1024
    max_json_depth: int = 64
    max_batch_items: int = 500
    search_indexer: bool = True
    tiktoken_encoding: str = "cl100k_base"
    pg_pool_size: int = 10
    pg_statement_timeout_s: float = 30.0
    embeddings: EmbeddingConfig | None = None
    model_prices: str | None = None
    retention_interval_s: float = 3600.0
    retention_batch: int = 500
    signing_keys: str | None = None
    sign_interval_s: float = 60.0
    publish_heads_dir: str | None = None
    publish_heads_url: str | None = None
    evidence_max_rows: int = 200_000
    otlp_pending_s: float = 30.0
    otlp_flush_interval_s: float = 5.0
    verify_workers: int = field(default_factory=default_verify_workers)
    verify_split_rows: int = 50_000

    def __post_init__(self) -> None:
        unknown = set(self.redact_patterns) - PATTERN_NAMES
        if unknown:
            raise ValueError(
                f"unknown redaction pattern(s) {sorted(unknown)}; known: {sorted(PATTERN_NAMES)}"
            )
        if self.max_json_depth < 2 or self.max_json_depth > 512:
            raise ValueError("max_json_depth must be between 2 and 512")
        if self.pg_pool_size < 1 or self.pg_statement_timeout_s <= 0:
            raise ValueError("pg_pool_size must be >= 1 and pg_statement_timeout_s > 0")
        if self.retention_interval_s < 0 or not 1 <= self.retention_batch <= 10_000:
            raise ValueError(
                "AGENTLEDGER_RETENTION_INTERVAL_S must be >= 0 and "
                "AGENTLEDGER_RETENTION_BATCH between 1 and 10000"
            )
        if self.sign_interval_s < 0:
            raise ValueError("AGENTLEDGER_SIGN_INTERVAL_S must be >= 0 (0: sign on demand only)")
        if self.evidence_max_rows < 1:
            raise ValueError("AGENTLEDGER_EVIDENCE_MAX_ROWS must be >= 1")
        if self.verify_workers < 0 or self.verify_split_rows < 1000:
            raise ValueError(
                "AGENTLEDGER_VERIFY_WORKERS must be >= 0 and AGENTLEDGER_VERIFY_SPLIT_ROWS >= 1000"
            )
        if self.otlp_pending_s <= 0 or self.otlp_flush_interval_s < 0:
            raise ValueError(
                "AGENTLEDGER_OTLP_PENDING_S must be > 0 and AGENTLEDGER_OTLP_FLUSH_INTERVAL_S >= 0"
            )

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from ``AGENTLEDGER_*`` variables, with non-``None`` ``overrides`` on top.

        Raises:
            ValueError: an unknown redaction pattern, a non-numeric size or timeout variable,
                or a bad ``AGENTLEDGER_EMBEDDINGS_*`` configuration.
        """
        values: dict[str, object] = {
            "db": os.environ.get("AGENTLEDGER_DB", "agentledger.db"),
            "dev_key": os.environ.get("AGENTLEDGER_DEV_KEY") or None,
            "dashboard_token": os.environ.get("AGENTLEDGER_DASHBOARD_TOKEN") or None,
            "chain_key": os.environ.get("AGENTLEDGER_CHAIN_KEY") or None,
            "redact_patterns": _env_patterns(),
            "max_body_bytes": int(os.environ.get("AGENTLEDGER_MAX_BODY_BYTES", 16 * 1024 * 1024)),
            "max_json_depth": int(os.environ.get("AGENTLEDGER_MAX_JSON_DEPTH", 64)),
            "search_indexer": os.environ.get("AGENTLEDGER_SEARCH_INDEXER", "on").strip().lower()
            != "off",
            "tiktoken_encoding": os.environ.get("AGENTLEDGER_TIKTOKEN_ENCODING", "").strip()
            or "cl100k_base",
            "pg_pool_size": int(_env_number("AGENTLEDGER_PG_POOL_SIZE", 10)),
            "pg_statement_timeout_s": _env_number("AGENTLEDGER_PG_STATEMENT_TIMEOUT_S", 30),
            "embeddings": EmbeddingConfig.from_env(),
            "model_prices": os.environ.get("AGENTLEDGER_MODEL_PRICES", "").strip() or None,
            "retention_interval_s": _env_number("AGENTLEDGER_RETENTION_INTERVAL_S", 3600),
            "retention_batch": int(_env_number("AGENTLEDGER_RETENTION_BATCH", 500)),
            "signing_keys": os.environ.get("AGENTLEDGER_SIGNING_KEYS", "").strip() or None,
            "sign_interval_s": _env_number("AGENTLEDGER_SIGN_INTERVAL_S", 60),
            "publish_heads_dir": os.environ.get("AGENTLEDGER_PUBLISH_HEADS_DIR", "").strip()
            or None,
            "publish_heads_url": os.environ.get("AGENTLEDGER_PUBLISH_HEADS_URL", "").strip()
            or None,
            "evidence_max_rows": int(_env_number("AGENTLEDGER_EVIDENCE_MAX_ROWS", 200_000)),
            "otlp_pending_s": _env_number("AGENTLEDGER_OTLP_PENDING_S", 30),
            "otlp_flush_interval_s": _env_number("AGENTLEDGER_OTLP_FLUSH_INTERVAL_S", 5),
            "verify_workers": int(
                _env_number("AGENTLEDGER_VERIFY_WORKERS", default_verify_workers())
            ),
            "verify_split_rows": int(_env_number("AGENTLEDGER_VERIFY_SPLIT_ROWS", 50_000)),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    @property
    def dev_key_active(self) -> bool:
        """The dev key is honoured only on a loopback bind (wire contract, "General")."""
        return bool(self.dev_key) and is_loopback(self.host)
