"""What every page's script is given by the server (``collation.viewer.browser``): one JSON config in
``<script id="config">`` with the rules taken from the Python that owns them, the Image API templates,
and links that answer. The scripts copy none of it (tests/viewer/test_js_lint.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_viewer_routes import CID, write_codices_a_b

from collation.app import create_app
from collation.core.settings import Settings
from collation.core.vocabulary import (
    CATEGORIES,
    CATEGORY_LABELS,
    MATCH_CATEGORIES,
    TRANSPOSITION_LABELS,
    VERDICT_ALIASES,
    CollationStatus,
    verdict_category,
)
from collation.service.state import service_state
from collation.viewer.browser import IMAGE_TEMPLATES, RULES, VERDICT_BUTTONS

PAGES = {
    "home": "/",
    "new": "/new",
    "follow": f"/collations/{CID}",
    "view": f"/api/v1/collations/{CID}/view",
    "concordance": f"/api/v1/collations/{CID}/concordance/view",
}


@pytest.fixture
def page_client(tmp_path: Path) -> Any:
    store = write_codices_a_b(tmp_path / "data")
    app = create_app(Settings.from_env({}, data_dir=store.root, public_url="http://collation.test"), TESTING=True)
    yield app.test_client()
    service_state(app).close()


def config_of(html: str) -> dict[str, Any]:
    found = re.findall(r'<script id="config" type="application/json">(.*?)</script>', html, re.S)
    assert len(found) == 1, "one config per page"
    return json.loads(found[0])


def test_the_rules_are_the_pythons() -> None:
    verdicts = RULES["verdicts"]
    assert verdicts["categories"] == list(CATEGORIES) and verdicts["match"] == list(MATCH_CATEGORIES)
    assert verdicts["aliases"] == VERDICT_ALIASES
    assert all(verdict_category(alias) == category for alias, category in verdicts["aliases"].items())
    assert verdicts["labels"] == {c: CATEGORY_LABELS[c] for c in CATEGORIES}
    assert set(verdicts["marks"]) == set(verdicts["buttons"]) == set(VERDICT_BUTTONS) == set(CATEGORIES)
    assert sorted(RULES["status"].values()) == sorted(s.value for s in CollationStatus)
    assert RULES["terminal"] and all(CollationStatus(s).terminal for s in RULES["terminal"])
    assert all(not CollationStatus(s).terminal for s in RULES["status"].values() if s not in RULES["terminal"])
    assert RULES["concordance_witnesses"] == 3
    assert {name: text.split(" ", 1)[1] for name, text in RULES["transpositions"].items()} == {
        name: label for name, label in TRANSPOSITION_LABELS.items() if label
    }


def test_the_image_templates_are_image_api_requests() -> None:
    service = "http://images.test/iiif/a0"
    thumb = IMAGE_TEMPLATES["region_thumbnail"].format(service=service, x="10.00", y="20.00", w="30.00", h="40.00")
    assert thumb == f"{service}/pct:10.00,20.00,30.00,40.00/!120,120/0/default.jpg"
    assert IMAGE_TEMPLATES["page"].format(service=service) == f"{service}/full/!700,700/0/default.jpg"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_page_has_one_config_with_the_rules(page_client: Any, name: str) -> None:
    r = page_client.get(PAGES[name])
    assert r.status_code == 200, r.get_data(as_text=True)
    html = r.get_data(as_text=True)
    config = config_of(html)
    assert config["api"] == "http://collation.test/api/v1" and config["tokens"] is False
    assert config["rules"] == json.loads(json.dumps(RULES)) and config["images"] == IMAGE_TEMPLATES
    assert "common.js" in html  # the one module that reads it, for tokens and requests
    if name in ("home", "new"):
        assert "id" not in config and config["view"] == name
    else:
        assert config["id"] == CID and config["links"]["status"] == f"http://collation.test/api/v1/collations/{CID}"


def test_the_links_of_a_collation_page_answer(page_client: Any) -> None:
    links = config_of(page_client.get(PAGES["follow"]).get_data(as_text=True))["links"]
    queries = {"view_json": "?pair=0,1", "correspondences": "?pair=0,1&score=propagated&top=3", "matrix": "?pair=0,1"}
    for name in ("status", "view", "view_json", "correspondences", "matrix", "assessments", "concordance"):
        r = page_client.get(links[name] + queries.get(name, ""))
        assert r.status_code == 200, (name, r.get_data(as_text=True)[:200])
        r.close()
    for name in ("concordance_csv", "concordance_xlsx"):
        r = page_client.get(links[name])
        assert r.status_code == 200 and "attachment" in r.headers["Content-Disposition"], name
        r.close()
    batch = page_client.post(links["assessments_batch"], json={"members": [], "verdict": "exact"})
    assert batch.status_code in (400, 422)  # the route exists; an empty batch is refused
    assert links["follow"].replace("{id}", CID) == PAGES["follow"] and links["home"] == "/"
    for name in ("collations", "inspect"):
        assert links[name].startswith("http://collation.test/api/v1/")
    assert page_client.get(links["collations"]).status_code == 200


def test_the_home_filter_and_the_keys_help_come_from_the_rules(page_client: Any) -> None:
    home = page_client.get("/").get_data(as_text=True)
    status = RULES["status"]
    assert f'<option value="{status["queued"]},{status["running"]}">' in home
    view = page_client.get(PAGES["view"]).get_data(as_text=True)
    help_text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", view.split('id="keys-help">', 1)[1].split("</p>", 1)[0]))
    expected = ", ".join(f"{k} {CATEGORY_LABELS[c]}" for k, c in enumerate(CATEGORIES, 1))
    assert help_text.endswith(f"on the selected one {expected}."), help_text
