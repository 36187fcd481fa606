"""The steps of a collation: what each RQ job does, named so that the name can be read back.

A collation runs as a graph of steps:

```text
prepare m (io) ──▶ features m (compute) ──▶ plan (io) ──▶ chunk a b k (compute) ──▶ finalize (io)
```

A step's ``name`` (``prepare-3``, ``chunk-0-1-7``) is the suffix of its RQ job id and the name of its
failure record in the data store; ``Step.parse`` reads it back. Plain data, no imports from the
project, so both the data store and the records can use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class StepKind(StrEnum):
    """The kinds of steps, and the queue each runs on."""

    PREPARE = "prepare"
    FEATURES = "features"
    PLAN = "plan"
    CHUNK = "chunk"
    FINALIZE = "finalize"

    @property
    def queue(self) -> str:
        """``"io"`` or ``"compute"``: the queue kind of this step (``WorkerSettings.queue_io``/``queue_compute``).

        ``plan`` computes the candidates' cheap local scores (``collation.engine.cascade``): compute, like the
        features and the chunks, so that a GPU worker does it."""
        return "compute" if self in (StepKind.FEATURES, StepKind.PLAN, StepKind.CHUNK) else "io"

    @property
    def per_manuscript(self) -> bool:
        """Steps whose failure leaves one manuscript out rather than failing the collation."""
        return self in (StepKind.PREPARE, StepKind.FEATURES)


_STEP_NAME = re.compile(r"^(prepare|features|plan|chunk|finalize)((?:-\d+)*)$")


@dataclass(frozen=True)
class Step:
    """One step of a collation: its kind and the integers that pick its work.

    ``args`` is ``(m,)`` for prepare and features, ``(a, b, k)`` for a chunk of pair (a, b), ``()``
    for plan and finalize.
    """

    kind: StepKind
    args: tuple[int, ...] = ()

    @classmethod
    def prepare(cls, m: int) -> Step:
        return cls(StepKind.PREPARE, (m,))

    @classmethod
    def features(cls, m: int) -> Step:
        return cls(StepKind.FEATURES, (m,))

    @classmethod
    def plan(cls) -> Step:
        return cls(StepKind.PLAN)

    @classmethod
    def chunk(cls, a: int, b: int, k: int) -> Step:
        return cls(StepKind.CHUNK, (a, b, k))

    @classmethod
    def finalize(cls) -> Step:
        return cls(StepKind.FINALIZE)

    @property
    def name(self) -> str:
        return "-".join([self.kind.value, *map(str, self.args)])

    @classmethod
    def parse(cls, name: str) -> Step:
        """The step of a name written by ``name``; ``ValueError`` for anything else."""
        match = _STEP_NAME.match(name)
        if match is None:
            raise ValueError(f"not a step name: {name!r}")
        args = tuple(int(v) for v in match.group(2).split("-")[1:])
        return cls(StepKind(match.group(1)), args)

    def __str__(self) -> str:
        return self.name
