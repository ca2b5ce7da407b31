"""The HTTP client for an endpoint, and the environment's proxy: one httpx cannot use is a one-line
settings error, and an unreachable endpoint reached through a proxy names the proxy."""

from __future__ import annotations

import os
import urllib.parse

import httpx

from nanohermes.core.errors import ConfigError
from nanohermes.core.types import shorten
from nanohermes.llm.failures import strip_userinfo

_PROXY_VARIABLES = {
    "https": ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"),
    "http": ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"),
}


def new_http_client(base_url: str) -> httpx.Client:
    """A client for `base_url`. A plain-http endpoint (a local server) never speaks TLS — redirects are
    not followed — so the CA bundle is not loaded for it: that costs tens of milliseconds per start."""
    try:
        return httpx.Client(verify=not base_url.lower().startswith("http://"))
    except _UNUSABLE as err:
        names = dict.fromkeys(name for names in _PROXY_VARIABLES.values() for name in names)
        broken = next((name for name in names if os.environ.get(name) and not _usable(os.environ[name])), "")
        value = strip_userinfo(os.environ[broken])[0] if broken else ""
        where = broken or "the proxy settings"
        socks = " (a SOCKS proxy needs `pip install 'httpx[socks]'`)" if "socks" in value.lower() else ""
        raise ConfigError(
            f"cannot use the proxy in {where}{f' ({value})' if value else ''}: {shorten(str(err), 200)}",
            f"fix or unset {where}{socks}",
        ) from None


_UNUSABLE = (ValueError, ImportError, httpx.InvalidURL)


def _usable(proxy: str) -> bool:
    """Whether httpx can make a client with `proxy` (nothing is connected)."""
    try:
        httpx.Client(proxy=proxy, trust_env=False).close()
    except _UNUSABLE:
        return False
    return True


def proxy_for(url: str) -> str:
    """`NAME (proxy URL)` of the environment proxy that a request to `url` goes through, or ""."""
    parts = urllib.parse.urlsplit(url)
    variables = _PROXY_VARIABLES.get(parts.scheme.lower(), ())
    name = next((name for name in variables if os.environ.get(name)), None)
    if name is None:
        return ""
    from urllib.request import proxy_bypass  # only here: an unreachable endpoint

    if proxy_bypass(parts.hostname or ""):  # NO_PROXY (or the system setting), as urllib reads it
        return ""
    return f"{name} ({strip_userinfo(os.environ[name])[0]})"
