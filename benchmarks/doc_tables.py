"""Tables the docs quote, printed by a benchmark and put in place by ``run_all.py --update-docs``.

A script prints ``doc_table(name, header, rows)``: a Markdown table between two comment lines
that name it. ``README.md`` and ``docs/pages/benchmarks.md`` hold blocks with the same names.
``run_all.py --update-docs`` merges each block the run printed into every doc that holds it:

* a row replaces the doc's row with the same first cell, a new first cell is appended, and a
  row this run did not measure stays as it was (an ``--only`` run refreshes its own rows);
* every row the run wrote carries the run's date in a last column, ``measured``;
* a block whose columns changed is replaced whole.

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
    lines = [BEGIN.format(name), _row(header), "|" + "---|" * len(header)]
    lines += [_row(row) for row in rows]
    return "\n".join([*lines, END.format(name)])


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


def _name(line: str, template: str) -> str | None:
    prefix, suffix = template.split("{}")
    text = line.strip()
    if text.startswith(prefix) and text.endswith(suffix) and len(text) > len(prefix + suffix):
        return text[len(prefix) : -len(suffix)].strip()
    return None


def _table(lines: list[str]) -> Table | None:
    rows = [cells(line) for line in lines if line.strip().startswith("|")]
    if len(rows) < 2:
        return None
    return Table(rows[0], [row for row in rows[2:]])


def printed_tables(output: str) -> dict[str, Table]:
    """Every doc table a script printed, by name (a block left open is ignored)."""
    found: dict[str, Table] = {}
    name: str | None = None
    body: list[str] = []
    for line in output.splitlines():
        if name is None:
            name = _name(line, BEGIN)
            body = []
        elif _name(line, END) == name:
            table = _table(body)
            if table is not None:
                found[name] = table
            name = None
        else:
            body.append(line)
    return found


def merge(old: Table | None, new: Table, date: str) -> Table:
    """``old`` with the rows of ``new`` in place, each new row dated (see the module text)."""
    header = [*new.header, DATE_COLUMN]
    fresh = {row[0]: [*row, date] for row in new.rows}
    if old is None or old.header != header:
        return Table(header, list(fresh.values()))
    rows = [fresh.pop(row[0], row) for row in old.rows]
    return Table(header, rows + list(fresh.values()))


@dataclass
class DocUpdate:
    text: str
    updated: list[str]
    error: str | None = None


def update_doc(text: str, tables: dict[str, Table], date: str) -> DocUpdate:
    """``text`` with every block named in ``tables`` merged; an unclosed block is an error."""
    out: list[str] = []
    updated: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        name = _name(line, BEGIN)
        i += 1
        if name is None or name not in tables:
            continue
        start = i
        while i < len(lines) and _name(lines[i], END) != name:
            i += 1
        if i == len(lines):
            return DocUpdate(text, [], f"the block {name!r} has no {END.format(name)!r} line")
        merged = merge(_table(lines[start:i]), tables[name], date)
        out += ["", *merged.lines(), ""]
        updated.append(name)
    return DocUpdate("\n".join(out), updated)
