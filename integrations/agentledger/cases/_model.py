"""The case file: one JSON document per regression case, versioned (``schema_version``).

A pydantic model, so ``Case.model_json_schema()`` is the documented schema and a bad file raises
:class:`CaseError` naming the file and the dotted path of the bad field. Short forms and pass-rate
defaults: ``docs/design/cases.md``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentledger.protocol import LedgerError

__all__ = [
    "SCHEMA_VERSION",
    "ArgMatcher",
    "Case",
    "CaseError",
    "Cassette",
    "ChainHeadRef",
    "Expect",
    "Limit",
    "Lineage",
    "OutcomeCheck",
    "Selection",
    "StepEffects",
    "StubCall",
    "ToolCallCheck",
    "ToolList",
    "case_json_schema",
    "load_case",
    "load_cases",
    "save_case",
]

#: Version of the case file format written by this code. Version 2 added ``lineage``, version 3
#: the turns of a multi-turn case (``turn_answers``, ``StubCall.turn``) and ``history``; files
#: of the older versions still load.
SCHEMA_VERSION: Final = 3

_CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

Rate = Annotated[float, Field(ge=0.0, le=1.0)]

#: An argument matcher: a literal (compared for equality, after JSON normalisation) or one of
#: ``{"$regex": str}``, ``{"$contains": str}``, ``{"$any": true}``, ``{"$approx": number}``.
ArgMatcher = Any


class CaseError(LedgerError, ValueError):
    """A case file or case value is invalid.

    Attributes:
        source: the file (or ``"<case>"``) that was read.
        field: dotted path of the first bad field (``"expect.must_call.0.tool"``), or ``""``
            when the document itself is unreadable (not JSON, not an object).
    """

    def __init__(self, source: str, field: str, message: str) -> None:
        where = f"field '{field}': " if field else ""
        super().__init__(f"{source}: {where}{message}")
        self.source = source
        self.field = field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChainHeadRef(_Strict):
    """The source agent's chain head when the case was exported (``GET /v1/events/chain``)."""

    sequence_no: int
    chain_hash: str


class StubCall(_Strict):
    """One call of a tool in the source session.

    ``order`` is the call's position among all tool calls of the session (0-based); a stub
    answers with ``result``, or raises ``error`` when the source call failed. ``turn``: in a
    multi-turn case, the index in ``inputs`` of the user message whose turn made the call.
    """

    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None
    order: int = Field(ge=0)
    turn: int | None = Field(default=None, ge=0)


class Cassette(_Strict):
    """A vcrpy cassette (YAML, next to the case file) for tools that make HTTP calls.

    The tools named in ``tools`` run their real code during a case run, with every HTTP
    request served from the cassette in record mode ``none`` (a live system is never reached).
    """

    path: str
    tools: list[str] = Field(min_length=1)


class OutcomeCheck(_Strict):
    """A validator of the final answer; exactly one of the kinds is set.

    * ``contains`` / ``not_contains``: substring (``ignore_case`` optional);
    * ``regex``: ``re.search`` (Python syntax);
    * ``json_path`` + ``equals``: the answer parsed as JSON, ``$.a.b[0]`` equals the value;
    * ``similar_to`` + ``threshold``: cosine similarity of embeddings >= threshold (the
      configured endpoint, else the offline model; when neither can compute it the check
      fails, and ``--no-similarity`` turns it off).
    """

    contains: str | None = None
    not_contains: str | None = None
    regex: str | None = None
    json_path: str | None = None
    equals: Any = None
    similar_to: str | None = None
    threshold: Rate = 0.8
    ignore_case: bool = False
    min_pass_rate: Rate | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> OutcomeCheck:
        kinds = [k for k in _OUTCOME_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"exactly one of {', '.join(_OUTCOME_KINDS)} must be set")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as error:
                raise ValueError(f"bad regex {self.regex!r}: {error}") from None
        if self.json_path is not None and not self.json_path.startswith("$"):
            raise ValueError("json_path must start with '$' (e.g. '$.refund.status')")
        return self

    @property
    def kind(self) -> str:
        """Which validator this is (``contains``, ``regex``...)."""
        return next(k for k in _OUTCOME_KINDS if getattr(self, k) is not None)

    @property
    def safety(self) -> bool:
        """``not_contains`` guards against leaking or forbidden text: a safety check."""
        return self.not_contains is not None


_OUTCOME_KINDS = ("contains", "not_contains", "regex", "json_path", "similar_to")


class ToolCallCheck(_Strict):
    """``must_call`` item: the tool was called at least once with matching ``args``.

    ``args`` maps argument names to matchers (:data:`ArgMatcher`); unnamed arguments are
    not checked.
    """

    tool: str = Field(min_length=1)
    args: dict[str, ArgMatcher] | None = None
    min_pass_rate: Rate | None = None


