"""Settings from the environment, the data store's atomic writes and locks, collation ids."""

from __future__ import annotations

import os
from pathlib import Path

import builders
import numpy as np
import pytest

from collation.core.atomic import write_json
from collation.core.errors import InputError
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.store.datastore import CollationNotFound
from collation.store.folder import FolderStore
from collation.store.records import collation_id
from collation.store.stored import PairResults


def test_settings_come_from_defaults_then_environment_then_overrides(tmp_path: Path) -> None:
    env = {
        "COLLATION_REDIS_URL": "redis://r:6379/2",
        "COLLATION_ALLOWED_HOSTS": "127.0.0.1, iiif.local,",
        "COLLATION_API_TOKENS": "a,b",
        "COLLATION_CHUNK_PAIRS": "64",
        "COLLATION_DEVICE": "cpu",
        "COLLATION_DATA_DIR": str(tmp_path),
        "OTHER": "x",
    }
    settings = Settings.from_env(env, chunk_pairs=8)
    assert settings.redis_url == "redis://r:6379/2"
    assert settings.allowed_hosts == ("127.0.0.1", "iiif.local")
    assert settings.api_tokens == ("a", "b")
    assert settings.workers.chunk_pairs == 8 and settings.device == "cpu"
    assert settings.backbone == Settings().backbone == "efficientnet-lite0"
    assert settings.data_dir == tmp_path
    assert Settings.from_env(settings.to_environ()) == settings  # what worker subprocesses get


@pytest.mark.parametrize(("name", "value"), [("COLLATION_PORT", "eighty"), ("COLLATION_DEVICE", "tpu")])
def test_bad_settings_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(InputError) as info:
        Settings.from_env({name: value})
    assert info.value.field.removeprefix("COLLATION_") == name.removeprefix("COLLATION_")


def test_ids_depend_on_order_regions_and_resolved_options() -> None:
    a, b = "https://x/a.json", "https://x/b.json"
    base = collation_id([a, b], {}, CollationOptions.parse({}))
    assert base == collation_id([a, b], None, CollationOptions.parse({"seed": 0, "similarity": "s_trans"}))
    assert len(base) == 16 and base.isalnum()
    assert base != collation_id([b, a], {}, CollationOptions.parse({}))
    assert base != collation_id([a, b], {"0": {"whole_canvases": True}}, CollationOptions.parse({}))
    assert base != collation_id([a, b], {}, CollationOptions.parse({"normalization": "avg"}))


def test_store_writes_atomically_and_locks(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    record = builders.record(status="queued", cid="0123456789abcdef")
    assert store.create_collation(record) and not store.create_collation(record)
    store.update_record(record.id, lambda r: setattr(r, "status", CollationStatus("running")))
    assert store.load_record(record.id).status == "running"
    write_json(tmp_path / "x" / "y.json", {"a": 1})
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no temporary file is left behind
    store.save_results(record.id, PairResults(0, 1, np.eye(2), np.eye(2), np.eye(2)))
    np.testing.assert_array_equal(store.load_results(record.id, 0, 1).S, np.eye(2))
    assert store.delete_collation(record.id) and not store.delete_collation(record.id)
    with pytest.raises(CollationNotFound):
        store.load_record(record.id)
    with pytest.raises(CollationNotFound):
        store.update_record(record.id, lambda r: None)
    assert store.list_collations() == []
    assert os.listdir(tmp_path / "trash") == []
