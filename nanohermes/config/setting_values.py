"""The value types of the settings (SPEC §2): pydantic types, plus the checks pydantic has no type for.
`reason` words pydantic's errors as nanohermes' messages always have ("must be a whole number")."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr
from pydantic_core import ErrorDetails, PydanticCustomError

from nanohermes.config.mcp_config import McpServerConfig, check_server_names

SHOWN_CHARS = 60
_IPV4_LIKE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
"""Control characters and invisible Unicode (SPEC §6): a terminal acts on them, a header refuses them."""
_KEY = re.compile("[!-~]+")
"""What an API key may hold: it travels in an HTTP header, where anything else is refused (and the
HTTP library's error would quote the whole header, key included)."""

_REASONS = {
    **dict.fromkeys(
        ("int_type", "int_parsing", "int_parsing_size", "int_from_float"), "must be a whole number"
    ),
    **dict.fromkeys(("float_type", "float_parsing", "finite_number"), "must be a number of seconds"),
    **dict.fromkeys(("bool_type", "bool_parsing"), "must be true or false"),
    "string_type": "must be a string",
    "path_type": "must be a path",
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "literal_error": "must be one of {expected}",
}


def reason(error: ErrorDetails) -> str:
    template = _REASONS.get(error["type"])
    if template is None:  # a ValueError of the checks below
        return error["msg"].removeprefix("Value error, ")
    context = {key: _bound(value) for key, value in error.get("ctx", {}).items()}
    return template.format(**context)


def _bound(value: Any) -> str:
    """A bound as the messages print it (86,400), or pydantic's `'a', 'b' or 'c'` as `'a', 'b', 'c'`."""
    if isinstance(value, int | float):
        return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"
    return str(value).replace(" or ", ", ")


def shown(value: Any) -> str:
    """A bad value as an error line quotes it: TOML's spelling, cut short; "" for a table or list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= SHOWN_CHARS else repr(value[:SHOWN_CHARS]) + "…"
    if isinstance(value, int) and value.bit_length() > 4 * SHOWN_CHARS:  # str() refuses 4,300+ digits
        return f"a number of about {int(value.bit_length() * 0.30103):,} digits"
    if isinstance(value, int | float):
        return str(value)
    isoformat = getattr(value, "isoformat", None)  # a TOML date or time
    return str(isoformat()) if callable(isoformat) else ""


def optional_name(value: Any) -> Any:
    """A model name; blank is unset. It is shown on the terminal, so control and invisible characters
    (an escape sequence retitling the window) are refused."""
    if not isinstance(value, str):
        return value  # pydantic says what it should be
    name = value.strip()
    if _INVISIBLE.search(name):
        raise ValueError("must not contain control or invisible characters")
    return name or None


def _api_key(value: Any) -> Any:
    """Blank is unset (the spaces or newline copied around a key are stripped before)."""
    if not isinstance(value, str):
        return value
    if value and not _KEY.fullmatch(value):
        raise ValueError(
            "must be printable ASCII without spaces or control characters (check what was copied)"
        )
    return value or None


def _base_url(url: str) -> str:
    url = url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    if _INVISIBLE.search(url) or any(char.isspace() for char in url):
        raise ValueError("must not contain spaces or control characters (write a space as %20)")
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # .port checks the number
    except ValueError as err:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        raise ValueError(f"is not a valid URL ({err})") from None
    if parts.username is not None or parts.password is not None:
        # error lines quote the URL: a password in it would be printed, so the masked URL is shown
        masked = parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()
        message = "must not hold a user name or password (give the key as api_key)"
        raise PydanticCustomError("url_credentials", message, {"shown": masked})
    if not host:
        raise ValueError("names no host (e.g. http://localhost:8080/v1)")
    problem = _host_problem(host)
    if problem:
        raise ValueError(problem)
    return url


def _host_problem(host: str) -> str | None:
    """What the HTTP library would refuse only at the first request, with an internal error: an IPv4
    address out of range, an empty or over-long label (`api..example.com`), a bad IDNA name."""
    if _IPV4_LIKE.fullmatch(host):
        import ipaddress

        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            return "its host is not a valid IPv4 address"
        return None
    if ":" in host:  # an IPv6 address: urlsplit has checked it
        return None
    labels = host.removesuffix(".").split(".")
    if not host.isascii() or any(label.startswith("xn--") for label in labels):
        import idna  # httpx's own IDNA codec; loaded only for such a name

        try:
            host = idna.encode(idna.decode(host) if host.isascii() else host).decode("ascii")
        except (idna.IDNAError, UnicodeError):
            return "its host is not a valid international domain name"
        labels = host.removesuffix(".").split(".")
    if any(not 0 < len(label) <= 63 for label in labels):
        return "its host has an empty part or one over 63 characters (look for '..')"
    return None


def _number(reason: str) -> BeforeValidator:
    """pydantic reads `true` as 1, and says "finite number" of `inf`: neither is a number here."""

    def check(value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(reason)
        return value

    return BeforeValidator(check)


def _folder(value: Any) -> Any:
    if isinstance(value, str) and not value:  # `--memory-dir "$UNSET"`: not the current directory
        raise ValueError("must be a path")
    return value


def _servers(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError("must be a table of MCP servers ([mcp_servers.NAME] in the config file)")
    problem = check_server_names(list(value))
    if problem:
        raise ValueError(problem)
    return value


Name = Annotated[str | None, BeforeValidator(optional_name)]
ApiKey = Annotated[SecretStr | None, BeforeValidator(_api_key)]
BaseUrl = Annotated[str, AfterValidator(_base_url)]
Whole = Annotated[int, _number("must be a whole number")]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False), _number("must be a number of seconds")]
Folder = Annotated[Path, BeforeValidator(_folder)]
McpServers = Annotated[dict[str, McpServerConfig], BeforeValidator(_servers)]
