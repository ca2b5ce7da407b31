"""web_fetch against a real web site on loopback: Markdown, caps, redirects, refusals."""

from __future__ import annotations

import ipaddress
import time

import pytest
from page_server import PageServer
from page_server import page_server as page_server

from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ToolError
from nanohermes.tools import web
from nanohermes.tools.web import fetch, web_fetch_tool


def get(url: str, max_chars: int = 20_000, *, private: bool = True) -> str:
    return fetch(url, max_chars, private=private, cancel=CancelToken())


def refused(url: str, *, private: bool = True) -> str:
    with pytest.raises(ToolError) as caught:
        get(url, private=private)
    text = str(caught.value)
    assert "\n" not in text
    return text


def test_html_comes_back_as_markdown_without_scripts_or_styles(page_server: PageServer) -> None:
    text = get(page_server.url("/page"))
    assert text.startswith(page_server.url("/page") + " (text/html, ")
    assert "# Version 2" in text
    assert "**session search**" in text
    assert "[more](/text)" in text
    assert "alert" not in text
    assert "color: red" not in text


def test_plain_text_and_a_followed_redirect(page_server: PageServer) -> None:
    text = get(page_server.url("/to-text"))
    assert text == page_server.url("/text") + " (text/plain, 12 bytes)\n\nplain words\n"


def test_max_chars_cuts_the_text_and_says_so(page_server: PageServer) -> None:
    text = get(page_server.url("/text"), max_chars=5)
    assert text.endswith("\n\nplain\n[… cut at 5 of 12 characters]")


def test_a_redirect_loop_is_one_line(page_server: PageServer) -> None:
    assert refused(page_server.url("/loop")) == (
        f"more than {web.MAX_REDIRECTS} redirects, last to {page_server.url('/loop')}; not followed"
    )


def test_a_huge_body_is_read_up_to_the_cap(page_server: PageServer) -> None:
    started = time.monotonic()
    text = get(page_server.url("/huge"), max_chars=100)
    assert time.monotonic() - started < 10
    assert "first 2 MB read" in text.splitlines()[0]
    assert text.endswith(f"[… cut at 100 of {web.FETCH_MAX_BYTES:,} characters]")


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/binary", "is binary data, not text; not fetched"),
        ("/png", "is image/png, not text; not fetched"),
        ("/missing", "answered HTTP 404 Not Found"),
        ("/to-file", "only http and https URLs are fetched, not file: file://"),
    ],
)
def test_what_is_not_text_is_refused_in_one_line(page_server: PageServer, path: str, says: str) -> None:
    assert says in refused(page_server.url(path))


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("file:///etc/passwd", "only http and https URLs are fetched, not file"),
        ("ftp://example.com/x", "only http and https URLs are fetched, not ftp"),
        ("http://", "the URL names no host"),
        ("http://[::1", "invalid URL"),
    ],
)
def test_bad_urls_are_refused_before_any_request(url: str, says: str) -> None:
    assert says in refused(url)


def test_a_stalled_server_times_out(page_server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "FETCH_SECONDS", 0.5)
    started = time.monotonic()
    assert "within 0.5 s" in refused(page_server.url("/stall"))
    assert time.monotonic() - started < 5


def test_loopback_and_private_addresses_are_refused_unless_allowed(page_server: PageServer) -> None:
    assert "127.0.0.1 is a private address (127.0.0.1); refused" in refused(
        page_server.url("/text"), private=False
    )
    for url in ("http://10.0.0.1/", "http://169.254.169.254/latest/meta-data", "http://[::1]/"):
        assert "is a private address" in refused(url, private=False)
    assert "plain words" in get(page_server.url("/text"), private=True)


def test_every_redirect_is_checked_again(page_server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """`localhost` passes for a public host here; the redirect's 127.0.0.1 is checked and refused."""
    real = web._addresses
    public = [ipaddress.ip_address("93.184.216.34")]
    monkeypatch.setattr(web, "_addresses", lambda host: public if host == "localhost" else real(host))
    start = page_server.url("/to-loopback").replace("127.0.0.1", "localhost")
    assert "127.0.0.1 is a private address" in refused(start, private=False)


def test_the_tool_is_risky_so_asked_like_a_write() -> None:
    tool = web_fetch_tool(private=False)
    assert not tool.mutating
    assert tool.risk is not None
    assert tool.risk({"url": "https://example.com"})
    assert set(tool.parameters["properties"]) == {"url", "max_chars"}
    assert "max_chars must be 1 or more" in str(pytest.raises(ToolError, get, "https://x.org", 0).value)
