"""One concordance of many witnesses: groups of corresponding illustrations across all manuscripts.

Plain functions over the per-pair results (NumPy and the standard library only), shared by the
service (``GET /collations/{id}/concordance``) and the command line (``concordance.csv``). The rules
are stated in docs/concordance.md:

- **Verdicts.** An expert's verdict on a pair is one of ``CATEGORIES``: ``exact`` (exact copy),
  ``partial`` (partial copy), ``semantic`` (same subject, different composition) or ``none`` (no
  match); ``confirmed`` and ``rejected`` are accepted as aliases of ``exact`` and ``none``.
- **Links.** Expert links are the pairs with a verdict of a match category; automatic links are the
  cycle-consistent pairs (2-cycles and the pairs of 3-cycles) whose score is at least ``min_score``
  and on which no expert said ``none``.
- **Grouping.** Links are taken in order (expert links first, ``exact`` before ``partial`` before
  ``semantic``; then automatic links by decreasing score) and each one merges the groups of its two
  ends (union-find) unless the merged group would hold two illustrations of one witness, or two
  illustrations an expert said ``none`` about: such a link is skipped. Every illustration left alone
  is a group of its own.
- **Weak links.** An automatic link that is a weak match (raw S under the collation's floor, or a blank
  region: ``collation.engine.weak``) joins nothing: the normalized scores are relative, so unrelated
  images close cycles too, and a group must not rest on scores no true copy has. An illustration left
  alone that such a link would have joined is a *weak* row. Expert links are never weak.
- **Confidence.** Member x of a group of two or more: the mean over the other members y of c(x, y),
  1 for an expert link of a match category, else (P[x, y] / max of x's row + P[x, y] / max of y's
  column) / 2 on the pair's score matrix P (P_S by default), clipped to [0, 1]: 1 when x and y are
  each other's best candidate, lower as other candidates outscore them. A group's confidence is the
  mean of its members'; a lone illustration has none.

Positions are row / column indices of the pair matrices (``(a, b)`` with a < b, rows index a).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from collation.core.errors import InputError
from collation.core.tables import csv_text
from collation.core.vocabulary import CATEGORIES, MATCH_CATEGORIES

CELL_FIELDS = ("index", "label", "canvas", "xywh", "image", "confidence", "verdict")
"""Columns of each witness in the CSV (``<witness> <field>``)."""

Pair = tuple[int, int]


@dataclass(frozen=True)
class PairEvidence:
    """What one manuscript pair (a, b), a < b, says about its illustrations.

    Attributes:
        scores: ``(n_a, n_b)`` the score that ranks links and gives confidences (P_S by default).
        cycles: ``(K, 2)`` cycle-consistent positions (2-cycles and pairs of 3-cycles).
        verdicts: ``{(row, column): category}`` of the experts (the latest verdict per pair).
        weak: ``(n_a, n_b)`` bool, the weak matches (``collation.engine.weak.weak_matches``); None: none.
    """

    scores: np.ndarray
    cycles: np.ndarray
    verdicts: Mapping[Pair, str]
    weak: np.ndarray | None = None


@dataclass(frozen=True)
class Member:
    """One illustration of a group: witness ``manuscript``, row/column ``position`` in its matrices."""

    manuscript: int
    position: int
    confidence: float | None = None
    verdict: str | None = None  # the strongest expert category on its links inside the group


@dataclass(frozen=True)
class Group:
    """Corresponding illustrations, at most one per witness, sorted by witness."""

    members: tuple[Member, ...]
    confidence: float | None = None
    weak: bool = False  # a lone illustration whose cycle-consistent match was weak (module docstring)

    def member(self, manuscript: int) -> Member | None:
        return next((x for x in self.members if x.manuscript == manuscript), None)


def _links(
    evidence: Mapping[Pair, PairEvidence], min_score: float | None
) -> tuple[list[tuple[tuple, Pair, Pair]], set[Pair]]:
    """Every link as (sort key, end 0, end 1), and the ends of the weak links left out; ends are
    (manuscript, position)."""
    out, weak_ends = [], set()
    for (a, b), ev in evidence.items():
        scores = np.asarray(ev.scores, dtype=np.float64)
        weak = np.zeros(scores.shape, dtype=bool) if ev.weak is None else np.asarray(ev.weak, dtype=bool)
        for (i, j), verdict in ev.verdicts.items():
            if verdict in MATCH_CATEGORIES:
                out.append(((0, MATCH_CATEGORIES.index(verdict), 0.0, a, b, i, j), (a, i), (b, j)))
        for i, j in np.asarray(ev.cycles, dtype=np.int64).reshape(-1, 2).tolist():
            if (i, j) in ev.verdicts:
                continue  # the expert's verdict wins
            score = float(scores[i, j])
            if min_score is not None and not score >= min_score:
                continue
            if weak[i, j]:
                weak_ends |= {(a, i), (b, j)}
                continue
            out.append(((1, 0, -score, a, b, i, j), (a, i), (b, j)))
    return sorted(set(out)), weak_ends


def _check(sizes: Mapping[int, int], evidence: Mapping[Pair, PairEvidence]) -> None:
    for (a, b), ev in evidence.items():
        if not a < b or a not in sizes or b not in sizes:
            raise InputError(f"pair {(a, b)} is not (a, b) with a < b of known witnesses", field="evidence")
        if np.shape(ev.scores) != (sizes[a], sizes[b]):
            raise InputError(
                f"scores of pair {(a, b)} have shape {np.shape(ev.scores)}, expected {(sizes[a], sizes[b])}",
                field="evidence",
            )
        if ev.weak is not None and np.shape(ev.weak) != np.shape(ev.scores):
            raise InputError(f"weak matches of pair {(a, b)} have shape {np.shape(ev.weak)}", field="evidence")
        for (i, j), verdict in ev.verdicts.items():
            if verdict not in CATEGORIES:
                raise InputError(f"verdict {verdict!r} of pair {(a, b)} is not a category", field="verdicts")
            if not (0 <= i < sizes[a] and 0 <= j < sizes[b]):
                raise InputError(f"verdict on {(i, j)} is outside pair {(a, b)}", field="verdicts")


def pair_confidence(evidence: Mapping[Pair, PairEvidence], x: tuple[int, int], y: tuple[int, int]) -> float:
    """c(x, y) of the module docstring; x and y are (manuscript, position) of two different witnesses."""
    (m, i), (n, j) = sorted((x, y))
    ev = evidence.get((m, n))
    if ev is None:
        return 0.0
    if ev.verdicts.get((i, j)) in MATCH_CATEGORIES:
        return 1.0
    scores = np.asarray(ev.scores, dtype=np.float64)
    value, row, col = float(scores[i, j]), float(scores[i].max()), float(scores[:, j].max())
    if not math.isfinite(value) or value <= 0:
        return 0.0
    ratio = (value / row if row > 0 else 0.0) + (value / col if col > 0 else 0.0)
    return min(1.0, max(0.0, ratio / 2))


def build_groups(
    sizes: Mapping[int, int], evidence: Mapping[Pair, PairEvidence], min_score: float | None = None
) -> list[Group]:
    """Groups of corresponding illustrations over all witnesses (rules in the module docstring).

    Args:
        sizes: illustrations of each witness (its matrices' side).
        evidence: per pair (a, b), a < b, of those witnesses.
        min_score: automatic links below it are dropped (expert links are kept).

    Returns:
        Every illustration in exactly one group; groups in order of their first member
        (witness, position). Use ``sort_groups`` for another order. A lone illustration that a weak
        link would have joined is a ``weak`` group.
    """
    _check(sizes, evidence)
    group_of: dict[tuple[int, int], int] = {}
    groups: dict[int, dict[int, int]] = {}  # group id -> {manuscript: position}
    refused = {((a, i), (b, j)) for (a, b), ev in evidence.items() for (i, j), v in ev.verdicts.items() if v == "none"}
    links, weak_ends = _links(evidence, min_score)
    for _key, x, y in links:
        gx = group_of.setdefault(x, len(group_of))  # a new illustration gets a new group id
        gy = group_of.setdefault(y, len(group_of))
        gx_members = groups.setdefault(gx, {x[0]: x[1]})
        gy_members = groups.setdefault(gy, {y[0]: y[1]})
        if gx == gy or set(gx_members) & set(gy_members):
            continue
        ends_x, ends_y = list(gx_members.items()), list(gy_members.items())
        if any((min(p, q), max(p, q)) in refused for p in ends_x for q in ends_y):
            continue
        gx_members.update(gy_members)
        for end in ends_y:
            group_of[end] = gx
        del groups[gy]
    out = []
    for members in groups.values():
        ends = sorted(members.items())
        if len(ends) >= 2:
            out.append(_group(evidence, ends))
    grouped = {end for members in groups.values() if len(members) >= 2 for end in members.items()}
    for m, n in sorted(sizes.items()):
        out.extend(Group((Member(m, k),), weak=(m, k) in weak_ends) for k in range(n) if (m, k) not in grouped)
    return sorted(out, key=lambda g: (g.members[0].manuscript, g.members[0].position))


def _group(evidence: Mapping[Pair, PairEvidence], ends: list[tuple[int, int]]) -> Group:
    members = []
    for x in ends:
        others = [y for y in ends if y != x]
        confidence = sum(pair_confidence(evidence, x, y) for y in others) / len(others)
        verdicts = []
        for y in others:
            (m, i), (n, j) = sorted((x, y))
            ev = evidence.get((m, n))
            verdict = ev.verdicts.get((i, j)) if ev else None
            if verdict in MATCH_CATEGORIES:
                verdicts.append(verdict)
        verdict = min(verdicts, key=MATCH_CATEGORIES.index) if verdicts else None
        members.append(Member(x[0], x[1], round(confidence, 6), verdict))
    return Group(tuple(members), round(sum(m.confidence for m in members) / len(members), 6))


def sort_groups(groups: Sequence[Group], by: int, witnesses: Sequence[int]) -> list[Group]:
    """Groups in the order of witness ``by``'s illustrations; groups without one of its illustrations
    come after, in the order of the next witness (``witnesses`` order), and so on."""
    order = [by, *[m for m in witnesses if m != by]]

    def key(group: Group) -> tuple:
        positions = {x.manuscript: x.position for x in group.members}
        return tuple(positions.get(m, math.inf) for m in order)

    return sorted(groups, key=key)


def concordance_csv(rows: Sequence[Mapping[str, Any]], witnesses: Sequence[str]) -> str:
    """The concordance as CSV: ``group``, ``size``, ``confidence``, then ``CELL_FIELDS`` per witness, then
    ``weak`` ("weak" on a lone illustration whose cycle-consistent match was weak; the last column, so that
    the witnesses' columns stay where they were).

    A cell a spreadsheet would run as a formula (a label beginning with ``=``, say) gets a leading
    single quote (``collation.core.tables``).

    Args:
        rows: ``{"id", "size", "confidence", "weak", "cells": [cell or None per witness]}``, each cell a
            mapping with the keys of ``CELL_FIELDS`` (``xywh`` a list, written ``x,y,w,h``).
        witnesses: the column names of the witnesses, in the order of ``cells``.
    """
    return csv_text(with_share_column(concordance_table(rows, witnesses), rows))


SHARE_COLUMN = "view link (IIIF Content State)"
"""The column of each row's ``share`` link, after ``weak``: the row's regions opened side by side."""


def with_share_column(table: list[list[Any]], rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """``table`` (``concordance_table`` of ``rows``) with the column of each row's ``share`` link
    (``SHARE_COLUMN``) at the end, when the rows carry one (the service's do); else as it is."""
    if not any(row.get("share") for row in rows):
        return table
    lines = zip(table[1:], rows, strict=True)
    return [[*table[0], SHARE_COLUMN], *([*line, row.get("share") or ""] for line, row in lines)]


def concordance_table(rows: Sequence[Mapping[str, Any]], witnesses: Sequence[str]) -> list[list[Any]]:
    """The lines of ``concordance_csv`` (a header, then one line per group), as text cells."""
    table: list[list[Any]] = [
        [
            "group",
            "size",
            "confidence",
            *[f"{name} {name_field}" for name in witnesses for name_field in CELL_FIELDS],
            "weak",
        ]
    ]
    for row in rows:
        line = [row["id"], row["size"], _text(row.get("confidence"))]
        for c in row["cells"]:
            line += [_text(c.get(f)) if c else "" for f in CELL_FIELDS]
        table.append([*line, "weak" if row.get("weak") else ""])
    return table


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)