class ToolList(_Strict):
    """``must_call_in_order`` (a subsequence of the calls made) or ``must_not_call``."""

    tools: list[str] = Field(min_length=1)
    min_pass_rate: Rate | None = None


class Limit(_Strict):
    """A numeric ceiling (tokens, calls, milliseconds): the run passes when actual <= value."""

    value: int | float = Field(ge=0)
    min_pass_rate: Rate | None = None


class StepEffects(_Strict):
    """What one tool-call step of the source session affected, by its causal edges.

    ``step`` is the step's position on the source path (:attr:`StubCall.order`); ``steps``
    the later steps whose call was computed, directly or not, from this step's call or result;
    ``answer``: the final answer was too.
    """

    step: int = Field(ge=0)
    steps: list[int] = Field(default_factory=list)
    answer: bool = False


class Lineage(_Strict):
    """The causal lineage of the source session's path (``parent_id`` and ``caused_by``
    edges; the enclosing step, ``scope_id``, is not a cause).

    ``steps`` holds one :class:`StepEffects` per tool-call step. ``answer_from_input`` says
    whether the final answer descends from a user message along those edges; when it does not,
    the session was logged without causes (or they were cut), and the effects listed may be
    fewer than the real ones.
    """

    steps: list[StepEffects] = Field(default_factory=list)
    answer_from_input: bool = False

    def effects_of(self, step: int) -> StepEffects | None:
        """The effects of source step ``step``, ``None`` when the lineage has no such step."""
        return next((s for s in self.steps if s.step == step), None)


class Selection(_Strict):
    """How the export drew this case's session from the agent's sessions (``cases export
    --sample``, ``--per-stratum`` or ``--fraction``); absent for a session named or found by
    search. Optional, so files without it (and every older file) read as before.

    ``method``: ``proportional``, ``per-stratum`` or ``fraction``, with ``+recency`` when
    weighted by ``half_life_days``; ``seed`` of the draw; ``stratum`` the session's value of
    the label ``stratify_by`` (``"(none)"`` without one, ``"(all)"`` when not stratified);
    ``since``/``until`` the window on the session's last activity (ISO times).
    """

    method: str = Field(min_length=1)
    seed: int
    stratum: str
    stratify_by: str | None = None
    half_life_days: float | None = Field(default=None, gt=0)
    since: str | None = None
    until: str | None = None


def _short_limit(value: Any) -> Any:
    return {"value": value} if isinstance(value, int | float) else value


def _short_list(value: Any) -> Any:
    return {"tools": value} if isinstance(value, list) else value


