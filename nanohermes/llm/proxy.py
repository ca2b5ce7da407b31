"""The HTTP client for an endpoint, and the proxy (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY) it goes through.

httpx reads the proxy from the environment. A value it cannot use (`socks5://…` without socksio, an
unknown scheme, a bad port) must be a one-line settings error, and an unreachable endpoint reached
through a proxy must name the proxy: the endpoint itself may be fine.
"""

from __future__ import annotations

import os
import urllib.parse

import httpx

from nanohermes.errors import ConfigError
from nanohermes.llm.failures import one_line, strip_userinfo

_PROXY_VARIABLES = {
    "https": ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"),
    "http": ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"),
}


def new_http_client(base_url: str) -> httpx.Client:
    """A client for `base_url`. A plain-http endpoint (a local server) never speaks TLS — redirects are
    not followed — so the CA bundle is not loaded for it: that costs tens of milliseconds per start."""
    try:
        return httpx.Client(verify=not base_url.lower().startswith("http://"))
    except (ValueError, ImportError, httpx.InvalidURL) as err:
        names = [name for names in _PROXY_VARIABLES.values() for name in names if os.environ.get(name)]
        where = names[0] if names else "the proxy settings"
        value = strip_userinfo(os.environ[names[0]])[0] if names else ""
        socks = " (a SOCKS proxy needs `pip install 'httpx[socks]'`)" if "socks" in value.lower() else ""
        raise ConfigError(
            f"cannot use the proxy in {where}{f' ({value})' if value else ''}: {one_line(str(err), 200)}",
            f"fix or unset {where}{socks}",
        ) from None


def proxy_for(url: str) -> str:
    """`NAME (proxy URL)` of the environment proxy that a request to `url` goes through, or ""."""
    parts = urllib.parse.urlsplit(url)
    variables = _PROXY_VARIABLES.get(parts.scheme.lower(), ())
    name = next((name for name in variables if os.environ.get(name)), None)
    if name is None or _bypassed(parts.hostname or ""):
        return ""
    return f"{name} ({strip_userinfo(os.environ[name])[0]})"


def _bypassed(host: str) -> bool:
    """Whether NO_PROXY names `host` (itself, a domain above it, or `*`)."""
    listed = os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or ""
    entries = [entry.strip().lower().lstrip(".") for entry in listed.split(",") if entry.strip()]
    host = host.lower()
    return any(entry in ("*", host) or host.endswith(f".{entry}") for entry in entries)
