"""A 401/403 keeps its body (bounded by ``max_json_bytes``), so ``read_info`` can say where to log in
when an Image API server behind IIIF Auth answers its info.json with the error status."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collation.core.errors import FetchError
from collation.iiif.info import read_info


def _info(static_server: Any, service: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {
            "@context": "http://iiif.io/api/image/3/context.json",
            "id": f"{static_server.url}/x",
            "type": "ImageService3",
            "profile": "level1",
            "width": 1000,
            "height": 800,
            "service": service,
        }
    ).encode()


@pytest.mark.parametrize("status", [401, 403])
def test_login_of_an_auth2_info_json_answered_with_an_error(static_server: Any, fetcher: Any, status: int) -> None:
    login = f"{static_server.url}/auth/login"
    body = _info(
        static_server,
        [
            {
                "id": f"{static_server.url}/auth/probe",
                "type": "AuthProbeService2",
                "service": [{"id": login, "type": "AuthAccessService2", "profile": "active"}],
            }
        ],
    )
    static_server.routes[f"/locked{status}/info.json"] = lambda h: (status, {"Content-Type": "application/json"}, body)
    with pytest.raises(FetchError, match=f"login required at {login} \\(HTTP {status}\\)") as caught:
        read_info(f"{static_server.url}/locked{status}", fetcher=fetcher)
    assert caught.value.login == login and caught.value.status == status


def test_login_of_an_auth1_info_json(static_server: Any, fetcher: Any) -> None:
    login = f"{static_server.url}/auth1/login"
    body = _info(static_server, [{"@id": login, "profile": "http://iiif.io/api/auth/1/login"}])
    static_server.routes["/auth1/info.json"] = lambda h: (401, {"Content-Type": "application/json"}, body)
    with pytest.raises(FetchError, match=f"login required at {login}"):
        read_info(f"{static_server.url}/auth1", fetcher=fetcher)


def test_other_error_bodies_are_not_kept(static_server: Any, fetcher: Any) -> None:
    static_server.routes["/html401/info.json"] = lambda h: (401, {"Content-Type": "text/html"}, b"<html>log in</html>")
    with pytest.raises(FetchError, match=r"HTTP 401$") as caught:
        read_info(f"{static_server.url}/html401", fetcher=fetcher)
    assert caught.value.body == b"<html>log in</html>" and not hasattr(caught.value, "login")
    static_server.routes["/gone/info.json"] = lambda h: (404, {"Content-Type": "application/json"}, b"{}")
    with pytest.raises(FetchError, match=r"HTTP 404$") as caught:
        read_info(f"{static_server.url}/gone", fetcher=fetcher)
    assert caught.value.body is None


def test_an_error_body_over_the_json_cap_is_dropped(static_server: Any, fetcher: Any) -> None:
    big = b" " * (fetcher.conf.max_json_bytes + 1) + b"{}"
    static_server.routes["/big401/info.json"] = lambda h: (401, {"Content-Type": "application/json"}, big)
    with pytest.raises(FetchError, match=r"HTTP 401$") as caught:
        read_info(f"{static_server.url}/big401", fetcher=fetcher)
    assert caught.value.body is None


def test_fetching_a_region_names_the_login_of_the_error_body(static_server: Any, fetcher: Any) -> None:
    """A service that declares no Auth service in the manifest but answers its info.json with a 401
    carrying one: the region's error says where to log in."""
    from builders import v3_canvas, v3_image_body, v3_manifest

    from collation.iiif.fetch import fetch_region
    from collation.iiif.manifests import parse_manifest
    from collation.iiif.regions import Region

    login = f"{static_server.url}/auth/login"
    body = _info(
        static_server,
        [
            {
                "id": f"{static_server.url}/auth/probe",
                "type": "AuthProbeService2",
                "service": [{"id": login, "type": "AuthAccessService2", "profile": "active"}],
            }
        ],
    )
    static_server.routes["/locked/info.json"] = lambda h: (401, {"Content-Type": "application/json"}, body)
    service = [{"id": f"{static_server.url}/locked", "type": "ImageService3", "profile": "level1"}]
    image = v3_image_body(f"{static_server.url}/locked/full/max/0/default.jpg", (1000, 800), service)
    canvas_doc = v3_canvas("https://example.org/canvas/1", (1000, 800), body=image)
    canvas = parse_manifest(v3_manifest("https://example.org/m", [canvas_doc]), url="https://example.org/m").canvases[0]
    with pytest.raises(FetchError, match=f"login required at {login} \\(HTTP 401\\)"):
        fetch_region(Region(0, canvas.id, 0, (10, 10, 100, 100), "x"), canvas, long_side=352, fetcher=fetcher)
