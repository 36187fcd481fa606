"""The cost limit of one collation: regions summed over its witnesses, and region pairs to score.

Every region is described once by the backbone (about 0.15 s of CPU and 1 MB of features with
efficientnet-lite0), and every pair of witnesses scores pairs of their regions: all of them, or with
``candidates`` at most ``candidates x (n_a + n_b)`` per pair of witnesses, each under every
transposition tried. Two settings bound them, ``COLLATION_MAX_REGIONS_TOTAL`` and
``COLLATION_MAX_PAIRS`` (issue 31: one POST of 5,000 copies of one box held the only worker for
over ten minutes, and 32 witnesses may each have 5,000 regions).

Both figures only grow as the regions of more witnesses become known, so the figure of the known
ones is a lower bound, and a collation over the limit is refused as soon as it is known:

- at submission, from the regions the request lists (a 422 naming the limit and the figures, before
  anything is stored or enqueued; ``collation.service.collations.submit``);
- when a manuscript's regions are read from its manifest (annotations, detection), by its prepare
  step, and again by the features and plan steps (two prepare steps that end together may each miss
  the other's): the collation fails with the same message before more work starts
  (``collation.jobs.steps``).

Pure functions of counts and options: tested without Redis or a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

from collation.core.options import CollationOptions


def pairs_upper_bound(counts: Mapping[int, int], options: CollationOptions) -> int:
    """Region pairs scored for witnesses of ``counts`` (index -> regions), times the transpositions
    a pair is scored under at most: every pair, or at most ``candidates x (n_a + n_b)`` per pair of
    witnesses when pruned."""
    total = 0
    for a, b in combinations(sorted(counts), 2):
        n_a, n_b = counts[a], counts[b]
        pairs = n_a * n_b
        if options.pruned:
            pairs = min(pairs, options.candidates * (n_a + n_b))
        total += pairs
    return total * options.scored_transpositions


def over_budget(counts: Mapping[int, int], options: CollationOptions, max_regions: int, max_pairs: int) -> str | None:
    """Why witnesses with these region counts (index -> regions; those of other witnesses unknown yet)
    are over the limits, naming the setting and the figures; None when they are within them."""
    regions = sum(counts.values())
    listed = ", ".join(f"{n} in manuscript {m}" for m, n in sorted(counts.items()))
    if regions > max_regions:
        return (
            f"{regions} regions ({listed}) are more than the {max_regions} one collation may describe "
            "(COLLATION_MAX_REGIONS_TOTAL): fewer regions or fewer manuscripts"
        )
    pairs = pairs_upper_bound(counts, options)
    if pairs > max_pairs:
        how = f"at most {options.candidates} candidates per region" if options.pruned else "every pair"
        return (
            f"{pairs} region pairs to score ({listed}; {how}, {options.scored_transpositions} transposition(s)) are "
            f"more than the {max_pairs} one collation may score (COLLATION_MAX_PAIRS): fewer regions, fewer "
            "manuscripts or fewer candidates"
        )
    return None


def given_counts(regions: Mapping[str, object]) -> dict[int, int]:
    """The region counts a request's ``regions`` lists (a list per manuscript index); others are unknown."""
    return {int(m): len(spec) for m, spec in regions.items() if isinstance(spec, list)}
