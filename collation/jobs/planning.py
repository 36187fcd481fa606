"""Which steps a collation needs next, decided from what the data store holds: pure functions.

``next_steps`` looks only at its arguments (the record, the prepared manuscripts, the steps that
failed for good, and four questions about cached work: features, scores, chunks and candidate pairs),
so it is tested without Redis or files; ``collation.jobs.scheduling.Scheduler`` asks the store, calls
it, and enqueues what it returns.

The graph it plans:

```text
prepare m (io) ──▶ features m (compute) ──▶ plan (io) ──▶ chunk a b k (compute) ──▶ finalize (io)
```

With the ``candidates`` option set, the ``plan`` step also computes the candidate pairs of each
manuscript pair from the cached features (``collation.engine.candidates``) and stores them; the chunks of a
pair are then slices of its candidate list, so a pair's chunk count is only known once its candidates
are stored. A pair whose candidates are missing plans the ``plan`` step (again) instead of chunks.

With the ``transpositions`` option, the ``features m`` step of a manuscript that can be the second of
a pair (m > 0) also stores its transposed features; it is planned until both sets are stored
(``store.records.feature_keys``).

A manuscript that cannot be prepared or described is left out (its step failure is an error of the
manuscript); a pair chunk or the final step that fails for good fails the collation, and so do
fewer than two usable manuscripts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from collation.core.options import CollationOptions
from collation.core.vocabulary import CollationStatus
from collation.store.records import CollationRecord, chunk_count, feature_keys, pair_key
from collation.store.stepnames import Step
from collation.store.stored import PreparedManuscript

FAILED = CollationStatus.FAILED.value
"""The stage of a plan that fails the collation (the status it ends with)."""

HaveFeatures = Callable[[str], bool]
"""Whether features of this key are in the store."""
HaveScores = Callable[[str], bool]
"""Whether the score matrix of this pair key is in the store."""
HaveChunk = Callable[[str, int, int], bool]
"""Whether chunk ``k`` (of ``chunk_pairs`` pairs) of this pair key is in the store."""
PairCount = Callable[[str], int | None]
"""How many candidate pairs the store holds for this pair key (None: not computed yet)."""


@dataclass(frozen=True)
class Planned:
    """A step to run once every step of ``after`` has ended (with or without success)."""

    step: Step
    after: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Plan:
    """What a collation needs next.

    Attributes:
        stage: ``preparing``, ``scoring`` or ``finalizing`` while steps remain; ``failed`` when the
            collation must fail (``failure`` says why); the record's status when it already ended.
        steps: the steps to make sure are queued, parents before the steps that wait for them.
        failure: the message to fail the collation with, or None.
    """

    stage: str
    steps: tuple[Planned, ...] = ()
    failure: str | None = None


def usable_manuscripts(docs: Sequence[PreparedManuscript | None], failures: Mapping[Step, str]) -> list[int]:
    """Manuscripts with region images whose features did not fail: those that are compared."""
    return [m for m, doc in enumerate(docs) if doc is not None and doc.usable and Step.features(m) not in failures]


def pairs_to_score(options: CollationOptions, key: str, n0: int, n1: int, pair_count: PairCount | None) -> int | None:
    """Pairs that a manuscript pair's chunks score: all n0 x n1 without pruning, else its stored
    candidate pairs (None while they are not computed; ``pair_count`` None: every pair)."""
    if not options.pruned or pair_count is None:
        return n0 * n1
    return pair_count(key)


def next_steps(
    record: CollationRecord,
    docs: Sequence[PreparedManuscript | None],
    failures: Mapping[Step, str],
    have_features: HaveFeatures,
    have_scores: HaveScores,
    have_chunk: HaveChunk,
    pair_count: PairCount | None = None,
) -> Plan:
    """The steps a collation needs next, or that it must fail.

    Args:
        record: the collation's record (``status``, ``options``, ``chunk_pairs``, ``request``).
        docs: the prepared manuscript of each input (None: not prepared yet).
        failures: the steps that failed for good, with their messages.
        have_features, have_scores, have_chunk: what cached work the store holds.
        pair_count: the number of stored candidate pairs of a pair key (None: not computed); left
            out, every pair is scored (as without pruning).

    Returns:
        The plan; enqueueing its steps again changes nothing (job ids derive from the steps).
    """
    if record.terminal:
        return Plan(record.status)
    options = record.options
    preparing = _manuscript_steps(options, docs, failures, have_features)
    if preparing:
        return Plan("preparing", (*preparing, Planned(Step.plan(), tuple(p.step for p in preparing))))

    ready = usable_manuscripts(docs, failures)
    if len(ready) < 2:
        return Plan(FAILED, failure=f"fewer than two manuscripts could be read ({len(ready)} of {len(docs)})")

    chunks: list[Planned] = []
    chunk_pairs = record.chunk_pairs
    missing_candidates = False
    for a, b in combinations(ready, 2):
        key = pair_key(options, docs[a].features_key, docs[b].features_key)
        if have_scores(key):
            continue
        count = pairs_to_score(options, key, len(docs[a].regions), len(docs[b].regions), pair_count)
        if count is None:
            missing_candidates = True
            continue
        for k in range(chunk_count(count, chunk_pairs)):
            step = Step.chunk(a, b, k)
            if have_chunk(key, chunk_pairs, k):
                continue
            if step in failures:
                return Plan(FAILED, failure=f"scoring manuscripts {a} and {b} failed: {failures[step]}")
            chunks.append(Planned(step))

    if missing_candidates:  # the plan step computes them, then plans the rest
        return Plan("scoring", (*chunks, Planned(Step.plan())))
    if Step.finalize() in failures:
        return Plan(FAILED, failure=f"finalizing failed: {failures[Step.finalize()]}")
    finalize = Planned(Step.finalize(), tuple(c.step for c in chunks))
    return Plan("scoring" if chunks else "finalizing", (*chunks, finalize))


def _manuscript_steps(
    options: CollationOptions,
    docs: Sequence[PreparedManuscript | None],
    failures: Mapping[Step, str],
    have_features: HaveFeatures,
) -> list[Planned]:
    """Prepare and describe the manuscripts that are not ready, unless their step failed for good.

    A manuscript is described once all its feature sets are stored (``feature_keys``: with
    transpositions, the transposed ones too)."""
    steps: list[Planned] = []
    for m, doc in enumerate(docs):
        prepare, features = Step.prepare(m), Step.features(m)
        if doc is None and prepare not in failures:
            steps += [Planned(prepare), Planned(features, (prepare,))]
        elif doc and doc.regions and features not in failures and not _described(options, m, doc, have_features):
            steps.append(Planned(features))
    return steps


def _described(options: CollationOptions, m: int, doc: PreparedManuscript, have_features: HaveFeatures) -> bool:
    """Whether every feature set of manuscript ``m`` is stored (``feature_keys``)."""
    return all(have_features(key) for key in feature_keys(options, m, doc.features_key))


def scoring_progress(
    record: CollationRecord,
    docs: Sequence[PreparedManuscript | None],
    failures: Mapping[Step, str],
    have_scores: HaveScores,
    have_chunk: HaveChunk,
    pair_count: PairCount | None = None,
) -> tuple[int, int]:
    """(done, total): region pairs whose scores are in the store, over all pairs to score (a pair's
    candidate pairs when pruned; all n0 x n1 until they are computed)."""
    ready = usable_manuscripts(docs, failures)
    options = record.options
    chunk_pairs = record.chunk_pairs
    done = total = 0
    for a, b in combinations(ready, 2):
        n0, n1 = len(docs[a].regions), len(docs[b].regions)
        key = pair_key(options, docs[a].features_key, docs[b].features_key)
        count = pairs_to_score(options, key, n0, n1, pair_count)
        count = n0 * n1 if count is None else count
        total += count
        if have_scores(key):
            done += count
        else:
            chunks = sum(have_chunk(key, chunk_pairs, k) for k in range(chunk_count(count, chunk_pairs)))
            done += min(chunks * chunk_pairs, count)
    return done, total
