"""What ``collate match`` writes of a collation: the matrices, ``collation.json``, ``correspondences.json``
and ``concordance.csv`` of a ``CollationResult`` (``collation.engine.pipeline.run_collation``).

Every correspondence passes through the one shape of ``collation.core.correspondence`` and is written
in the command line's own format at the end (``match_row``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from collation import __version__
from collation.core.atomic import write_bytes, write_json, write_npy
from collation.core.correspondence import Correspondence, Side
from collation.core.options import CollationOptions
from collation.engine.concordance import PairEvidence, build_groups, concordance_csv
from collation.engine.pipeline import CollationResult
from collation.engine.transpositions import winner_names
from collation.engine.weak import weak_matches


def pair_name(result: CollationResult, a: int, b: int) -> str:
    return f"{result.manuscripts[a].name}-{result.manuscripts[b].name}"


def weak_links(result: CollationResult, a: int, b: int) -> np.ndarray:
    """``(n_a, n_b)`` bool: the weak matches of manuscripts a and b (``collation.engine.weak``): raw S not
    clearly above the pair's own null and not held by clear matches beside it in both orders (or under the
    options' fixed floor), or a blank illustration."""
    blank = result.blank or [None] * len(result.manuscripts)
    pr = result.pairs[(a, b)]
    cycles = np.concatenate([pr.two_cycles, pr.three_cycles]) if result.options.learns_floor else None
    return weak_matches(pr.S, result.options.floor, blank[a], blank[b], cycles=cycles)


def best_matches(result: CollationResult, a: int, b: int) -> list[Correspondence]:
    """For each illustration of manuscript a, its best match in b by P_S, with all three scores, the
    cycles it closes, whether it is weak and, with transpositions, the transposition of the match that
    gave S (docs/transpositions.md). An illustration's index is its position, so ``region`` is the position."""
    pr, turned = result.pairs[(a, b)], result.transposed.get((a, b))
    weak = weak_links(result, a, b)
    two, three = ({tuple(p) for p in cycles.tolist()} for cycles in (pr.two_cycles, pr.three_cycles))
    names = None if turned is None else winner_names(turned, result.options.transpositions)
    matches = []
    for i, j in enumerate(pr.P_S.argmax(axis=1).tolist() if pr.P_S.size else []):
        cycles = frozenset(n for n, found in ((2, two), (3, three)) if (i, j) in found)
        matches.append(
            Correspondence(
                source=Side(a, i, i),
                target=Side(b, j, j),
                S=float(pr.S[i, j]),
                N_S=float(pr.N_S[i, j]),
                P_S=float(pr.P_S[i, j]),
                rank=1,
                cycle_consistent=bool(cycles),
                cycles=cycles,
                transposition=None if names is None else str(names[i, j]),
                weak=bool(weak[i, j]),
            )
        )
    return matches


def match_row(result: CollationResult, c: Correspondence) -> dict:
    """A correspondence as ``correspondences.json`` writes it: ``index`` is the illustration's position."""

    def end(side: Side) -> dict:
        return {"index": side.position, "id": result.manuscripts[side.manuscript].illustrations[side.position].id}

    row = {"source": end(c.source), "match": end(c.target), "S": c.S, "N_S": c.N_S, "P_S": c.P_S}
    row.update(two_cycle=2 in c.cycles, three_cycle=3 in c.cycles, weak=c.weak)
    if c.transposition is not None:
        row["transposition"] = c.transposition
    return row


def correspondences(result: CollationResult, a: int, b: int) -> list[dict]:
    """For each illustration of manuscript a, its best match in b by P_S, as ``correspondences.json`` lists it."""
    return [match_row(result, c) for c in best_matches(result, a, b)]


