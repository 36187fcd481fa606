"""What each step of a collation does: plain functions of a runtime, a collation id and small integers.

Every step reads its inputs from the data store and writes its output there atomically, and does
nothing when its output already exists, so a step run twice (a retry after a crash, a step
re-enqueued after a Redis restart) costs a little time and changes nothing. Steps that find their
collation deleted or cancelled raise ``Gone`` at the next check; ``collation.jobs.tasks`` (the RQ
entry points) turns that into a normal return. Long computations check between batches (the engine's
progress callback, ``CancellationCheck``), so a DELETE stops a worker within seconds. The prepare,
features and plan steps also fail a collation over its budget (``collation.jobs.budget``); the prepare
step as soon as a manuscript's regions are found, before their images are fetched.

Longer than 400 lines because every step of the graph is here, in the order it runs, each with the
checks (cancellation, budget) it makes between its reads and writes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

import numpy as np
from rq import get_current_job

from collation.core.errors import CollationError, UnsafeURLError
from collation.core.options import CollationOptions
from collation.core.vocabulary import CollationStatus
from collation.jobs import access
from collation.jobs.budget import over_budget
from collation.jobs.planning import usable_manuscripts
from collation.jobs.runtime import Runtime
from collation.jobs.scheduling import Scheduler, update_scoring_progress
from collation.net.http import Fetcher
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import (
    CollationRecord,
    chunk_count,
    feature_keys,
    pair_key,
    second_features_key,
    turned_features_key,
)
from collation.store.stored import PreparedManuscript
from collation.store.transitions import AlreadyEnded, fail, finish, name_by_labels, set_progress

log = logging.getLogger("collation.jobs")

CANCEL_CHECK_SECONDS = 1.0
"""How often a long computation asks the store whether its collation was deleted or cancelled."""


class Gone(Exception):
    """The collation was deleted or cancelled while a job worked on it."""


def live_record(store: DataStore, cid: str) -> CollationRecord:
    """The record of a collation that is still running.

    Raises:
        Gone: deleted, cancelled or already ended.
    """
    try:
        record = store.load_record(cid)
    except CollationNotFound:
        raise Gone(cid) from None
    if record.terminal:
        raise Gone(cid)
    return record


class CancellationCheck:
    """A progress callback for the engine's long loops that raises ``Gone`` once the collation was
    deleted or cancelled, asking the store at most every ``every`` seconds. The engine calls it
    between batches and stops there (it knows nothing of stores or queues)."""

    def __init__(self, store: DataStore, cid: str, every: float = CANCEL_CHECK_SECONDS) -> None:
        self.store, self.cid, self.every = store, cid, every
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if time.monotonic() - self.last >= self.every:
            self.last = time.monotonic()
            live_record(self.store, self.cid)


def check_budget(
    runtime: Runtime,
    record: CollationRecord,
    docs: Iterable[PreparedManuscript | None],
    found: Mapping[int, int] | None = None,
) -> None:
    """Fails the collation, and raises ``Gone``, when the regions read so far (the prepared ``docs``,
    and ``found``: manuscript -> regions found, not fetched yet) are over its budget
    (``COLLATION_MAX_REGIONS_TOTAL``, ``COLLATION_MAX_PAIRS``): they only grow as more are read."""
    counts = {m: len(doc.regions) for m, doc in enumerate(docs) if doc is not None} | dict(found or {})
    settings = runtime.settings
    problem = over_budget(counts, record.options, settings.limits.max_regions_total, settings.limits.max_pairs)
    if problem is not None:
        fail(runtime.store, record.id, problem)
        raise Gone(record.id)


# --------------------------------------------------------------------------------------------------
# io queue


def _label(doc: PreparedManuscript | None) -> str | None:
    """A manuscript's label for the default name; None if not read, or unreadable (a retry reads it again)."""
    return None if doc is None else doc.label or ("" if doc.regions else None)


