"""How the processes log (``collation.core.logs``): JSON lines with the job's fields, the text format as
before, RQ's housekeeping at DEBUG. A real worker's JSON lines are read in tests/service/test_monitoring.py."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from collation.core.logs import RQ_HOUSEKEEPING, configure_logging, context_fields, log_context
from collation.core.settings import Settings, SettingsError


@pytest.fixture
def configured() -> Iterator[tuple[io.StringIO, logging.Handler]]:
    """The process logging configured as ``collate worker`` does (JSON, INFO), to a string; undone after."""
    stream = io.StringIO()
    root, rq_worker = logging.getLogger(), logging.getLogger("rq.worker")
    level, rq_level, rq_filters = root.level, rq_worker.level, list(rq_worker.filters)
    # An in-process RQ worker earlier in this process (service_helpers.drain: work(logging_level="WARNING"))
    # leaves rq.worker at WARNING; a worker process starts with it unset, as here.
    rq_worker.setLevel(logging.NOTSET)
    handler = configure_logging(Settings.from_env({}, log_format="json", log_level="INFO"), stream)
    yield stream, handler
    root.removeHandler(handler)
    root.setLevel(level)
    rq_worker.setLevel(rq_level)
    rq_worker.filters[:] = rq_filters


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_json_line_carries_the_collation_job_and_step_of_its_context(configured) -> None:
    stream, _ = configured
    log = logging.getLogger("collation.jobs")
    log.info("before")
    with log_context(collation_id="ab12cd", job_id="ab12cd-features-1", step="features-1"):
        log.warning("Collation %s: %d regions", "ab12cd", 7)
        with log_context(step=None):  # None leaves a field as it is
            logging.getLogger("rq.worker").info("Job OK")
    log.info("after")
    before, inside, rq_line, after = lines(stream)
    assert set(before) == {"time", "level", "logger", "message"} and before["message"] == "before"
    assert inside == {
        "time": inside["time"],
        "level": "WARNING",
        "logger": "collation.jobs",
        "message": "Collation ab12cd: 7 regions",
        "collation_id": "ab12cd",
        "job_id": "ab12cd-features-1",
        "step": "features-1",
    }
    assert rq_line["logger"] == "rq.worker" and rq_line["step"] == "features-1"
    assert "collation_id" not in after and context_fields() == {}


def test_rq_housekeeping_goes_to_debug_and_other_rq_lines_stay(configured) -> None:
    stream, _ = configured
    rq = logging.getLogger("rq.worker")
    rq.setLevel("INFO")  # what Worker.work(logging_level="INFO") sets
    rq.info("Worker %s: cleaning registries for queue: %s", "w1", "collation-io")
    rq.info("Worker %s: cleaning group registries", "w1")
    rq.info("Worker %s: %s: %s", "w1", "collation-io", "ab12cd-prepare-0")
    rq.setLevel("DEBUG")
    rq.info("Worker %s: cleaning registries for queue: %s", "w1", "collation-compute")
    got = lines(stream)
    assert [(g["level"], g["message"]) for g in got] == [
        ("INFO", "Worker w1: collation-io: ab12cd-prepare-0"),
        ("DEBUG", "Worker w1: cleaning registries for queue: collation-compute"),
    ]
    assert all(prefix.startswith("Worker %s: cleaning") for prefix in RQ_HOUSEKEEPING)


def test_configuring_twice_logs_each_line_once_and_text_is_the_default(configured) -> None:
    stream, first = configured
    second = configure_logging(Settings.from_env({}, log_level="INFO"), stream)
    try:
        with log_context(collation_id="ab12cd"):
            logging.getLogger("collation.service").info("once")
        assert first not in logging.getLogger().handlers
        text = stream.getvalue().splitlines()
        assert len(text) == 1 and text[0].endswith(" collation.service INFO once")  # the text format as before
    finally:
        logging.getLogger().removeHandler(second)


def test_an_unknown_log_format_names_the_variable() -> None:
    with pytest.raises(SettingsError, match="COLLATION_LOG_FORMAT must be text or json"):
        Settings.from_env({"COLLATION_LOG_FORMAT": "xml"})
