"""From pair score matrices to stored results, and expert assessments folded back into them.

Results of a manuscript pair (a < b) are one .npz: ``S``, ``N_S``, ``P_S`` (n_a, n_b), the
automatic seeds of the propagation (``auto_seeds``), the seeds used (``seeds``: automatic plus
the pairs of a match verdict, minus those of a "no match" verdict), and the ``two_cycles`` /
``three_cycles`` as (k, 2) region positions. With transpositions, also ``T``: the (n_a, n_b) int8
index, into the option's transposition names, of the transposition of b's region that gave S
(docs/transpositions.md); plain collations store exactly the arrays they always did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from collation.core.options import CollationOptions
from collation.store.datastore import DataStore
from collation.store.stored import PairResults


def compute_results(
    scores: dict[tuple[int, int], np.ndarray],
    options: CollationOptions,
    winners: dict[tuple[int, int], np.ndarray] | None = None,
) -> list[PairResults]:
    """Normalizes, finds cycles and propagates over every pair (``collation.engine.pipeline.correspond``).

    Args:
        winners: T of each pair scored with transpositions, stored beside S as ``T``.

    Returns:
        The results of every pair, ready for ``DataStore.save_results``.
    """
    from collation.engine.pipeline import correspond

    winners = winners or {}
    return [
        PairResults(
            a,
            b,
            r.S,
            r.N_S,
            r.P_S,
            two_cycles=r.two_cycles,
            three_cycles=r.three_cycles,
            auto_seeds=r.seeds,
            seeds=r.seeds,
            T=np.asarray(winners[(a, b)], dtype=np.int8) if (a, b) in winners else None,
        )
        for (a, b), r in correspond(scores, options).items()
    ]


def apply_assessments(
    store: DataStore, cid: str, pairs: Iterable[tuple[int, int]] | None = None
) -> list[tuple[int, int]]:
    """Recomputes P_S of the assessed manuscript pairs from their stored N_S and seeds; returns those pairs.

    ``pairs``: only these manuscript pairs (a < b), those a new verdict is about: a verdict reads and
    writes the results of its own pair, never the others'. None: every assessed pair (``finalize``).

    Pairs with a verdict of a match category (``exact``, ``partial``, ``semantic``; ``confirmed`` is
    ``exact``) are added to the automatic seeds: the propagation is a prior on the order of the text,
    which a same-subject illustration follows as much as a copy does. Pairs with ``none`` (``rejected``)
    are removed. The caller holds the collation's lock (or owns the collation, as ``finalize`` does).
    """
    from collation.core.vocabulary import is_match
    from collation.engine.correspondences import adjust_seeds, propagate

    verdicts: dict[tuple[int, int], dict[tuple[int, int], str]] = {}
    for item in store.load_assessments(cid):
        pair, i, j = item.ordered()
        verdicts.setdefault(pair, {})[(i, j)] = item.verdict  # the latest verdict wins
    if pairs is not None:
        # a wanted pair with no verdict left (all cleared) goes back to its automatic seeds
        verdicts = {pair: verdicts.get(pair, {}) for pair in set(pairs)}
    changed = []
    for (a, b), by_region in verdicts.items():
        res = store.load_results(cid, a, b)
        if res is None:
            continue
        rows, cols = store.load_manuscript(cid, a).positions(), store.load_manuscript(cid, b).positions()
        known = {(rows[i], cols[j]): v for (i, j), v in by_region.items() if i in rows and j in cols}
        confirmed = [p for p, v in known.items() if is_match(v)]
        rejected = [p for p, v in known.items() if not is_match(v)]
        seed_array = adjust_seeds(res.auto_seeds, confirmed, rejected)
        store.save_results(cid, dataclasses.replace(res, P_S=propagate(res.N_S, seed_array), seeds=seed_array))
        changed.append((a, b))
    return changed
