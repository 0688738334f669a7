"""Every reference in the repository resolves inside the repository.

A reader of this repository must be able to open whatever a comment, docstring, test or page
points at. Three rules, checked over the source roots, tests, examples, benchmarks, the README
and ``docs/``:

(a) no citations of documents that are not in the repository: an outside style guide, paths
    into a ``shared`` folder next to the repository, or tracker issue numbers (the word
    "issue" followed by a number);
(b) a field-case id (``H07``, or ``test_case_h07`` in a test name) only if
    ``docs/pages/field-cases.md`` defines it;
(c) relative markdown links and backticked repository paths (``core_client/.../<module>.py``,
    ``docs/pages/<page>.md``) in the README and ``docs/`` name files that exist; so do paths of
    markdown files under ``docs/`` cited from code.

See ``docs/pages/layout.md`` for the house rules this belongs to.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIELD_CASES = "docs/pages/field-cases.md"

#: Where references are checked (top-level folders and files of the repository).
SCANNED_DIRS = ("core_client", "server", "integrations", "tests", "examples", "benchmarks", "docs")
SCANNED_FILES = ("README.md", "noxfile.py", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".html", ".j2"}
SKIPPED_PARTS = {"site", "__pycache__", "node_modules"}

# -- rule (a): references to documents outside the repository ---------------------------------

OUTSIDE = re.compile(
    r"""
      (?<![\w/.-])style\.md\b                   # a style guide that is not in the repository
    | \bshared/(?:docs|cases)\b                 # the shared input folders
    | (?:\.\./)+shared\b                        # any path climbing out into a shared folder
    | \bissues?[ \t]*(?:\#[ \t]*)?\d+\b         # tracker issue numbers
    """,
    re.IGNORECASE | re.VERBOSE,
)

# -- rule (b): field-case ids -------------------------------------------------------------------

CASE_ID = re.compile(r"(?<![A-Za-z0-9_])H(\d\d)(?![0-9])|\btest_case_h(\d\d)(?![0-9])")
DEFINED_CASE = re.compile(r"^\|\s*(?:<a id=\"h\d\d\"></a>)?H(\d\d)\s*\|", re.MULTILINE)

# -- rule (c): links and paths ------------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
MD_REF_DEF = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
REPO_PATH = re.compile(
    r"^(?:(?:core_client|server|integrations|tests|examples|benchmarks|docs)/[\w./-]*"
    r"|README\.md|pyproject\.toml|noxfile\.py)$"
)
#: A backticked path is checked when it names a file (an extension) or a folder (a final "/"),
#: so names such as the MCP method ``server/discover`` are not taken for paths.
LOOKS_LIKE_PATH = re.compile(r"(?:\.\w+|/)$")
DOCS_PATH_IN_CODE = re.compile(r"(?<![\w/.-])(docs/[\w./-]+\.md)\b")
PLACEHOLDER = re.compile(r"[<>*{}…]|\.\.\.|\bNN\b")


def repo_files() -> list[str]:
    """Text files of the repository that the rules apply to, as POSIX paths from the root."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        listed = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if p.is_file()]
    chosen = []
    for name in listed:
        path = Path(name)
        if path.parts[0].startswith(".venv") or SKIPPED_PARTS.intersection(path.parts):
            continue
        if name not in SCANNED_FILES and path.parts[0] not in SCANNED_DIRS:
            continue
        full = REPO / path
        if path.suffix in TEXT_SUFFIXES and full.is_file() and not full.is_symlink():
            chosen.append(name)
    return sorted(set(chosen))


def defined_cases(text: str) -> set[str]:
    """The ids (``"07"``) that the field-case page defines, one table row each."""
    return set(DEFINED_CASE.findall(text))


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _without_fences(text: str) -> str:
    """``text`` with fenced code blocks blanked (line numbers kept)."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _link_target_missing(target: str, source: Path) -> bool:
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return False  # a URL, an anchor on the same page, or a site-absolute path
    path = target.split("#", 1)[0].split("?", 1)[0]
    return bool(path) and not (source.parent / path).exists()


def _backticked_path_missing(code: str) -> bool:
    path = re.sub(r"(::\w+|:\d+)$", "", code)
    if not REPO_PATH.match(path) or not LOOKS_LIKE_PATH.search(path) or PLACEHOLDER.search(path):
        return False
    return not (REPO / path).exists()


def problems(rel: str, text: str, cases: set[str]) -> Iterator[str]:
    """Every broken reference in one file, as ``"path:line: what"``."""
    for found in OUTSIDE.finditer(text):
        yield f"{rel}:{_line(text, found.start())}: outside reference {found.group(0)!r}"
    for found in CASE_ID.finditer(text):
        number = found.group(1) or found.group(2)
        if number not in cases:
            yield (
                f"{rel}:{_line(text, found.start())}: field case H{number} is not defined in "
                f"{FIELD_CASES}"
            )
    source = REPO / rel
    if rel.endswith(".md"):
        prose = _without_fences(text)
        for pattern in (MD_LINK, MD_REF_DEF):
            for found in pattern.finditer(prose):
                if _link_target_missing(found.group(1), source):
                    yield f"{rel}:{_line(prose, found.start())}: broken link {found.group(1)!r}"
        for found in INLINE_CODE.finditer(prose):
            if _backticked_path_missing(found.group(1).strip()):
                yield f"{rel}:{_line(prose, found.start())}: no such file {found.group(1)!r}"
    else:
        for found in DOCS_PATH_IN_CODE.finditer(text):
            if PLACEHOLDER.search(found.group(1)) is None and not (REPO / found.group(1)).exists():
                yield f"{rel}:{_line(text, found.start())}: no such file {found.group(1)!r}"


# -- examples in the README and docs import names that exist -----------------------------------

SOURCE_ROOTS = ("core_client", "server", "integrations")
PY_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
FROM_IMPORT = re.compile(r"^\s*from\s+(agentledger(?:\.\w+)+)\s+import\s+([\w ,]+)$", re.MULTILINE)


def module_names(dotted: str) -> set[str] | None:
    """Names a module of ours defines or re-exports (read, not imported: the framework of an
    integration need not be installed), or None if no source root holds the module."""
    rel = Path(*dotted.split("."))
    for root in SOURCE_ROOTS:
        for candidate in (REPO / root / rel.with_suffix(".py"), REPO / root / rel / "__init__.py"):
            if candidate.is_file():
                tree = ast.parse(candidate.read_text(encoding="utf-8"))
                names = {p.name for p in (REPO / root / rel).glob("*") if p.suffix in {"", ".py"}}
                names = {n.removesuffix(".py") for n in names}
                for node in ast.walk(tree):
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        names.add(node.name)
                    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        names.add(node.id)
                    elif isinstance(node, ast.alias):
                        names.add(node.asname or node.name.split(".")[0])
                    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                        names.add(node.value)  # __all__ entries and lazy __getattr__ tables
                return names
    return None


def example_import_problems(rel: str, text: str) -> Iterator[str]:
    """``from agentledger... import X`` lines of the python examples that would not import."""
    for block in PY_BLOCK.finditer(text):
        for found in FROM_IMPORT.finditer(block.group(1)):
            module, imported = found.group(1), found.group(2)
            names = module_names(module)
            line = _line(text, block.start(1) + found.start())
            if names is None:
                yield f"{rel}:{line}: example imports the missing module {module}"
                continue
            for name in (n.split(" as ")[0].strip() for n in imported.split(",")):
                if name and name not in names:
                    yield f"{rel}:{line}: example imports {name!r}, which {module} lacks"


FILES = repo_files()
CASES = defined_cases((REPO / FIELD_CASES).read_text(encoding="utf-8"))


@pytest.mark.parametrize("rel", FILES)
def test_references_resolve(rel: str) -> None:
    found = list(problems(rel, (REPO / rel).read_text(encoding="utf-8"), CASES))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("rel", [f for f in FILES if f == "README.md" or f.startswith("docs/")])
def test_examples_import_names_that_exist(rel: str) -> None:
    """The README's examples (``## Quickstart``, ``## Integrations``) and the docs' examples
    import modules and names that the source roots hold."""
    text = (REPO / rel).read_text(encoding="utf-8")
    found = list(example_import_problems(rel, text))
    assert not found, "\n".join(found)


def test_field_case_page_defines_every_case() -> None:
    assert CASES, f"{FIELD_CASES} defines no field case"
    assert {f"{n:02d}" for n in range(1, len(CASES) + 1)} == CASES, "ids are numbered H01.. H<n>"


# -- self-test: each rule catches a planted example and passes legitimate text --------------


@pytest.mark.parametrize(
    "text",
    [
        "# see " + "style" + ".md point 3",
        '"""Rules from ``' + "shared/" + "docs" + '/event-vocabulary.md``."""',
        "[cases](" + "../.." + "/shared" + "/cases/README.md)",
        "# the search worker (" + "issue" + " 3)",
        "Target (" + "Issue" + " #11): met",
        "# field case H" + "99",
        "def test_case_h" + "98_something(): ...",
    ],
)
def test_self_test_planted_reference_is_caught(text: str) -> None:
    assert list(problems("core_client/x.py", text, {"01", "02"}))


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("README.md", "See [the docs](docs/pages/" + "nowhere.md)."),
        ("README.md", "![shot](docs/" + "missing.png)"),
        ("docs/pages/index.md", "[x](" + "missing-page.md#anchor)"),
        ("docs/pages/index.md", "[x]: " + "missing-page.md"),
        ("README.md", "the code is in `core_client/agentledger/" + "nowhere.py`"),
        ("docs/pages/index.md", "read `docs/design/" + "nowhere.md`"),
        ("server/x.py", '"""Why: ``docs/design/' + 'nowhere.md``."""'),
    ],
)
def test_self_test_planted_broken_path_is_caught(rel: str, text: str) -> None:
    assert list(problems(rel, text, set()))


@pytest.mark.parametrize(
    "line",
    [
        "from agentledger.client import " + "NoSuchLedger",
        "from agentledger." + "nowhere import Ledger",
    ],
)
def test_self_test_planted_bad_example_import_is_caught(line: str) -> None:
    assert list(example_import_problems("README.md", f"```python\n{line}\n```\n"))


def test_self_test_good_example_import_passes() -> None:
    text = "```python\nfrom agentledger.client import Ledger, vocabulary as v\n```\n"
    assert not list(example_import_problems("README.md", text))


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("README.md", "A read-only key gets 403; bodies over the limit 413; 5xx are retried."),
        ("README.md", "## H2 headings, <h2>, H264 video and SHA-256 are not field cases."),
        ("README.md", "Field case H01 is defined; so is `test_case_h02_x`."),
        ("README.md", "`issue_refund` and `tool_result_ids` are names; we issue batches."),
        ("README.md", "[site](https://example.org/x.md), [here](#quickstart), [top](/)"),
        ("README.md", "```bash\ncat docs/pages/" + "not-there.md\n```"),
        ("README.md", "a new package `integrations/agentledger/integrations/<framework>/`"),
        ("README.md", "[layout](docs/pages/layout.md) and `tests/test_doc_references.py`"),
        ("README.md", "`tests/examples/test_quickstart.py::test_readme_quickstart`"),
        ("README.md", "its name and version (from `initialize` or `server/discover`)"),
        ("server/x.py", "# shared state; the styles.md of another project; issues remain"),
    ],
)
def test_self_test_legitimate_text_passes(rel: str, text: str) -> None:
    assert not list(problems(rel, text, {"01", "02"}))
