"""compose.yaml is a valid Compose file (the Compose Specification's own JSON schema, vendored in
``tests/compose_spec``: what ``docker compose config`` checks, on machines without Docker), and every
process has a health check that means something for it: the API its port (the image's HEALTHCHECK),
each worker its heartbeat in Redis (``collate health --worker``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft7Validator

REPO = Path(__file__).resolve().parent.parent
SCHEMA = Path(__file__).parent / "compose_spec" / "compose-spec.json"
VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")
WORKER_CHECK = ["CMD", "python", "-m", "collation", "health", "--worker"]


def interpolated(value: Any) -> Any:
    """``${NAME:-default}`` replaced as Compose does with an empty environment (the defaults)."""
    if isinstance(value, str):
        return VARIABLE.sub(lambda m: os.environ.get(m[1]) or m[2] or "", value)
    if isinstance(value, dict):
        return {k: interpolated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolated(v) for v in value]
    return value


def compose() -> dict[str, Any]:
    return interpolated(yaml.safe_load((REPO / "compose.yaml").read_text()))  # merge keys (<<) resolved


def test_compose_yaml_is_valid_against_the_compose_specification() -> None:
    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    errors = sorted(validator.iter_errors(compose()), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_every_worker_checks_its_heartbeat_and_the_api_its_port() -> None:
    services = compose()["services"]
    workers = {name for name, s in services.items() if s.get("command", [])[3:4] == ["worker"]}
    assert workers == {"worker", "gpu-worker", "worker-s3", "compute-worker-s3"}
    for name in workers:
        check = services[name]["healthcheck"]
        assert check["test"] == WORKER_CHECK and check["start_period"] == "120s", name
    apis = {name for name, s in services.items() if s.get("command", [])[3:4] == ["serve"]}
    assert apis == {"api", "api-s3"} and not any("healthcheck" in services[name] for name in apis)
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'HEALTHCHECK --interval=30s --timeout=5s --start-period=30s CMD ["python", "-m", "collation", "health"]' in (
        dockerfile
    )