def prepare_manuscript(runtime: Runtime, cid: str, m: int) -> str:
    """Reads manifest ``m``, finds its regions, fetches their images into the store.

    A manifest that cannot be read, and canvases or regions that cannot be fetched, become errors
    of the manuscript, not of the job: the collation goes on with what could be read.
    """
    from collation.jobs.manuscripts import read_manuscript

    store = runtime.store
    record = live_record(store, cid)
    if store.load_manuscript(cid, m) is not None:
        return "cached"
    n = record.manuscript_count
    set_progress(store, cid, "preparing", _count_prepared(store, cid, n), n)

    def within_budget(regions: Sequence[object]) -> None:  # before any image is fetched
        others = [None if i == m else store.load_manuscript(cid, i) for i in range(n)]
        check_budget(runtime, record, others, {m: len(regions)})

    with access.fetcher_with_tokens(runtime.fetcher, runtime.redis, runtime.settings.access_token_key, cid) as fetcher:
        doc, manifest = read_manuscript(
            record,
            m,
            store,
            fetcher,
            max_regions=runtime.settings.limits.max_regions,
            precision=runtime.precision,
            on_regions=within_budget,
        )
    live_record(store, cid)
    store.save_manuscript(cid, doc, manifest)
    docs = [store.load_manuscript(cid, i) for i in range(n)]
    check_budget(runtime, record, docs)
    name_by_labels(store, cid, [_label(d) for d in docs])
    set_progress(store, cid, "preparing", _count_prepared(store, cid, n), n)
    return f"{len(doc.regions)} regions, {len(doc.errors)} errors"


def _count_prepared(store: DataStore, cid: str, n: int) -> int:
    return sum(store.has_manuscript(cid, m) for m in range(n))


def plan(runtime: Runtime, cid: str) -> str:
    """Runs once the manuscripts are ready: computes the candidate pairs of each manuscript pair
    (option ``candidates``), then enqueues the pair scoring and the final step."""
    record = live_record(runtime.store, cid)
    check_budget(runtime, record, [runtime.store.load_manuscript(cid, m) for m in range(record.manuscript_count)])
    store_candidates(runtime, record)
    return Scheduler(runtime).advance(cid)


def store_candidates(runtime: Runtime, record: CollationRecord) -> int:
    """Stores the candidate pairs of every manuscript pair that needs them; returns how many it computed.

    ``pipeline.find_candidates``: global scores, then a cheap local score on the wide candidates and along the
    manuscripts' order, from the cached features (docs/candidates.md; about 10 s for 816 x 405 on a
    2-core CPU); with transpositions, every score is the best over the transpositions of the second
    manuscript (docs/transpositions.md). Nothing to do without pruning, or for a pair whose scores or
    candidates are stored already.
    """
    from collation.engine.pipeline import (
        choose_transpositions,
        describe_transposed,
        find_candidates,
        suspects,
    )
    from collation.engine.transpositions import picks_transpositions
    from collation.jobs.manuscripts import StoredImages

    options = record.options
    picks = picks_transpositions(options.transpositions)
    if not options.pruned and not picks:
        return 0
    store, cid = runtime.store, record.id
    docs = [store.load_manuscript(cid, m) for m in range(record.manuscript_count)]
    computed = 0
    for a, b in combinations(usable_manuscripts(docs, store.load_failures(cid)), 2):
        key0, key1 = docs[a].features_key, second_features_key(options, docs[b].features_key)
        key = pair_key(options, key0, docs[b].features_key)
        if store.has_scores(key) or store.pair_count(key) is not None:
            continue
        if not (store.has_features(key0) and store.has_features(key1)):
            continue  # planned again once they are there
        check = CancellationCheck(store, cid)
        feats0 = runtime.features(key0)
        if picks:  # the cascade as drawn, then the transpositions the pair chooses, described here
            plain1 = runtime.features(key1)
            found = find_candidates(feats0, plain1, options, progress=check)
            suspected = suspects(found)  # from the cascade's own cheap scores
            images1 = StoredImages(store, docs[b].digests)
            backbone = runtime.backbone(options.backbone, docs[b].precision)
            pairs, turns = choose_transpositions(feats0, images1, backbone, found.pairs, suspected, options)
            live_record(store, cid)
            store.save_features(
                turned_features_key(key), describe_transposed(images1, backbone, options, plain1, turns=turns)
            )
        else:
            pairs = find_candidates(feats0, runtime.features(key1), options, progress=check).pairs
        store.save_pairs(key, pairs)
        computed += 1
    return computed


