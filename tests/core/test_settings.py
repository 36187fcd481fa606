"""One settings surface: parsed once from the environment, one parser per type, documented in the README."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from collation.core.settings import FetchSettings, Settings, SettingsError, settings_table

REPO = Path(__file__).resolve().parents[2]


def test_defaults_without_environment():
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.redis_url is None and settings.data_dir == Path("data")
    assert settings.iiif == FetchSettings() and settings.iiif.region_long_side == 352


def test_each_type_has_its_parser():
    settings = Settings.from_env(
        {
            "COLLATION_PORT": " 8080 ",
            "COLLATION_SWEEP_INTERVAL": "2.5",
            "COLLATION_ALLOWED_HOSTS": "127.0.0.1, iiif.local ,,",
            "COLLATION_WEIGHTS_DIR": "~/weights",
            "COLLATION_PUBLIC_URL": "",
            "COLLATION_IIIF_ALLOW_PRIVATE": "yes",
            "COLLATION_IIIF_MIN_INTERVAL": "12",
            "COLLATION_IIIF_CACHE_DIR": "/var/cache/collation",
        }
    )
    assert settings.port == 8080
    assert settings.workers.sweep_interval == 2.5
    assert settings.allowed_hosts == ("127.0.0.1", "iiif.local")
    assert settings.weights_dir == Path("~/weights").expanduser()
    assert settings.public_url is None
    assert settings.iiif.allow_private is True
    assert settings.iiif.min_interval == 12.0
    assert settings.iiif.cache_dir == Path("/var/cache/collation")


@pytest.mark.parametrize(
    "raw, expected",
    [("1", True), ("true", True), ("On", True), ("0", False), ("no", False), ("off", False), ("", False)],
)
def test_one_boolean_parser(raw, expected):
    assert Settings.from_env({"COLLATION_IIIF_ALLOW_PRIVATE": raw}).iiif.allow_private is expected


@pytest.mark.parametrize(
    "variable, raw",
    [
        ("COLLATION_PORT", "eighty"),
        ("COLLATION_PORT", "٨٠"),  # Arabic-Indic digits pass int() but are not ASCII
        ("COLLATION_CHUNK_PAIRS", "1.5"),
        ("COLLATION_SWEEP_INTERVAL", "soon"),
        ("COLLATION_IIIF_ALLOW_PRIVATE", "maybe"),
        ("COLLATION_IIIF_PER_HOST", "many"),
    ],
)
def test_bad_values_name_their_variable(variable, raw):
    with pytest.raises(SettingsError) as info:
        Settings.from_env({variable: raw})
    assert info.value.field == variable
    assert variable in info.value.message


@pytest.mark.parametrize(
    "variable, raw",
    [
        ("COLLATION_DEVICE", "tpu"),
        ("COLLATION_CHUNK_PAIRS", "0"),
        ("COLLATION_LOG_LEVEL", "LOUD"),
        ("COLLATION_IIIF_PER_HOST", "0"),
    ],
)
def test_values_that_cannot_work_are_refused(variable, raw):
    with pytest.raises(SettingsError, match=variable.removeprefix("COLLATION_").removeprefix("IIIF_")):
        Settings.from_env({variable: raw})


def test_overrides_win_over_the_environment_and_are_checked():
    settings = Settings.from_env({"COLLATION_PORT": "8080"}, port=0, allowed_hosts=["a"], iiif={"per_host": 2})
    assert settings.port == 0 and settings.allowed_hosts == ("a",) and settings.iiif.per_host == 2
    with pytest.raises(SettingsError, match="unknown settings"):
        Settings.from_env({}, prot=1)
    with pytest.raises(SettingsError):
        Settings().replace(device="quantum")


def test_settings_come_in_groups_named_by_their_variables():
    settings = Settings.from_env(
        {"COLLATION_STORE_URL": "s3://bucket/x", "COLLATION_INSPECT_TIMEOUT": "3", "COLLATION_MIN_FREE_BYTES": "0"},
        max_regions=7,
        worker_metrics_port="9100",
    )
    assert settings.store.url == "s3://bucket/x" and settings.store.min_free_bytes == 0
    assert settings.inspection.timeout == 3.0 and settings.limits.max_regions == 7
    assert settings.workers.metrics_port == 9100
    changed = settings.replace(chunk_pairs=8, inspect_timeout=1.5)
    assert changed.workers.chunk_pairs == 8 and changed.inspection.timeout == 1.5
    assert changed.limits == settings.limits and settings.workers.chunk_pairs == 512
    with pytest.raises(SettingsError, match="unknown settings"):
        Settings.from_env({}, limits={"max_region": 1})


@pytest.mark.parametrize(
    "variable, raw, must",
    [
        ("COLLATION_WORKER_METRICS_PORT", "70000", "at most 65535"),
        ("COLLATION_INSPECT_TIMEOUT", "0", "positive"),
        ("COLLATION_STORE_RETRIES", "-1", "at least 0"),
        ("COLLATION_MAX_MANIFESTS", "1", "at least 2"),
        ("COLLATION_DETECTOR_MIN_SCORE", "1.5", "at most 1"),
        ("COLLATION_IIIF_CONNECT_TIMEOUT", "0", "positive"),
        ("COLLATION_LOG_FORMAT", "xml", "text or json"),
        ("COLLATION_STORE_URL", "s3://A", "s3://bucket"),
    ],
)
def test_each_field_carries_its_bounds(variable, raw, must):
    with pytest.raises(SettingsError) as info:
        Settings.from_env({variable: raw})
    assert info.value.message.startswith(f"{variable} must be {must}")
    assert info.value.field == variable


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().port = 1  # type: ignore[misc]


def test_child_processes_get_the_same_settings():
    settings = Settings.from_env(
        {},
        redis_url="redis://127.0.0.1:6390/0",
        data_dir="/srv/collation",
        allowed_hosts="127.0.0.1,iiif.local",
        sweep_interval=0,
        iiif={"allow_private": True, "min_interval": 3},
    )
    assert Settings.from_env(settings.to_environ()) == settings


def test_the_readme_table_is_the_settings_table():
    """The README documents every variable with its real default (``python -m collation.core.settings``)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert settings_table() in readme, "README's configuration table differs: paste `python -m collation.core.settings`"
