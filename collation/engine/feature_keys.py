"""Keys of cached features: what the features of a manuscript's images depend on, the backbone's arithmetic
included.

``COLLATION_FEATURE_PRECISION=auto`` computes the backbone in bfloat16 where the hardware has it and in
float32 elsewhere (``collation.engine.backbones.compute_dtype``); the two give features that differ by up
to 0.2 on a normalized cell. So the setting is resolved once, to ``float32`` or ``bfloat16``
(``resolve_precision``), and the resolved value enters the key (``features_key``): two workers of different
hardware never share a cache entry, and a key says what its features are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import torch

from collation.core import defaults
from collation.engine.backbones import compute_dtype, read_cpu_flags, resolve_device
from collation.engine.checks import check_option

RESOLVED_PRECISIONS = ("float32", "bfloat16")
"""What ``resolve_precision`` gives: the arithmetic a backbone computes in, a part of every features key."""


def resolve_precision(
    precision: str,
    device: str | torch.device,
    *,
    cpu_flags: Iterable[str] | None = None,
    cuda_bf16: bool | None = None,
) -> str:
    """The precision setting (``auto``, ``float32``, ``bfloat16``) resolved on ``device`` by ``compute_dtype``'s
    rule: ``float32`` or ``bfloat16``, what ``load_backbone(precision=...)`` will compute in.

    The features of the two differ (up to 0.2 on a normalized cell), so the resolved value is what a
    features key holds, and what the service records when it reads a manuscript (docs/deployment.md).

    Args:
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``; a GPU this machine lacks is no error (an io
            worker whose settings name the compute workers' GPU): its bfloat16 is then unknown, so
            ``auto`` gives float32, always correct.
        cpu_flags: the CPU's flags; read from ``/proc/cpuinfo`` when None (tests inject them).
        cuda_bf16: whether the GPU has bfloat16; asked of torch when None.
    """
    named = isinstance(device, str) and device != "auto"
    kind = torch.device(device).type if named else resolve_device(device).type
    if cpu_flags is None:
        cpu_flags = read_cpu_flags() if kind == "cpu" else ()
    if cuda_bf16 is None:
        cuda_bf16 = kind == "cuda" and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return "bfloat16" if compute_dtype(precision, kind, cpu_flags, cuda_bf16) == torch.bfloat16 else "float32"


def features_key(
    digests: Sequence[str],
    backbone: str,
    *,
    precision: str,
    scales: Sequence[int] = defaults.SCALES,
    query_scale: int = defaults.QUERY_SCALE,
    dtype: torch.dtype = torch.float32,
) -> str:
    """Key of a manuscript's cached features: its images' content, the backbone and every parameter that
    changes them (the backbone's arithmetic, the scales, the storage type, the frames' bucket and the
    normalization's epsilon).

    Args:
        precision: one of ``RESOLVED_PRECISIONS`` (``resolve_precision``), never ``auto``: a key says
            what its features are, whichever worker computes them.
    """
    check_option("precision", precision, RESOLVED_PRECISIONS)
    # v3: the precision entered the key; a key of an older release (no precision) is never computed again,
    # so features of unknown arithmetic are never reused.
    h = hashlib.sha256(
        f"{backbone}|{precision}|{list(scales)}|{query_scale}|{dtype}|{defaults.FEATURES_BUCKET}|"
        f"{defaults.L2_EPS}|v3".encode()
    )
    for d in digests:
        h.update(d.encode())
    return h.hexdigest()[:32]
