"""Point-in-time state (``GET /v1/events/at``) from ``state_set`` / ``state_delete`` events.

The state at time T is, per key, the value of the last ``state_set`` at or before T unless a
later ``state_delete`` (at or before T) removed it; ties on the timestamp are broken by the
per-agent ``sequence_no``.

Two shapes of ``data`` are read (event vocabulary, ``state_set``):

* ``{"key": K, "value": V}`` sets ``K`` to ``V`` (our vocabulary);
* any other object sets every one of its keys (the reference client's shape:
  ``{"plan": "basic"}`` sets ``plan``).

``state_delete`` removes ``data.key`` (a string), or every string in ``data.keys`` (a list).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["STATE_EVENTS", "fold_state"]

#: The event types that change state.
STATE_EVENTS = ("state_set", "state_delete")


def _is_key_value(data: dict[str, Any]) -> bool:
    return isinstance(data.get("key"), str) and "value" in data


def fold_state(events: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Apply ``(event type, data)`` pairs, oldest first, and return the resulting state.

    A ``state_delete`` that names no string key changes nothing.
    """
    state: dict[str, Any] = {}
    for event, data in events:
        if not isinstance(data, dict):
            continue
        if event == "state_set":
            if _is_key_value(data):
                state[data["key"]] = data["value"]
            else:
                state.update(data)
        elif event == "state_delete":
            key = data.get("key")
            keys = data.get("keys")
            names = [key] if isinstance(key, str) else keys if isinstance(keys, list) else []
            for name in names:
                if isinstance(name, str):
                    state.pop(name, None)
    return state
