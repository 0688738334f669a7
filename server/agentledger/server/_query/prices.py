"""Model prices for token cost: the table shipped with the server (``model_prices.json``) and
the user's own file on top of it (``AGENTLEDGER_MODEL_PRICES``, JSON or TOML).

A price file holds ``{"models": {name: entry}}``; an entry gives USD per million tokens:

* ``input``: input tokens neither read from nor written to a prompt cache;
* ``output``: output tokens (reasoning tokens are part of them);
* ``cache_read`` / ``cache_write``: cached input tokens read / written (default: ``input``);
* optional ``provider`` and ``cheaper_alternative`` (a model of the table that a suggestion may
  propose for short answers).

An entry of the user's file replaces the shipped entry of the same name, or adds a model.

A model name is found as given, then without a provider prefix (``openai/gpt-4o``,
``anthropic:claude-sonnet-4-5``), then as the longest table name it starts with followed by
``-`` (``gpt-4o-2024-08-06`` is ``gpt-4o``; ``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["ModelPrice", "PriceTable", "load_price_table"]

_FIELDS = ("input", "output", "cache_read", "cache_write")
PER_TOKENS = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens of one model."""

    model: str
    input: float
    output: float
    cache_read: float
    cache_write: float
    provider: str | None = None
    cheaper_alternative: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as the API shows it."""
        return {
            "model": self.model,
            "provider": self.provider,
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "cheaper_alternative": self.cheaper_alternative,
        }


def _price(name: str, entry: Any, source: str) -> ModelPrice:
    where = f"{source}: models.{name}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be an object")
    unknown = set(entry) - {*_FIELDS, "provider", "cheaper_alternative"}
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
    values: dict[str, float] = {}
    for field in _FIELDS:
        raw = entry.get(field, entry.get("input") if field.startswith("cache") else None)
        if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
            raise ValueError(f"{where}.{field} must be a number >= 0 (USD per million tokens)")
        values[field] = float(raw)
    text = {k: entry.get(k) for k in ("provider", "cheaper_alternative")}
    for key, value in text.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}.{key} must be a string")
    return ModelPrice(
        model=name,
        input=values["input"],
        output=values["output"],
        cache_read=values["cache_read"],
        cache_write=values["cache_write"],
        provider=text["provider"],
        cheaper_alternative=text["cheaper_alternative"],
    )


def _entries(document: Any, source: str) -> dict[str, ModelPrice]:
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, dict):
        raise ValueError(f"{source}: expected an object with a 'models' object")
    return {str(name): _price(str(name), entry, source) for name, entry in models.items()}


class PriceTable:
    """Prices by model name (see the module docstring for how a name is found)."""

    def __init__(self, prices: dict[str, ModelPrice], *, as_of: str | None, sources: list[str]):
        self.prices = prices
        self.as_of = as_of
        self.sources = sources
        self._lower = {name.lower(): price for name, price in prices.items()}
        self._by_length = sorted(self._lower, key=len, reverse=True)

    def lookup(self, model: str | None) -> ModelPrice | None:
        """The price of ``model``, or ``None`` when the table does not know it."""
        if not model:
            return None
        name = model.strip().lower()
        for candidate in (name, name.rsplit("/", 1)[-1], name.rsplit(":", 1)[-1]):
            if candidate in self._lower:
                return self._lower[candidate]
        bare = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        for known in self._by_length:
            if bare.startswith(known + "-") or bare.startswith(known + "@"):
                return self._lower[known]
        return None

    def describe(self) -> dict[str, Any]:
        """Where the prices come from (for the API answers)."""
        return {"as_of": self.as_of, "sources": self.sources, "models": len(self.prices)}


def _read_user_file(path: str) -> Any:
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ValueError(f"AGENTLEDGER_MODEL_PRICES: cannot read {path}: {exc.strerror}") from None
    try:
        if file.suffix.lower() == ".toml":
            return tomllib.loads(raw.decode())
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"AGENTLEDGER_MODEL_PRICES: {path} is not valid: {exc}") from None


def load_price_table(user_file: str | None = None) -> PriceTable:
    """The shipped table with ``user_file`` (JSON, or TOML when it ends in ``.toml``) on top.

    Raises:
        ValueError: the user file cannot be read or an entry is malformed (the message names
            the file, the model and the field).
    """
    shipped = json.loads(
        resources.files("agentledger.server._query").joinpath("model_prices.json").read_bytes()
    )
    prices = _entries(shipped, "model_prices.json")
    sources = ["agentledger (shipped)"]
    if user_file:
        prices.update(_entries(_read_user_file(user_file), user_file))
        sources.append(user_file)
    return PriceTable(prices, as_of=shipped.get("as_of"), sources=sources)