class Expect(_Strict):
    """What a candidate run must show (every field optional)."""

    outcome: list[OutcomeCheck] = Field(default_factory=list)
    must_call: list[ToolCallCheck] = Field(default_factory=list)
    must_call_in_order: ToolList | None = None
    must_not_call: ToolList | None = None
    max_added_input_tokens: Limit | None = None
    max_output_tokens: Limit | None = None
    max_tool_calls: Limit | None = None
    max_duration_ms: Limit | None = None
    min_pass_rate: Rate = 1.0
    #: accept a final answer cut at a token limit (``finish_reason`` ``length``...); by
    #: default such a run fails the safety check ``answer:not_truncated``
    allow_truncation: bool = False

    @field_validator("must_call", mode="before")
    @classmethod
    def _short_must_call(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"tool": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("must_call_in_order", "must_not_call", mode="before")
    @classmethod
    def _short_tools(cls, value: Any) -> Any:
        return _short_list(value)

    @field_validator(
        "max_added_input_tokens",
        "max_output_tokens",
        "max_tool_calls",
        "max_duration_ms",
        mode="before",
    )
    @classmethod
    def _short_limits(cls, value: Any) -> Any:
        return _short_limit(value)


class Case(_Strict):
    """One regression case (file format version :data:`SCHEMA_VERSION`).

    Fields: provenance (``source_session``, ``source_agent``, ``captured_at`` ISO
    time, ``captured_with`` model/config found in the session, ``cause_category``,
    ``labels``, ``subject_ref`` an opaque reference an erasure request can search for,
    ``chain_head`` of the source at export time, ``selection`` how a sampled export drew the
    session); ``inputs`` the user messages in order; ``history`` messages the conversation
    starts with, before the first input (OpenAI chat format: ``user``, ``assistant`` with
    optional ``tool_calls``, ``tool``); ``turn_answers`` the source's answer to each input of a
    multi-turn case (``None`` where a turn gave none);
    ``context`` retrieved documents or memory given to the agent; ``tool_stubs`` per tool
    name, the calls of the source session; ``cassette``; ``source_answer`` the source's
    final answer (for the divergence report); ``lineage`` which later steps and whether the
    answer descend from each step (version 2; ``None`` in older files); ``expect``.
    """

    schema_version: Literal[1, 2, 3] = SCHEMA_VERSION
    case_id: str = Field(pattern=_CASE_ID)
    source_session: str | None = None
    source_agent: str | None = None
    captured_at: str | None = None
    captured_with: dict[str, Any] = Field(default_factory=dict)
    cause_category: str | None = None
    labels: list[str] = Field(default_factory=list)
    subject_ref: str | None = None
    chain_head: ChainHeadRef | None = None
    selection: Selection | None = None
    inputs: list[str] = Field(min_length=1)
    history: list[dict[str, Any]] = Field(default_factory=list)
    turn_answers: list[str | None] | None = None
    context: list[dict[str, Any]] = Field(default_factory=list)
    tool_stubs: dict[str, list[StubCall]] = Field(default_factory=dict)
    cassette: Cassette | None = None
    source_answer: str | None = None
    lineage: Lineage | None = None
    expect: Expect = Field(default_factory=Expect)

    @field_validator("lineage")
    @classmethod
    def _lineage_needs_version_2(cls, value: Lineage | None, info: ValidationInfo) -> Any:
        if value is not None and info.data.get("schema_version", SCHEMA_VERSION) < 2:
            raise ValueError("lineage needs schema_version 2 or later")
        return value

    @field_validator("history", "turn_answers")
    @classmethod
    def _turns_need_version_3(cls, value: Any, info: ValidationInfo) -> Any:
        if value and info.data.get("schema_version", SCHEMA_VERSION) < 3:
            raise ValueError(f"{info.field_name} needs schema_version 3 or later")
        inputs: list[str] = info.data.get("inputs") or []
        counted = info.field_name == "turn_answers" and value is not None and bool(inputs)
        if counted and len(value) != len(inputs):
            raise ValueError(f"{len(value)} answers for {len(inputs)} inputs")
        return value

    @field_validator("tool_stubs")
    @classmethod
    def _stub_turns(cls, value: dict[str, list[StubCall]], info: ValidationInfo) -> Any:
        count = len(info.data.get("inputs") or [])
        for calls in value.values():
            for call in calls:
                if call.turn is None:
                    continue
                if info.data.get("schema_version", SCHEMA_VERSION) < 3:
                    raise ValueError("a call's turn needs schema_version 3 or later")
                if call.turn >= count:
                    raise ValueError(f"turn {call.turn} of a case with {count} inputs")
        return value

    def source_path(self) -> list[tuple[str, dict[str, Any]]]:
        """The source session's tool calls in order: ``[(tool, args), ...]``."""
        calls = [(c.order, name, c.args) for name, cs in self.tool_stubs.items() for c in cs]
        return [(name, args) for _, name, args in sorted(calls, key=lambda c: c[0])]

    @classmethod
    def parse(cls, document: Any, source: str = "<case>") -> Case:
        """Validate a decoded JSON document.

        Raises:
            CaseError: naming ``source`` and the first bad field.
        """
        if not isinstance(document, dict):
            raise CaseError(source, "", f"a case is a JSON object, not {type(document).__name__}")
        try:
            return cls.model_validate(document)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise CaseError(source, field, first["msg"]) from None


def case_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a case file."""
    schema = Case.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"agentledger regression case v{SCHEMA_VERSION}"
    return schema


def load_case(path: str | Path) -> Case:
    """Read and validate one case file.

    Raises:
        CaseError: unreadable file, not JSON, or a bad field (named).
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CaseError(source, "", f"cannot read: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CaseError(source, "", f"not valid JSON: {error}") from None
    return Case.parse(document, source)


def load_cases(directory: str | Path) -> list[tuple[Path, Case]]:
    """Every ``*.json`` case under ``directory`` (recursively, sorted by path).

    A single file may be given instead of a directory.

    Raises:
        CaseError: the directory is missing or empty, or a file is invalid.
    """
    root = Path(directory)
    if root.is_file():
        return [(root, load_case(root))]
    if not root.is_dir():
        raise CaseError(str(root), "", "no such case file or directory")
    files = sorted(p for p in root.rglob("*.json") if not p.name.startswith("."))
    if not files:
        raise CaseError(str(root), "", "no *.json case files found")
    cases = [(p, load_case(p)) for p in files]
    seen: dict[str, Path] = {}
    for path, case in cases:
        if case.case_id in seen:
            raise CaseError(str(path), "case_id", f"duplicate of {seen[case.case_id]}")
        seen[case.case_id] = path
    return cases


def save_case(case: Case, path: str | Path) -> Path:
    """Write a case as indented JSON (atomically: a temp file renamed over the target)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(case.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(target)
    return target
