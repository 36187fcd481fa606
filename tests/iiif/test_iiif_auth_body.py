"""A 401/403 keeps its body (bounded by ``max_json_bytes``), so ``read_info`` can say where to log in
when an Image API server behind IIIF Auth answers its info.json with the error status."""

from __future__ import annotations

import json
from typing import Any

import pytest

from collation.iiif import FetchError
from collation.iiif.info import read_info


def _info(static_server: Any, service: list[dict[str, Any]]) -> bytes:
    return json.dumps({"@context": "http://iiif.io/api/image/3/context.json", "id": f"{static_server.url}/x",
                       "type": "ImageService3", "profile": "level1", "width": 1000, "height": 800,
                       "service": service}).encode()


@pytest.mark.parametrize("status", [401, 403])
def test_login_of_an_auth2_info_json_answered_with_an_error(static_server: Any, fetcher: Any, status: int) -> None:
    login = f"{static_server.url}/auth/login"
    body = _info(static_server, [{"id": f"{static_server.url}/auth/probe", "type": "AuthProbeService2",
                                  "service": [{"id": login, "type": "AuthAccessService2", "profile": "active"}]}])
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
