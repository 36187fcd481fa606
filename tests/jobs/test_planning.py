"""The planner, without Redis or files: which steps a collation needs next from what the store holds."""

from __future__ import annotations

from typing import Any

import pytest
from builders import prepared_manuscript, record

from collation.core.vocabulary import CollationStatus
from collation.jobs.planning import Plan, Planned, next_steps, scoring_progress, usable_manuscripts
from collation.store.records import pair_key
from collation.store.stepnames import Step

CID = "0123456789abcdef"


def doc(m: int, regions: int) -> Any:
    return prepared_manuscript(m, regions, features_key=f"f{m}")


def nothing(*args: Any) -> bool:
    return False


def everything(*args: Any) -> bool:
    return True


def test_new_collation_prepares_and_describes_every_manuscript_then_plans() -> None:
    plan = next_steps(record(), [None, None], {}, nothing, nothing, nothing)
    assert plan == Plan(
        "preparing",
        (
            Planned(Step.prepare(0)),
            Planned(Step.features(0), (Step.prepare(0),)),
            Planned(Step.prepare(1)),
            Planned(Step.features(1), (Step.prepare(1),)),
            Planned(Step.plan(), (Step.prepare(0), Step.features(0), Step.prepare(1), Step.features(1))),
        ),
    )


def test_prepared_manuscripts_without_features_are_described() -> None:
    plan = next_steps(record(), [doc(0, 4), doc(1, 4)], {}, lambda key: key == "f0", nothing, nothing)
    assert [p.step for p in plan.steps] == [Step.features(1), Step.plan()]
    assert plan.steps[-1].after == (Step.features(1),)


def test_ready_manuscripts_are_scored_in_chunks_then_finalized() -> None:
    plan = next_steps(record(chunk_pairs=6), [doc(0, 4), doc(1, 4)], {}, everything, nothing, nothing)
    chunks = [Step.chunk(0, 1, k) for k in range(3)]  # 16 pairs in chunks of 6
    assert plan.stage == "scoring" and plan.failure is None
    assert [p.step for p in plan.steps] == [*chunks, Step.finalize()]
    assert plan.steps[-1].after == tuple(chunks)


def test_cached_chunks_and_scores_are_not_planned_again() -> None:
    rec, docs = record(3), [doc(0, 4), doc(1, 4), doc(2, 4)]
    scored = pair_key(rec.options, "f0", "f1")
    plan = next_steps(rec, docs, {}, everything, lambda key: key == scored, lambda key, c, k: k != 1)
    assert [p.step for p in plan.steps] == [Step.chunk(0, 2, 1), Step.chunk(1, 2, 1), Step.finalize()]
    done = next_steps(rec, docs, {}, everything, everything, nothing)
    assert done == Plan("finalizing", (Planned(Step.finalize()),))


def test_a_manuscript_that_failed_is_left_out() -> None:
    failures = {Step.prepare(1): "404"}
    plan = next_steps(record(3), [doc(0, 4), None, doc(2, 4)], failures, everything, nothing, nothing)
    assert {p.step for p in plan.steps} == {Step.chunk(0, 2, k) for k in range(3)} | {Step.finalize()}
    assert usable_manuscripts([doc(0, 4), doc(1, 4), doc(2, 0)], {Step.features(0): "boom"}) == [1]


@pytest.mark.parametrize(
    ("docs", "failures", "message"),
    [
        ([None, doc(1, 4)], {Step.prepare(0): "404"}, "fewer than two manuscripts could be read (1 of 2)"),
        ([doc(0, 0), doc(1, 4)], {}, "fewer than two manuscripts could be read (1 of 2)"),
        ([doc(0, 4), doc(1, 4)], {Step.chunk(0, 1, 2): "boom"}, "scoring manuscripts 0 and 1 failed: boom"),
        ([doc(0, 4), doc(1, 4)], {Step.finalize(): "disk full"}, "finalizing failed: disk full"),
    ],
)
def test_what_fails_a_collation(docs: list, failures: dict, message: str) -> None:
    plan = next_steps(record(), docs, failures, everything, nothing, nothing)
    assert plan == Plan("failed", failure=message)


@pytest.mark.parametrize("status", [CollationStatus.FINISHED, CollationStatus.FAILED, CollationStatus.CANCELLED])
def test_an_ended_collation_needs_nothing(status: CollationStatus) -> None:
    assert next_steps(record(status=status), [None, None], {}, nothing, nothing, nothing) == Plan(status.value)


def test_scoring_progress_counts_pairs_of_stored_chunks_and_matrices() -> None:
    rec, docs = record(3), [doc(0, 4), doc(1, 4), doc(2, 2)]
    scored = pair_key(rec.options, "f0", "f1")
    done, total = scoring_progress(rec, docs, {}, lambda key: key == scored, lambda key, c, k: k == 0)
    assert total == 16 + 8 + 8 and done == 16 + 6 + 6
