"""Token-saving suggestions (``GET /v1/agents/{agent}/token-optimization``) and improvement
suggestions (``GET /v1/agents/{agent}/suggestions``), derived by fixed rules from the stored
usage of a :class:`Scan`: no model is asked, every number is read from events.

Token rules (each cites its numbers and the events it is based on):

* ``cache_opportunity``: at least :data:`MIN_REPEATS` calls of one model start from the same
  long first message (a system prompt of :data:`LONG_PROMPT_TOKENS` tokens or more, estimated
  at 4 characters a token) and under 10 % of their input came from the prompt cache. Saving:
  the repeated prompt, after its first send, priced as cache reads instead of fresh input.
* ``model_optimization``: at least :data:`MIN_REPEATS` calls of a model with a cheaper
  alternative in the price table whose median answer is at most :data:`SHORT_ANSWER_TOKENS`
  output tokens. Saving: the same tokens priced at the alternative.
* ``truncation``: answers cut at the output limit (``finish_reason`` ``length`` /
  ``max_tokens``). Their output tokens are counted as at risk (a cut answer is usually retried).
* ``tool_output_size``: tool results over :data:`LARGE_TOOL_CHARS` characters that later model
  calls of the same session re-read. Saving: trimming each to :data:`TRIMMED_TOOL_CHARS`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from agentledger.server._query.prices import PER_TOKENS, PriceTable
from agentledger.server._query.usage import TRUNCATED_REASONS, Call, Scan, later_calls
from agentledger.server._query.usage_report import call_cost

__all__ = ["improvement_suggestions", "token_optimization"]

MIN_REPEATS = 3
LONG_PROMPT_TOKENS = 1024
SHORT_ANSWER_TOKENS = 150
LARGE_TOOL_CHARS = 8000
TRIMMED_TOOL_CHARS = 2000
CHARS_PER_TOKEN = 4


def _severity(saving: float, total_cost: float) -> str:
    share = saving / total_cost if total_cost else 0.0
    return "high" if share >= 0.2 else "medium" if share >= 0.05 else "low"


def _suggestion(
    kind: str,
    key: str,
    *,
    title: str,
    saving: float,
    tokens: int,
    base_tokens: int,
    total_cost: float,
    confidence: int,
    why: str,
    action: str,
    affected: dict[str, Any],
    samples: list[str],
    current: dict[str, Any],
    recommended: dict[str, Any],
    month_factor: float,
) -> dict[str, Any]:
    return {
        "id": f"{kind}:{key}",
        "title": title,
        "category": kind,
        "severity": _severity(saving, total_cost),
        "estimated_savings_usd": round(saving, 6),
        "estimated_monthly_savings_usd": round(saving * month_factor, 6),
        "estimated_token_reduction": tokens,
        "estimated_token_reduction_pct": round(100 * tokens / base_tokens, 2)
        if base_tokens
        else 0.0,
        "confidence_score": confidence,
        "summary": title,
        "why": why,
        "recommended_action": action,
        "current_state": current,
        "recommended_state": recommended,
        "affected": affected,
        "sample_size": len(samples),
        "samples": samples[:10],
    }


def _cache_rule(found: Scan, prices: PriceTable, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[Call]] = defaultdict(list)
    for call in found.calls:
        long_prompt = call.prompt_chars // CHARS_PER_TOKEN >= LONG_PROMPT_TOKENS
        if call.usage and call.model and call.prompt_key and long_prompt:
            groups[(call.agent, call.model, call.prompt_key)].append(call)
    out = []
    for (agent, model, key), calls in groups.items():
        read = sum(c.usage.cache_read for c in calls if c.usage)
        given = sum(c.usage.input for c in calls if c.usage)
        if len(calls) < MIN_REPEATS or (given and read / given >= 0.1):
            continue
        prefix = calls[0].prompt_chars // CHARS_PER_TOKEN
        repeated = prefix * (len(calls) - 1)
        price = prices.lookup(model)
        saving = repeated * (price.input - price.cache_read) / PER_TOKENS if price else 0.0
        out.append(
            _suggestion(
                "cache_opportunity",
                f"{agent}:{model}:{key}",
                title=f"Cache the repeated {prefix:,}-token prompt of {model}",
                saving=saving,
                tokens=repeated,
                base_tokens=given,
                confidence=80 if len(calls) >= 10 else 60,
                why=f"{len(calls)} calls of {model} start with the same first message of about "
                f"{prefix:,} tokens; {read:,} of their {given:,} input tokens "
                f"({100 * read / given if given else 0:.1f} %) were cache reads.",
                action="Keep the long, unchanging part of the prompt (system prompt, tool "
                "definitions) first and identical between calls, and turn on the provider's "
                "prompt caching (Anthropic: cache_control; OpenAI caches prefixes of 1,024+ "
                "tokens by itself).",
                affected={"agent": agent, "model": model, "prompt": key},
                samples=[c.event_id for c in calls],
                current={"cache_hit_rate_pct": round(100 * read / given, 2) if given else 0.0},
                recommended={"cache_read_tokens": repeated},
                **ctx,
            )
        )
    return out


def _model_rule(found: Scan, prices: PriceTable, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[Call]] = defaultdict(list)
    for call in found.calls:
        if call.usage and call.model:
            groups[(call.agent, call.model)].append(call)
    out = []
    for (agent, model), calls in groups.items():
        price = prices.lookup(model)
        alternative = price.cheaper_alternative if price else None
        if alternative is None or prices.lookup(alternative) is None or len(calls) < MIN_REPEATS:
            continue
        median = statistics.median(c.usage.output for c in calls if c.usage)
        if median > SHORT_ANSWER_TOKENS:
            continue
        now = sum(cost.total for c in calls if (cost := call_cost(c, prices)) is not None)
        then = sum(
            cost.total for c in calls if (cost := call_cost(c, prices, alternative)) is not None
        )
        tokens = sum(c.usage.input + c.usage.output for c in calls if c.usage)
        out.append(
            _suggestion(
                "model_optimization",
                f"{agent}:{model}",
                title=f"Try {alternative} for the short answers of {model}",
                saving=max(now - then, 0.0),
                tokens=0,
                base_tokens=tokens,
                confidence=70 if len(calls) >= 20 else 50,
                why=f"{len(calls)} calls of {model} answered with a median of {median:g} output "
                f"tokens and cost ${now:.4f}; the same tokens on {alternative} cost ${then:.4f}.",
                action=f"Route short, simple turns (classification, extraction, short replies) "
                f"to {alternative}, and keep {model} where a regression case shows it is needed.",
                affected={"agent": agent, "model": model},
                samples=[c.event_id for c in calls],
                current={"model": model, "cost": round(now, 6), "median_output_tokens": median},
                recommended={"model": alternative, "cost": round(then, 6)},
                **ctx,
            )
        )
    return out


def _truncation_rule(found: Scan, prices: PriceTable, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    cut = [c for c in found.calls if (c.finish_reason or "").lower() in TRUNCATED_REASONS]
    if not cut:
        return []
    tokens = sum(c.usage.output for c in cut if c.usage)
    saving = sum(cost.output for c in cut if (cost := call_cost(c, prices)) is not None)
    all_output = sum(c.usage.output for c in found.calls if c.usage)
    models = sorted({c.model or "unknown" for c in cut})
    return [
        _suggestion(
            "truncation",
            ",".join(models),
            title=f"{len(cut)} answer(s) were cut at the output limit",
            saving=saving,
            tokens=tokens,
            base_tokens=all_output,
            confidence=90,
            why=f"{len(cut)} of {len(found.calls)} model calls ended with finish_reason "
            f"length/max_tokens ({', '.join(models)}); their {tokens:,} output tokens produced "
            "an unfinished answer.",
            action="Raise max_tokens for these calls, or ask for a shorter answer (a format, "
            "a word limit) so the answer fits; a cut answer is often retried in full.",
            affected={"models": models},
            samples=[c.event_id for c in cut],
            current={"truncated_calls": len(cut)},
            recommended={"truncated_calls": 0},
            **ctx,
        )
    ]


def _tool_rule(found: Scan, prices: PriceTable, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    by_tool: dict[tuple[str, str], list[tuple[str, int, int]]] = defaultdict(list)
    for out in found.tool_outputs:
        if out.chars < LARGE_TOOL_CHARS:
            continue
        reads = later_calls(found, out.session_id, out.timestamp)
        if reads:
            by_tool[(out.agent, out.tool)].append((out.event_id, out.chars, reads))
    models = [c for c in found.calls if c.usage and c.model and prices.lookup(c.model)]
    price = prices.lookup(models[-1].model) if models else None
    all_input = sum(c.usage.input for c in found.calls if c.usage)
    out_list = []
    for (agent, tool), results in by_tool.items():
        extra = sum(
            (chars - TRIMMED_TOOL_CHARS) // CHARS_PER_TOKEN * reads for _, chars, reads in results
        )
        saving = extra * price.input / PER_TOKENS if price else 0.0
        largest = max(chars for _, chars, _ in results)
        out_list.append(
            _suggestion(
                "tool_output_size",
                f"{agent}:{tool}",
                title=f"Trim the output of tool {tool} before the model reads it",
                saving=saving,
                tokens=extra,
                base_tokens=all_input,
                confidence=60,
                why=f"{len(results)} result(s) of {tool} were over {LARGE_TOOL_CHARS:,} "
                f"characters (largest {largest:,}) and were re-read by "
                f"{sum(r for *_, r in results)} later model call(s) of their sessions.",
                action="Return only the fields the agent uses (or a summary) from this tool, "
                "or page its output.",
                affected={"agent": agent, "tool": tool},
                samples=[event_id for event_id, _, _ in results],
                current={"largest_chars": largest},
                recommended={"max_chars": TRIMMED_TOOL_CHARS},
                **ctx,
            )
        )
    return out_list


def _context(found: Scan, prices: PriceTable) -> tuple[float, dict[str, Any]]:
    total = sum(cost.total for c in found.calls if (cost := call_cost(c, prices)) is not None)
    since, until = (datetime.fromisoformat(v) for v in (found.window.since, found.window.until))
    days = max((until - since).total_seconds() / 86400, 1 / 24)
    return total, {"total_cost": total, "month_factor": 30 / days}


def token_optimization(found: Scan, prices: PriceTable) -> dict[str, Any]:
    """The token rules over the window, largest saving first, with aggregates."""
    total, ctx = _context(found, prices)
    suggestions = [
        s
        for rule in (_cache_rule, _model_rule, _truncation_rule, _tool_rule)
        for s in rule(found, prices, ctx)
    ]
    suggestions.sort(key=lambda s: (-s["estimated_savings_usd"], s["id"]))
    saving = sum(s["estimated_savings_usd"] for s in suggestions)
    tokens = sum(c.usage.input + c.usage.output for c in found.calls if c.usage)
    reduction = sum(s["estimated_token_reduction"] for s in suggestions)
    cost_pct = round(min(100 * saving / total, 100.0), 2) if total else 0.0
    return {
        "agent": found.window.agents[0] if found.window.agents else None,
        "status": "ok" if found.calls else "no_data",
        "period": {"from": found.window.since, "to": found.window.until},
        "generated_at": datetime.now(UTC).isoformat(timespec="microseconds"),
        "suggestions": suggestions,
        "aggregates": {
            "total_cost": round(total, 6),
            "total_potential_savings_usd": round(saving, 6),
            "total_potential_monthly_savings_usd": round(saving * ctx["month_factor"], 6),
            "potential_token_reduction_pct": round(min(100 * reduction / tokens, 100.0), 2)
            if tokens
            else 0.0,
            "cost_reduction_pct": cost_pct,
            "optimization_score": round(100 - cost_pct),
            "suggestion_count": len(suggestions),
            "critical_count": sum(1 for s in suggestions if s["severity"] == "high"),
        },
        "unpriced_models": sorted(
            {c.model for c in found.calls if c.model and prices.lookup(c.model) is None}
        ),
        "meta": {
            "model_calls": len(found.calls),
            "events_read": len(found.events),
            "truncated": found.truncated,
            "rules": "fixed",
        },
    }


def _reliability(found: Scan) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    pairs = []
    for tool, (results, errors) in sorted(found.tools.items()):
        if results >= MIN_REPEATS and errors * 5 >= results:
            rate = round(100 * errors / results, 2)
            evidence = {
                "id": f"tool_errors:{tool}",
                "category": "reliability",
                "label": f"tool {tool} fails often",
                "summary": f"{errors} of {results} results of tool {tool} were errors ({rate} %).",
                "metrics": {"results": results, "errors": errors, "error_rate_pct": rate},
                "samples": [],
                "strength": min(100, 40 + results),
            }
            suggestion = {
                "title": f"Make tool {tool} fail less often",
                "category": "reliability",
                "severity": "high" if rate >= 50 else "medium",
                "confidence": evidence["strength"],
                "evidence": [evidence["id"]],
                "recommendation": f"Look at the tool_error events of {tool} (why() on one shows "
                "the call and the model output that asked for it): validate its arguments "
                "before the call, or retry the transient failures.",
                "expected_impact": f"fewer failed steps ({errors} in this period)",
            }
            pairs.append((evidence, suggestion))
    return pairs


def improvement_suggestions(found: Scan, prices: PriceTable) -> dict[str, Any]:
    """The token suggestions and the reliability findings in the reference's suggestion shape
    (``evidence`` holds the facts, each suggestion names the evidence it rests on)."""
    tokens = token_optimization(found, prices)
    pairs = _reliability(found)
    for s in tokens["suggestions"]:
        evidence = {
            "id": s["id"],
            "category": s["category"],
            "label": s["title"],
            "summary": s["why"],
            "metrics": {**s["current_state"], "estimated_savings_usd": s["estimated_savings_usd"]},
            "samples": s["samples"],
            "strength": s["confidence_score"],
        }
        suggestion = {
            "title": s["title"],
            "category": "cost",
            "severity": s["severity"],
            "confidence": s["confidence_score"],
            "evidence": [s["id"]],
            "recommendation": s["recommended_action"],
            "expected_impact": f"about ${s['estimated_savings_usd']:.4f} in this period "
            f"({s['estimated_token_reduction']:,} tokens)",
        }
        pairs.append((evidence, suggestion))
    return {
        "agent": tokens["agent"],
        "status": "ok" if pairs else "no_evidence",
        "period": tokens["period"],
        "model": None,
        "generated_by": "rules",
        "generated_at": tokens["generated_at"],
        "suggestions": [s for _, s in pairs],
        "evidence": [e for e, _ in pairs],
        "meta": {"events": len(found.events), "truncated": found.truncated, "cached": False},
    }
