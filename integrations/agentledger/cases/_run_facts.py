"""What a run's events say beyond the checks: the final answer's ``finish_reason`` and the
truncated model calls, the models asked for and served, whether the answer declined.

Read from the shared event vocabulary (``llm_start``, ``llm_end``), so every integration's runs
are measured the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentledger.client import vocabulary as v

__all__ = ["TRUNCATED_REASONS", "final_finish", "looks_like_refusal", "models_of"]

#: ``finish_reason`` values meaning the model stopped at a token limit, not because it was
#: done (OpenAI ``length``, Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``, the Responses
#: API's ``max_output_tokens``), compared in lower case.
TRUNCATED_REASONS: Final = frozenset({"length", "max_tokens", "max_output_tokens"})


#: Openings of a refusal in English ("I'm sorry, but I can't help with that", "As an AI, I
#: cannot..."), matched in lower case against the first 2,000 characters of the answer.
#: A heuristic for the corpus gate ``--max-refusal-rate``, not a classifier: it counts answers
#: that decline, so a prompt change that makes the model decline more shows as a number.
_REFUSAL = re.compile(
    r"\b(?:i(?:'m| am) (?:sorry|afraid),? (?:but )?i (?:can(?:'t|not)|am unable|won't)"
    r"|i (?:can(?:'t|not)|am unable to|won't be able to|am not able to) "
    r"(?:help|assist|do that|comply|provide|share|answer)"
    r"|as an ai(?: language model)?,? i (?:can(?:'t|not)|don't|do not))"
)


def looks_like_refusal(answer: str) -> bool:
    """The answer opens or contains a refusal phrase (see :data:`_REFUSAL`)."""
    return _REFUSAL.search(answer[:2000].lower().replace("\u2019", "'")) is not None


def models_of(evs: Sequence[Any]) -> tuple[list[str], list[str]]:
    """The models the run asked for (``llm_start.model``) and was served (``llm_end``'s
    ``response_model`` or ``token_usage.model``), each once, in order."""
    asked: list[str] = []
    served: list[str] = []
    for e in evs:
        if e.event == v.LLM_START:
            value = e.data.get("model")
            if isinstance(value, str) and value and value not in asked:
                asked.append(value)
        elif e.event == v.LLM_END:
            usage = e.data.get("token_usage")
            value = e.data.get("response_model") or (
                usage.get("model") if isinstance(usage, Mapping) else None
            )
            if isinstance(value, str) and value and value not in served:
                served.append(value)
    return asked, served


def final_finish(evs: Sequence[Any], answer: Any | None) -> tuple[str | None, int]:
    """The ``finish_reason`` of the model call behind the final answer (the last ``llm_end``
    logged before it; the run's last one when it gave no answer) and how many model calls
    of the run stopped at a token limit."""
    final: str | None = None
    truncated = 0
    for e in evs:
        if e.event != v.LLM_END:
            continue
        reason = e.data.get("finish_reason")
        text = str(reason).lower() if reason is not None else None
        if text in TRUNCATED_REASONS:
            truncated += 1
        if answer is None or e.sequence_no <= answer.sequence_no:
            final = str(reason) if reason is not None else None
    return final, truncated
