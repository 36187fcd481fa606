"""The W3C Web Annotation Working Group's "musts" (github.com/w3c/web-annotation-tests, vendored in
``tests/w3c/web-annotation-tests`` with its licence): run as the group's harness ran them, each
assertion a JSON schema the document must be valid against.

``failing(doc, MUSTS_COLLECTION)`` lists the musts an AnnotationCollection fails (``MUSTS_PAGE`` for
a page, ``MUSTS_ANNOTATION`` for one annotation). Formats are checked: ``date-time`` by jsonschema,
``uri`` by the expression of ajv (the validator the group's harness used), since jsonschema checks
``uri`` only when an extra package is installed.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator, FormatChecker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

SUITE = Path(__file__).parent / "w3c" / "web-annotation-tests"
MUSTS_ANNOTATION = "annotations/annotationMusts.test"
MUSTS_COLLECTION = "collections/collectionMusts.test"
MUSTS_PAGE = "collections/pages/pageMusts.test"

AJV_URI = re.compile(r"^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/)?[^\s]*$", re.IGNORECASE)
"""ajv's ``uri`` format (its "fast" mode, the one the W3C harness ran)."""


def format_checker() -> FormatChecker:
    checker = FormatChecker(formats=["date-time"])
    checker.checks("uri")(lambda value: not isinstance(value, str) or bool(AJV_URI.match(value)))
    return checker


def _resource(path: Path) -> tuple[str, Resource]:
    """A schema of the suite under its own id, a bare file name (``collections.json``) that the
    ``$ref`` of every other schema names it by."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    return schema.get("id", path.name), Resource.from_contents(schema, default_specification=DRAFT4)


@cache
def registry() -> Registry:
    """Every definition file the assertions refer to (``definitions/*.json``), by its id."""
    return Registry().with_resources(_resource(p) for p in sorted((SUITE / "definitions").glob("*.json")))


@cache
def assertions(test: str) -> tuple[tuple[str, Draft4Validator], ...]:
    """(name, validator) of each assertion of a ``.test`` file of the suite."""
    names = json.loads((SUITE / test).read_text(encoding="utf-8"))["assertions"]
    out = []
    for name in names:
        _id, resource = _resource(SUITE / name)
        assert resource.contents["expectedResult"] == "valid" and resource.contents["assertionType"] == "must"
        out.append((name, Draft4Validator(resource.contents, registry=registry(), format_checker=format_checker())))
    return tuple(out)


def failing(doc: Any, test: str) -> list[str]:
    """The assertions of ``test`` that ``doc`` fails, each with the first reason jsonschema gives."""
    out = []
    for name, validator in assertions(test):
        error = next(iter(validator.iter_errors(doc)), None)
        if error is not None:
            out.append(f"{name}: {error.message[:200]}")
    return out


def failing_in_page(page: dict[str, Any]) -> list[str]:
    """The musts a page and each of its annotations fail; an annotation inherits the page's ``@context``
    (the Web Annotation Protocol writes it once, at the top)."""
    out = [f"page {page.get('id')}: {f}" for f in failing(page, MUSTS_PAGE)]
    for item in page.get("items", []):
        annotation = {"@context": page.get("@context"), **item}
        out += [f"annotation {item.get('id')}: {f}" for f in failing(annotation, MUSTS_ANNOTATION)]
    return out
