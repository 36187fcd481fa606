"""Fixtures shared by the whole suite: synthetic illustrations, the offline backbone, the real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def physiologus_dir() -> Path:
    """``$COLLATION_TEST_DATA``, else ``../shared/data/physiologus`` beside the repository."""
    return Path(os.environ.get("COLLATION_TEST_DATA", REPO.parent / "shared" / "data" / "physiologus"))


@pytest.fixture(scope="session")
def physiologus() -> Path:
    """The shared Physiologus folder; tests that need it skip cleanly when it is absent."""
    path = physiologus_dir()
    needed = [path / "annotations" / "P2.via.json", path / "annotations" / "P3.via.json", path / "P2" / "folios",
              path / "P3" / "folios", path / "ground_truth" / "P2-P3.json"]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        pytest.skip(f"Physiologus test data absent (set COLLATION_TEST_DATA): {missing[0]}")
    return path


@pytest.fixture(scope="session")
def backbone():
    """The offline EfficientNet-Lite0 backbone, loaded once per test session."""
    from collation.features import load_backbone

    return load_backbone("efficientnet-lite0", device="cpu")