def finalize(runtime: Runtime, cid: str) -> str:
    """Assembles the pair score matrices, normalizes, finds cycles, propagates and writes the results.

    If a chunk is missing (a step Redis lost), it asks the scheduler to plan again once the RQ job
    running this step (none when called inline) ended. A finalize left running from before
    the collation was deleted and asked for again finds manuscripts not yet prepared: it does nothing
    (the new collation's own steps are enqueued).
    """
    from collation.jobs.finishing import apply_assessments, compute_results

    store = runtime.store
    record = live_record(store, cid)
    access.forget(runtime.redis, cid)  # every manuscript is prepared: their access tokens are not needed
    docs = [store.load_manuscript(cid, m) for m in range(record.manuscript_count)]
    ready = usable_manuscripts(docs, store.load_failures(cid))
    if any(doc is None for doc in docs) or len(ready) < 2:
        return "nothing to finalize yet"
    scores: dict[tuple[int, int], np.ndarray] = {}
    winners: dict[tuple[int, int], np.ndarray] = {}
    for i, a in enumerate(ready):
        for b in ready[i + 1 :]:
            assembled = assemble_scores(store, record, docs[a], docs[b])
            if assembled is not None:
                scores[(a, b)] = assembled[0]
                if assembled[1] is not None:
                    winners[(a, b)] = assembled[1]
    if len(scores) < len(ready) * (len(ready) - 1) // 2:
        Scheduler(runtime).replan_after(cid, get_current_job())
        return "waiting for missing chunks"

    set_progress(store, cid, "finalizing", 0, 1)
    for results in compute_results(scores, record.options, winners):
        live_record(store, cid)
        store.save_results(cid, results)
    apply_assessments(store, cid)
    try:
        record = finish(store, cid, ready)
    except (AlreadyEnded, CollationNotFound):
        raise Gone(cid) from None
    notify(runtime, record)
    return CollationStatus.FINISHED.value


def notify(runtime: Runtime, record: CollationRecord) -> None:
    """Hands the final status to a ``callback`` job of its own (``send_callback``), if the request
    gave a ``callback_url``: finalize never waits on the client's server."""
    if record.request.callback_url:
        Scheduler(runtime).enqueue_callback(record)


class CallbackFailed(Exception):
    """The callback could not be delivered this time (RQ retries the job with a back-off)."""


def send_callback(runtime: Runtime, cid: str, url: str, payload: dict) -> str:
    """POSTs ``payload`` to ``url`` once, within ``settings.workers.callback_timeout`` seconds in all (the same
    address policy as every fetch; the address checked is the address connected to).

    Raises:
        CallbackFailed: no answer in time, a network error or a 5xx (retried); a URL the policy
            refuses, a 2xx, 3xx or 4xx end the job.
    """
    timeout = runtime.settings.workers.callback_timeout
    fetcher = callback_fetcher(runtime.fetcher, timeout)
    try:
        status = fetcher.post_json(url, payload)
    except UnsafeURLError as exc:
        log.warning("Collation %s: callback to %s refused: %s", cid, url, exc)
        return "refused"
    except CollationError as exc:
        raise CallbackFailed(f"callback to {url}: {exc}") from None
    finally:
        fetcher.session.close()
    if status >= 500:
        raise CallbackFailed(f"callback to {url}: HTTP {status}")
    return f"HTTP {status}"


