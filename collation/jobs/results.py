"""From pair score matrices to stored results, and expert assessments folded back into them.

Results of a manuscript pair (a < b) are one .npz: ``S``, ``N_S``, ``P_S`` (n_a, n_b), the
automatic seeds of the propagation (``auto_seeds``), the seeds used (``seeds``: automatic plus
confirmed minus rejected), and the ``two_cycles`` / ``three_cycles`` as (k, 2) region positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .store import DataStore


def pairs_array(value: Any, shape: tuple[int, int] | None = None) -> np.ndarray:
    """(k, 2) int64 row/column positions from a boolean matrix, a list of pairs or an array."""
    if value is None:
        return np.zeros((0, 2), dtype=np.int64)
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype == bool and shape is not None and array.shape == shape:
        return np.argwhere(array).astype(np.int64)
    if isinstance(value, set | frozenset):
        array = np.asarray(sorted(value))
    return array.reshape(-1, 2).astype(np.int64)


def compute_results(scores: dict[tuple[int, int], np.ndarray], options: dict[str, Any]) -> dict:
    """Normalizes, finds cycles and propagates over every pair (``collation.correspondences.collate``).

    Returns:
        ``{(a, b): arrays}`` ready for ``DataStore.save_results``.
    """
    from ..correspondences import collate

    ready = sorted({m for pair in scores for m in pair})
    local = {m: i for i, m in enumerate(ready)}  # collate numbers the manuscripts it is given 0..M-1
    results = collate({(local[a], local[b]): s for (a, b), s in scores.items()},
                      normalization=options["normalization"], propagation=options["propagation"])
    out = {}
    for (a, b), s in scores.items():
        r = results[(local[a], local[b])]
        shape = s.shape
        seeds = pairs_array(getattr(r, "seeds", None), shape)
        out[(a, b)] = {
            "S": np.asarray(r.S, dtype=np.float64),
            "N_S": np.asarray(r.N_S, dtype=np.float64),
            "P_S": np.asarray(r.P_S, dtype=np.float64),
            "two_cycles": pairs_array(getattr(r, "two_cycles", None), shape),
            "three_cycles": pairs_array(getattr(r, "three_cycles", None), shape),
            "auto_seeds": seeds,
            "seeds": seeds,
        }
    return out


def apply_assessments(store: DataStore, cid: str) -> list[tuple[int, int]]:
    """Recomputes P_S of every assessed pair from its stored N_S and seeds; returns those pairs.

    Confirmed correspondences are added to the automatic seeds, rejected ones removed. The caller
    holds the collation's lock (or owns the collation, as ``finalize`` does).
    """
    from ..correspondences import propagate

    verdicts: dict[tuple[int, int], dict[tuple[int, int], str]] = {}
    for item in store.load_assessments(cid):
        a, b = item["pair"]
        i, j = item["source"], item["target"]
        if a > b:
            a, b, i, j = b, a, j, i
        verdicts.setdefault((a, b), {})[(i, j)] = item["verdict"]  # the latest verdict wins
    changed = []
    for (a, b), by_region in verdicts.items():
        res = store.load_results(cid, a, b)
        if res is None:
            continue
        rows = {r["index"]: k for k, r in enumerate(store.load_manuscript(cid, a)["regions"])}
        cols = {r["index"]: k for k, r in enumerate(store.load_manuscript(cid, b)["regions"])}
        seeds = {tuple(p) for p in res["auto_seeds"].tolist()}
        for (i, j), verdict in by_region.items():
            if i not in rows or j not in cols:
                continue
            if verdict == "confirmed":
                seeds.add((rows[i], cols[j]))
            else:
                seeds.discard((rows[i], cols[j]))
        seed_array = np.asarray(sorted(seeds), dtype=np.int64).reshape(-1, 2)
        p_s = np.asarray(propagate(res["N_S"], seed_array), dtype=np.float64)
        res.update(P_S=p_s, seeds=seed_array)
        store.save_results(cid, a, b, **res)
        changed.append((a, b))
    return changed
