"""web_fetch: one http(s) page as text, HTML as Markdown (`markdownify`). Non-public addresses are
refused (every address the host resolves to, again at each redirect) unless `web_fetch_private`."""

from __future__ import annotations

import ipaddress
import socket
import time

import httpx

from nanohermes import __version__
from nanohermes.core.cancel import CancelToken
from nanohermes.core.errors import ToolError
from nanohermes.tools.base import CallContext, Tool, tool_from_function
from nanohermes.tools.files import SNIFF_BYTES, looks_binary

FETCH_MAX_BYTES = 2 * 1024 * 1024
FETCH_SECONDS = 30.0
MAX_REDIRECTS = 5
HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "+json", "+xml")


def web_fetch_tool(private: bool) -> Tool:
    def web_fetch(url: str, max_chars: int = 20_000, *, ctx: CallContext) -> str:
        """Fetch an http(s) URL as text (HTML as Markdown)."""
        return fetch(url, max_chars, private=private, cancel=ctx.cancel)

    return tool_from_function(web_fetch, risk=lambda args: "it reaches the network")


def fetch(url: str, max_chars: int, *, private: bool, cancel: CancelToken) -> str:
    if max_chars < 1:
        raise ToolError("max_chars must be 1 or more")
    deadline = time.monotonic() + FETCH_SECONDS
    headers = {"User-Agent": f"nanohermes/{__version__} (web_fetch)"}
    try:
        with httpx.Client(headers=headers, follow_redirects=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                _check_target(url, private)
                timeout = max(0.1, deadline - time.monotonic())
                with client.stream("GET", url, timeout=timeout) as response:
                    if response.next_request is not None:
                        url = str(response.next_request.url)
                        continue
                    return _page(response, max_chars, deadline, cancel)
    except httpx.TimeoutException:
        raise ToolError(f"{url} did not answer within {FETCH_SECONDS:g} s") from None
    except httpx.HTTPError as err:
        raise ToolError(f"cannot fetch {url}: {err}") from None
    raise ToolError(f"more than {MAX_REDIRECTS} redirects, last to {url}; not followed")


def _check_target(url: str, private: bool) -> None:
    """Refuse what is not http(s), and (unless `private`) a host with a non-public address."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as err:
        raise ToolError(f"invalid URL {url!r}: {err}") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"only http and https URLs are fetched, not {parsed.scheme or 'this'}: {url}")
    if not parsed.host:
        raise ToolError(f"the URL names no host: {url}")
    if private:
        return
    for address in _addresses(parsed.host):
        if not address.is_global or address.is_multicast:
            where = f"{parsed.host} is a private address ({address})"
            raise ToolError(f"{where}; refused (set web_fetch_private = true to allow)")


def _addresses(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Every address `host` resolves to (an IPv4-mapped IPv6 one as IPv4)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as err:
        raise ToolError(f"cannot resolve {host}: {getattr(err, 'strerror', None) or err}") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    return [a.ipv4_mapped if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped else a for a in addresses]


def _page(response: httpx.Response, max_chars: int, deadline: float, cancel: CancelToken) -> str:
    url = str(response.url)
    if response.status_code >= 400:
        raise ToolError(f"{url} answered HTTP {response.status_code} {response.reason_phrase}")
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind and not kind.startswith(HTML_TYPES) and not any(t in kind for t in TEXT_TYPES):
        raise ToolError(f"{url} is {kind}, not text; not fetched")
    received = bytearray()  # appending a chunk does not copy what came before
    for chunk in response.iter_bytes():
        cancel.raise_if_cancelled()
        if time.monotonic() > deadline:
            raise ToolError(f"{url} did not finish within {FETCH_SECONDS:g} s")
        received += chunk
        if len(received) > FETCH_MAX_BYTES:
            break
    cut = len(received) > FETCH_MAX_BYTES
    data = bytes(received[:FETCH_MAX_BYTES])
    if looks_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{url} is binary data, not text; not fetched")
    try:
        text = data.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = data.decode("utf-8", errors="replace")
    if kind.startswith(HTML_TYPES):
        from markdownify import markdownify  # with BeautifulSoup: loaded on the first HTML page

        text = markdownify(text, heading_style="ATX").strip()
    read = f"first {FETCH_MAX_BYTES // 2**20} MB read" if cut else f"{len(data):,} bytes"
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[… cut at {max_chars:,} of {len(text):,} characters]"
    return f"{url} ({kind or 'no content type'}, {read})\n\n{text}"