def callback_fetcher(base: Fetcher, timeout: float) -> Fetcher:
    """``base``'s policy and resolver with every limit of one exchange at most ``timeout`` seconds."""
    return base.with_limits(
        total_timeout=timeout,
        connect_timeout=min(base.conf.connect_timeout, timeout),
        read_timeout=min(base.conf.read_timeout, timeout),
    )


# --------------------------------------------------------------------------------------------------
# compute queue


def compute_features(runtime: Runtime, cid: str, m: int) -> str:
    """Describes the regions of manuscript ``m`` with the backbone, unless these features are cached.

    With transpositions, a manuscript that can be the second of a pair (m > 0) is also described
    under every transposition of the option, in one batched call that reuses its plain features
    (``extract_transposed_features``), stored under ``transposed_features_key``. The backbone computes
    in the precision the prepare step recorded (``Runtime.backbone``), so the key says what they are.
    """
    from collation.engine.pipeline import describe, describe_transposed
    from collation.jobs.manuscripts import StoredImages

    store = runtime.store
    record = live_record(store, cid)
    n = record.manuscript_count
    docs = [store.load_manuscript(cid, i) for i in range(n)]
    doc = docs[m]
    if not doc or not doc.regions:
        return "nothing to describe"
    check_budget(runtime, record, docs)
    options, key = record.options, doc.features_key
    keys = feature_keys(options, m, key)
    if all(store.has_features(k) for k in keys):
        return "cached"
    set_progress(store, cid, "features", _count_features(store, options, cid, n), n)
    images = StoredImages(store, doc.digests)
    # The arithmetic recorded at prepare, which the key names, whatever this worker's own (a manuscript
    # prepared by an older release has none: its key, which names none, is computed as it always was).
    backbone = runtime.backbone(options.backbone, doc.precision)
    check = CancellationCheck(store, cid)
    if store.has_features(key):
        feats = runtime.features(key)
    else:
        feats = describe(images, backbone, options, progress=check)
        live_record(store, cid)
        store.save_features(key, feats)
        runtime.keep_features(key, feats)
    for turned_key in keys[1:]:
        turned = describe_transposed(images, backbone, options, feats, progress=check)
        live_record(store, cid)
        store.save_features(turned_key, turned)
        runtime.keep_features(turned_key, turned)
    set_progress(store, cid, "features", _count_features(store, options, cid, n), n)
    return f"{len(images)} regions described" + (" and transposed" if len(keys) > 1 else "")


def _count_features(store: DataStore, options: CollationOptions, cid: str, n: int) -> int:
    docs = [store.load_manuscript(cid, m) for m in range(n)]
    return sum(
        bool(d and d.regions and all(store.has_features(k) for k in feature_keys(options, m, d.features_key)))
        for m, d in enumerate(docs)
    )


