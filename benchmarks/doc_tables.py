"""Tables the docs quote, printed by a benchmark and put in place by ``run_all.py --update-docs``.

A script prints ``doc_table(name, header, rows)``: a Markdown table between two comment lines
that name it. ``README.md`` and ``docs/pages/benchmarks.md`` hold blocks with the same names.
``run_all.py --update-docs`` merges each block the run printed into every doc that holds it:

* a row replaces the doc's row with the same first cell, a new first cell is appended, and a
  row this run did not measure stays as it was (an ``--only`` run refreshes its own rows);
* every row the run wrote carries the run's date in a last column, ``measured``;
* a block whose columns changed is replaced whole;
* blocks of one name printed in a run (by one script or several, e.g. ``targets``) add their
  rows together when their columns agree; a block with other columns is not used and the run
  exits 1.

Parsing and merging are line by line (no regular expression over a whole document), so their
cost is linear in the size of the docs and the output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

BEGIN = "<!-- measured: {} -->"
END = "<!-- /measured: {} -->"
DATE_COLUMN = "measured"
#: The columns of the table of targets, to which several benchmarks print rows.
TARGET_COLUMNS = ("measure", "agentledger", "reference", "ratio", "target")


def verdict(ratio: float, *, at_least: float | None = None, at_most: float | None = None) -> str:
    """The target cell of a ratio: ``≥ 0.6×: met`` or ``≤ 1.3×: missed``."""
    if at_least is not None:
        return f"≥ {at_least:g}×: {'met' if ratio >= at_least else 'missed'}"
    assert at_most is not None, "a target needs a bound"
    return f"≤ {at_most:g}×: {'met' if ratio <= at_most else 'missed'}"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def doc_table(name: str, header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """The block a benchmark prints for the table ``name`` of the docs."""
    table = Table(list(header), [list(row) for row in rows])
    return "\n".join([BEGIN.format(name), *table.lines(), END.format(name)])


def cells(line: str) -> list[str]:
    """The cells of one Markdown table row, unescaped (``\\|`` is a bar inside a cell)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    out, current, i = [], [], 0
    while i < len(body):
        if body.startswith("\\|", i):  # an escaped bar is part of the cell
            current.append("|")
            i += 2
        elif body[i] == "|":
            out.append("".join(current).strip())
            current = []
            i += 1
        else:
            current.append(body[i])
            i += 1
    out.append("".join(current).strip())
    return out


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [_row(self.header), "|" + "---|" * len(self.header), *map(_row, self.rows)]


def _marker(line: str) -> tuple[str, str] | None:
    """``("begin", name)`` or ``("end", name)`` for a marker line (spacing inside the comment
    is free), ``None`` for any other line."""
    text = line.strip()
    if not (text.startswith("<!--") and text.endswith("-->")):
        return None
    inner = text[4:-3].strip()
    for kind, word in (("end", "/measured:"), ("begin", "measured:")):
        if inner.startswith(word) and inner[len(word) :].strip():
            return kind, inner[len(word) :].strip()
    return None


def _is_fence(line: str) -> bool:
    return line.lstrip().startswith(("```", "~~~"))


def _table(lines: list[str]) -> Table | None:
    rows = [cells(line) for line in lines if line.strip().startswith("|")]
    if len(rows) < 2:
        return None
    return Table(rows[0], rows[2:])


def printed_tables(output: str) -> list[tuple[str, Table]]:
    """Every doc table a script printed, as ``(name, table)`` in the order printed. A block
    left open is ignored (the next opening line starts afresh). A name printed more than once
    appears once per block: the runner decides how blocks of one name combine."""
    found: list[tuple[str, Table]] = []
    name: str | None = None
    body: list[str] = []
    for line in output.splitlines():
        marker = _marker(line)
        if marker is not None and marker[0] == "begin":
            name, body = marker[1], []
        elif name is not None and marker == ("end", name):
            table = _table(body)
            if table is not None:
                found.append((name, table))
            name = None
        elif name is not None:
            body.append(line)
    return found


def merge(old: Table | None, new: Table, date: str) -> Table:
    """``old`` with the rows of ``new`` in place, each new row dated (see the module text).

    A row shorter than the header is padded, so the date stays in its column; of rows with the
    same first cell the last printed wins, and a doc's later copies of a replaced row go."""
    width = len(new.header)
    header = [*new.header, DATE_COLUMN]
    fresh = {row[0]: [*row[:width], *[""] * (width - len(row)), date] for row in new.rows if row}
    if old is None or old.header != header:
        return Table(header, list(fresh.values()))
    rows, placed = [], set()
    for row in old.rows:
        key = row[0] if row else ""
        if key in placed:
            continue  # a duplicate of a row replaced above
        if key in fresh:
            rows.append(fresh[key])
            placed.add(key)
        else:
            rows.append(row)
    return Table(header, rows + [row for key, row in fresh.items() if key not in placed])


@dataclass
class DocUpdate:
    text: str
    updated: list[str]
    error: str | None = None


def update_doc(text: str, tables: dict[str, Table], date: str) -> DocUpdate:
    """``text`` with every block named in ``tables`` merged. Markers inside a fenced code
    block are text, not blocks; any block without its closing line is an error (nothing is
    written). A block holds its table only: the runner rewrites it whole. Line endings are
    kept (``\\r\\n`` or ``\\n``)."""
    crlf = "\r\n" in text
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    updated: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if _is_fence(line):
            fenced = not fenced
        marker = None if fenced else _marker(line)
        if marker is None or marker[0] != "begin":
            continue
        name = marker[1]
        end = i
        while end < len(lines) and _marker(lines[end]) != ("end", name):
            end += 1
        if end == len(lines):
            return DocUpdate(text, [], f"the block {name!r} has no {END.format(name)!r} line")
        if name in tables:
            out += ["", *merge(_table(lines[i:end]), tables[name], date).lines(), ""]
            updated.append(name)
        else:
            out += lines[i:end]
        i = end
    result = "\n".join(out)
    return DocUpdate(result.replace("\n", "\r\n") if crlf else result, updated)
