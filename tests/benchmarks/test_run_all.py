"""``benchmarks/run_all.py``, the one entry point of the benchmarks page ("Benchmarks", first
paragraph): every script in turn, its table as printed, a summary, a Markdown report; a
failing script is reported and the others still run; a missing prerequisite is a skip with a
reason. Real subprocesses throughout (real benchmark scripts, and small scripts written here
for the failure paths)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

RUN_ALL = Path(__file__).resolve().parents[2] / "benchmarks" / "run_all.py"


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN_ALL), *args], capture_output=True, text=True, timeout=timeout
    )


def test_real_scripts_print_their_tables_and_the_report_holds_them(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    result = _run(
        "--quick",
        *("--only", "bench_verify.py", "--only", "bench_redaction.py"),
        *("--only", "bench_otlp.py", "--out", str(report)),
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # the runner's quiet environment (OTEL_SDK_DISABLED) must not empty the OTLP benchmark
    otlp = next(line for line in result.stdout.splitlines() if "POST /v1/traces" in line)
    assert 10 <= float(otlp.split("|")[2].replace(",", "")) < 1e7, otlp
    for row in ("tried: compare the columns in SQL", "redact(), every pattern"):
        assert row in result.stdout
        assert row in report.read_text()
    text = report.read_text()
    assert "| `bench_verify.py` | ok |" in text and "| `bench_redaction.py` | ok |" in text
    assert "load average" in text and "SQLite" in text
    assert text.index("## bench_verify.py") < text.index("## bench_redaction.py")


def test_a_failing_script_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    (tmp_path / "bench_a_broken.py").write_text(
        'import sys\nprint("half a table")\nsys.exit("boom: the server did not start")\n'
    )
    (tmp_path / "bench_b_fine.py").write_text('print("| row | 1.0x |")\n')
    result = _run("--dir", str(tmp_path), "--out", str(tmp_path / "r.md"))
    assert result.returncode == 1
    assert "half a table" in result.stdout and "boom: the server did not start" in result.stdout
    assert "| row | 1.0x |" in result.stdout
    text = (tmp_path / "r.md").read_text()
    assert "| `bench_a_broken.py` | failed (exit 1) |" in text
    assert "| `bench_b_fine.py` | ok |" in text


def test_a_script_over_its_time_is_stopped_and_reported(tmp_path: Path) -> None:
    (tmp_path / "bench_slow.py").write_text(
        'import time\nprint("first row", flush=True)\ntime.sleep(30)\n'
    )
    result = _run("--dir", str(tmp_path), "--timeout", "2", timeout=25)
    assert result.returncode == 1
    assert "failed (timeout 2 s)" in result.stdout
    assert "first row" in result.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("crewai") is not None, reason="CrewAI is installed here"
)
def test_a_missing_prerequisite_is_a_skip_that_says_why(tmp_path: Path) -> None:
    (tmp_path / "bench_crewai.py").write_text('raise SystemExit("must not run")\n')
    result = _run("--dir", str(tmp_path))
    assert result.returncode == 0, result.stdout
    assert "skipped: needs crewai installed" in result.stdout


def test_an_unknown_script_is_refused_by_name() -> None:
    result = _run("--only", "bench_nope.py")
    assert result.returncode == 2
    assert "no such benchmark" in result.stderr and "bench_nope.py" in result.stderr


# -- --update-docs: the README's "Performance" section and the benchmarks page's second
# paragraph (tables between `measured` markers are written by the runner, rows merged by their
# first cell and dated by the run)


def _table_script(rows: list[tuple[str, str]], name: str = "t", header: str = "| m | v |") -> str:
    body = "\n".join(f"| {key} | {value} |" for key, value in rows)
    block = f"<!-- measured: {name} -->\n{header}\n|---|---|\n{body}\n<!-- /measured: {name} -->"
    return f"print({block!r})\n"


DOC = """# A page

Prose that stays.

<!-- measured: t -->