def score_chunk(runtime: Runtime, cid: str, a: int, b: int, k: int) -> str:
    """Scores chunk ``k`` of the pairs (i, j) of manuscripts ``a`` and ``b`` (row-major order): all
    pairs, or the stored candidate pairs with the ``candidates`` option.

    Each pair is scored under every transposition of the ``transpositions`` option (only as drawn
    with "none", which gives exactly ``score_pairs``'s scores) and the best is kept; with
    transpositions, the chunk's winners are stored before its scores. ``partial`` passes through.

    Pair scores do not depend on chunking (``score_pairs`` draws RANSAC samples from a hash of the
    pair), so any worker can score any chunk, and a retried chunk gives the same numbers.
    """
    from collation.engine.pipeline import score_candidates
    from collation.engine.transpositions import picks_transpositions

    store = runtime.store
    record = live_record(store, cid)
    doc0, doc1 = store.load_manuscript(cid, a), store.load_manuscript(cid, b)
    options, chunk_pairs = record.options, record.chunk_pairs
    key = pair_key(options, doc0.features_key, doc1.features_key)
    if store.has_chunk(key, chunk_pairs, k) or store.has_scores(key):
        return "cached"
    feats0 = runtime.features(doc0.features_key)
    feats1, turned1 = runtime.features(second_features_key(options, doc1.features_key)), None
    if picks_transpositions(options.transpositions):  # the turned features the plan step chose for the pair
        turned1 = runtime.features(turned_features_key(key))
    pairs = _scored_pairs(store, options, key, len(doc0.regions), len(doc1.regions))
    if pairs is None:
        raise CollationError(f"the candidate pairs of manuscripts {a} and {b} are missing")
    pairs = pairs[k * chunk_pairs : (k + 1) * chunk_pairs]
    step = max(16, chunk_pairs // 8)  # check for cancellation a few times per chunk
    scores, winners = [], []
    for start in range(0, len(pairs), step):
        live_record(store, cid)
        best, winner = score_candidates(feats0, feats1, pairs[start : start + step], options, turned=turned1)
        scores.append(best)
        winners.append(winner)
    # with transpositions the winners go first: a chunk whose scores are there has its winners
    transposed = options.n_transpositions > 1
    store.save_chunk(key, chunk_pairs, k, np.concatenate(scores), np.concatenate(winners) if transposed else None)
    update_scoring_progress(store, cid)
    return f"{len(pairs)} pairs scored" + (f" under {options.n_transpositions} transpositions" if transposed else "")


def _scored_pairs(store: DataStore, options: CollationOptions, key: str, n0: int, n1: int) -> np.ndarray | None:
    """``(P, 2)`` pairs the chunks of a pair score, row-major: all, or the stored candidates (None: missing)."""
    from collation.engine.similarity import all_pairs
    from collation.engine.transpositions import picks_transpositions

    if not options.pruned and not picks_transpositions(options.transpositions):
        return all_pairs(n0, n1).numpy()
    return store.load_pairs(key)


def assemble_scores(
    store: DataStore, record: CollationRecord, doc0: PreparedManuscript, doc1: PreparedManuscript
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """The (n0, n1) score matrix of a pair from the store, joining its chunks when all are there, and
    with transpositions its (n0, n1) int8 winners T (None without); None while a chunk is missing.

    With the ``candidates`` option, pairs outside the candidate set hold ``UNSCORED`` (-inf) and T 0.
    """
    from collation.engine.pipeline import assemble

    options = record.options
    transposed = options.n_transpositions > 1
    key = pair_key(options, doc0.features_key, doc1.features_key)
    matrix = store.load_scores(key)
    if matrix is not None:
        winners = store.load_winners(key) if transposed else None
        if transposed and winners is None:  # never: they are written before the matrix
            raise CollationError(f"the transpositions of a stored score matrix are missing ({key})")
        return matrix, winners
    n0, n1 = len(doc0.regions), len(doc1.regions)
    pairs = _scored_pairs(store, options, key, n0, n1)
    if pairs is None:
        return None
    chunk_pairs = record.chunk_pairs
    parts, winner_parts = [], []
    for k in range(chunk_count(len(pairs), chunk_pairs)):
        part = store.load_chunk(key, chunk_pairs, k)
        if part is None:
            return None
        winner_part = store.load_chunk(key, chunk_pairs, k, winners=True) if transposed else np.zeros(len(part))
        if winner_part is None:
            return None
        parts.append(part)
        winner_parts.append(winner_part)
    matrix, turned = assemble((n0, n1), pairs, np.concatenate(parts), np.concatenate(winner_parts).astype(np.int8))
    winners = turned if transposed else None
    store.save_scores(key, matrix, winners)  # the winners before the matrix, whose presence means both
    store.drop_chunks(key, chunk_pairs)
    return matrix, winners