def concordance_rows(result: CollationResult) -> list[dict]:
    """The concordance of all manuscripts (``collation.engine.concordance``, P_S and the 2- and 3-cycles), one row
    per group in the order of the first manuscript, cells as in the service's ``concordance.csv``:
    label = the illustration's id, canvas = its folio or file, image = its file when it has one. Weak
    links join no group (``weak_links``)."""
    sizes = {m: len(ms.illustrations) for m, ms in enumerate(result.manuscripts)}
    evidence = {
        pair: PairEvidence(pr.P_S, np.concatenate([pr.two_cycles, pr.three_cycles]), {}, weak_links(result, *pair))
        for pair, pr in result.pairs.items()
    }
    rows = []
    for group in build_groups(sizes, evidence):
        cells: list[dict | None] = []
        for m, manuscript in enumerate(result.manuscripts):
            member = group.member(m)
            if member is None:
                cells.append(None)
                continue
            ill = manuscript.illustrations[member.position]
            source = ill.source or {}
            cells.append(
                {
                    "index": member.position,
                    "label": ill.id,
                    "canvas": source.get("folio") or source.get("file"),
                    "xywh": source.get("xywh"),
                    "image": source.get("file"),
                    "confidence": member.confidence,
                    "verdict": None,
                }
            )
        first = group.members[0]
        rows.append(
            {
                "id": f"{first.manuscript}-{first.position}",
                "size": len(group.members),
                "confidence": group.confidence,
                "weak": group.weak,
                "cells": cells,
            }
        )
    return rows


def recorded_options(options: CollationOptions) -> dict:
    """The options as ``collation.json`` has always recorded them: every option but ``partial`` and
    ``transpositions``, which are there when set, with the transpositions' names; and ``weak_below``, the
    floor of raw S that was applied (``CollationOptions.floor``: the calibrated one when unset)."""
    recorded = {
        name: getattr(options, name)
        for name in ("backbone", "similarity", "seed", "kernel", "normalization", "propagation", "orientation")
    }
    recorded["candidates"] = options.candidates
    recorded["weak_below"] = options.floor
    if options.partial:
        recorded["partial"] = True
    if options.n_transpositions > 1:
        recorded["transpositions"] = options.transpositions
        recorded["transposition_names"] = list(options.transposition_names)
    return recorded


def write_results(result: CollationResult, out_dir: str | Path) -> Path:
    """Writes each pair's matrices as .npy under ``A-B/``, ``collation.json``, ``correspondences.json`` and
    ``concordance.csv`` (one row per group of corresponding illustrations, one column group per manuscript)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for (a, b), pr in result.pairs.items():
        folder = out / pair_name(result, a, b)
        folder.mkdir(exist_ok=True)
        for name in ("S", "N_S", "P_S"):
            write_npy(folder / f"{name}.npy", getattr(pr, name))
        if (a, b) in result.transposed:
            write_npy(folder / "T.npy", result.transposed[(a, b)])
    write_json(
        out / "collation.json",
        {
            "software": {"name": "image-collation", "version": __version__},
            "options": recorded_options(result.options),
            "torch": torch.__version__,
            "manuscripts": [
                {
                    "name": m.name,
                    "illustrations": [
                        {"index": k, "id": ill.id, "label": ill.label, **ill.source}
                        for k, ill in enumerate(m.illustrations)
                    ],
                }
                for m in result.manuscripts
            ],
            "pairs": [pair_name(result, a, b) for a, b in result.pairs],
        },
    )
    write_json(
        out / "correspondences.json",
        {
            "similarity": result.options.similarity,
            "weak_below": result.options.floor,
            **({"transposition_names": list(result.options.transposition_names)} if result.transposed else {}),
            "pairs": [
                {
                    "pair": [result.manuscripts[a].name, result.manuscripts[b].name],
                    "two_cycles": pr.two_cycles.tolist(),
                    "three_cycles": pr.three_cycles.tolist(),
                    "matches": correspondences(result, a, b),
                }
                for (a, b), pr in result.pairs.items()
            ],
        },
    )
    text = concordance_csv(concordance_rows(result), [m.name for m in result.manuscripts])
    write_bytes(out / "concordance.csv", text.encode("utf-8"))
    return out