| m | v | measured |
|---|---|---|
| kept | 0 | 2026-01-01 |
| replaced | 9 | 2026-01-01 |

<!-- /measured: t -->

Prose after.
"""


def test_update_docs_merges_rows_by_first_cell_from_every_script_and_dates_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "bench_a.py").write_text(_table_script([("replaced", "1")]))
    (tmp_path / "bench_b.py").write_text(
        _table_script([("new", "a \\| b")]) + _table_script([("x", "1")], name="nowhere")
    )
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 0, result.stdout + result.stderr
    text = doc.read_text()
    today = next(line for line in text.splitlines() if line.startswith("| replaced")).split()[-2]
    assert today != "2026-01-01" and len(today) == 10  # the run's date, YYYY-MM-DD
    assert "| kept | 0 | 2026-01-01 |" in text  # not measured in this run: left as it was
    assert f"| replaced | 1 | {today} |" in text and "| replaced | 9 |" not in text
    assert f"| new | a \\| b | {today} |" in text  # appended, its escaped bar kept
    assert text.index("| kept") < text.index("| replaced") < text.index("| new")
    assert text.startswith("# A page\n\nProse that stays.\n") and text.endswith("Prose after.\n")
    assert "printed but in no doc: nowhere" in result.stdout
    again = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert again.returncode == 0 and doc.read_text() == text  # a second run changes nothing


def test_update_docs_replaces_a_block_whose_columns_changed(tmp_path: Path) -> None:
    (tmp_path / "bench_a.py").write_text(_table_script([("only", "1")], header="| k | w |"))
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    assert _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc)).returncode == 0
    text = doc.read_text()
    assert "| k | w | measured |" in text and "| only | 1 |" in text
    assert "kept" not in text and "replaced" not in text


def test_update_docs_ignores_a_failed_scripts_tables(tmp_path: Path) -> None:
    (tmp_path / "bench_a.py").write_text(
        _table_script([("replaced", "1")]) + 'raise SystemExit("broke after its table")\n'
    )
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 1
    assert doc.read_text() == DOC
    assert f"{doc}: no table measured in this run" in result.stdout


def test_update_docs_leaves_a_doc_with_an_unclosed_block_unwritten(tmp_path: Path) -> None:
    (tmp_path / "bench_a.py").write_text(_table_script([("replaced", "1")]))
    doc = tmp_path / "doc.md"
    broken = DOC.replace("<!-- /measured: t -->\n", "")
    doc.write_text(broken)
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 1
    assert doc.read_text() == broken
    assert "not written" in result.stdout and "<!-- /measured: t -->" in result.stdout


def test_update_docs_refuses_smoke_sizes() -> None:
    result = _run("--quick", "--update-docs", "--only", "bench_verify.py")
    assert result.returncode == 2
    assert "--update-docs writes full-size measurements only" in result.stderr


def test_every_measured_block_of_the_docs_is_closed_and_printed_by_a_benchmark() -> None:
    repo = RUN_ALL.parents[1]
    sources = "".join(path.read_text() for path in (repo / "benchmarks").glob("bench_*.py"))
    printed = set(re.findall(r'doc_table\(\s*"([\w-]+)"', sources))
    seen = set()
    for doc in (repo / "README.md", repo / "docs" / "pages" / "benchmarks.md"):
        text = doc.read_text()
        for name in re.findall(r"^<!-- measured: ([\w-]+) -->$", text, flags=re.M):
            assert f"\n<!-- /measured: {name} -->" in text, (doc.name, name)
            assert name in printed, f"{doc.name}: no benchmark prints the table {name!r}"
            seen.add(name)
    assert {"targets", "client-delivery", "otlp-ingest", "evidence", "lineage"} <= seen


def test_update_docs_leaves_markers_in_code_fences_and_keeps_crlf(tmp_path: Path) -> None:
    """A marker shown as an example in a fenced block is text; a CRLF doc stays CRLF."""
    (tmp_path / "bench_a.py").write_text(_table_script([("replaced", "1")]))
    example = "```markdown\n<!-- measured: t -->\n```\n\n"
    doc = tmp_path / "doc.md"
    doc.write_bytes((example + DOC).replace("\n", "\r\n").encode())
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 0, result.stdout + result.stderr
    text = doc.read_bytes().decode()
    assert text.startswith(example.replace("\n", "\r\n"))  # the example is untouched
    assert "| replaced | 1 |" in text and "\n" not in text.replace("\r\n", "")


def test_an_unclosed_block_in_a_scripts_output_does_not_hide_the_next(tmp_path: Path) -> None:
    (tmp_path / "bench_a.py").write_text(
        'print("<!-- measured: open -->\\n| m | v |")\n' + _table_script([("replaced", "1")])
    )
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "| replaced | 1 |" in doc.read_text()


def test_any_unclosed_block_leaves_the_doc_unwritten(tmp_path: Path) -> None:
    """Even a block this run did not measure: the doc is refused whole."""
    (tmp_path / "bench_a.py").write_text(_table_script([("replaced", "1")]))
    doc = tmp_path / "doc.md"
    broken = DOC + "\n<!-- measured: other -->\n| m | v |\n"
    doc.write_text(broken)
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 1 and doc.read_text() == broken
    assert "'other' has no" in result.stdout


def test_short_rows_and_repeated_first_cells_merge_cleanly(tmp_path: Path) -> None:
    """A row shorter than the header keeps the date in its column; a doc's second copy of a
    replaced row goes."""
    block = "<!-- measured: t -->\n| m | v |\n|---|---|\n| short |\n<!-- /measured: t -->"
    (tmp_path / "bench_a.py").write_text(f"print({block!r})\n")
    doc = tmp_path / "doc.md"
    twice = "| short | 7 | 2026-01-01 |\n| kept | 0 | 2026-01-01 |\n| short | 8 | 2026-01-01 |"
    doc.write_text(DOC.replace("| kept | 0 | 2026-01-01 |", twice))
    assert _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc)).returncode == 0
    rows = [line for line in doc.read_text().splitlines() if line.startswith("| short")]
    assert len(rows) == 1, rows
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert cells[:2] == ["short", ""] and len(cells) == 3 and cells[2] != "2026-01-01"


def test_a_relative_dir_and_a_missing_doc(tmp_path: Path) -> None:
    (tmp_path / "benches").mkdir()
    (tmp_path / "benches" / "bench_a.py").write_text('print("ran")\n')
    result = subprocess.run(
        [sys.executable, str(RUN_ALL), "--dir", "benches"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and "ran" in result.stdout, result.stdout + result.stderr
    missing = _run("--dir", str(tmp_path / "benches"), "--update-docs", "--doc", "nope.md")
    assert missing.returncode == 2 and "no such doc to update: nope.md" in missing.stderr
    assert "ran" not in missing.stdout  # refused before any script ran


def test_blocks_of_one_name_combine_under_one_rule_within_a_script_and_across(
    tmp_path: Path,
) -> None:
    """Two blocks of a name with the same columns add up, in one script as across scripts; a
    block with other columns is refused (exit 1), whichever script printed it."""
    (tmp_path / "bench_a.py").write_text(
        _table_script([("a", "1")])
        + _table_script([("c", "3")])
        + _table_script([("b", "2")], header="| m | w |")
    )
    (tmp_path / "bench_b.py").write_text(
        _table_script([("d", "4")]) + _table_script([("e", "5")], header="| m | x |")
    )
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    result = _run("--dir", str(tmp_path), "--update-docs", "--doc", str(doc))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bench_a.py: table 't' not used, its columns differ" in result.stdout
    assert "bench_b.py: table 't' not used, its columns differ" in result.stdout
    text = doc.read_text()
    assert all(f"| {key} | {value} |" in text for key, value in ("a1", "c3", "d4")), text
    assert "| b |" not in text and "| e |" not in text and "| kept | 0 |" in text
