"""How each setting's value is read and checked (SPEC §2), without a validation library.

A value comes from the command line or the environment (a string), the TOML config file (any TOML
type) or `Settings.with_changes` (an already checked value). Each reader returns the value in its
final type or raises `BadValue` with a short reason; `nanohermes.config.settings` names where it came from.
Strings are read the way users expect from the environment: `"3"` is 3, `"yes"`/`"off"` are booleans.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit  # pathlib imports it anyway: free at start-up

Reader = Callable[[Any], Any]

SHOWN_CHARS = 60
"""How much of a bad value an error line quotes."""
_IPV4_LIKE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")

TRUE_WORDS = frozenset({"1", "true", "t", "yes", "y", "on"})
FALSE_WORDS = frozenset({"0", "false", "f", "no", "n", "off"})
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
"""Control characters and invisible Unicode (SPEC §6): a terminal acts on them, a header refuses them."""
_KEY = re.compile("[!-~]+")
"""What an API key may hold: it travels in an HTTP header, where anything else is refused (and the
HTTP library's error would quote the whole header, key included)."""


class BadValue(ValueError):
    """One value that cannot be used; `reason` says why (the value itself is shown by the caller)."""

    def __init__(self, reason: str, shown: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.shown = shown
        """What to show instead of the value, when the value holds a secret (a password in a URL)."""


class Secret:
    """A secret string (the API key): never shown by repr, str or an error."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def text(value: Any) -> str:
    if not isinstance(value, str):
        raise BadValue("must be a string")
    return value


def optional_text(value: Any) -> str | None:
    """A name that may be unset: blank means unset."""
    return None if value is None else text(value).strip() or None


def optional_name(value: Any) -> str | None:
    """A model name that may be unset. It is shown on the terminal (banner, notes) and sent to the
    endpoint, so control and invisible characters (an escape sequence retitling the window) are refused."""
    name = optional_text(value)
    if name is not None and _INVISIBLE.search(name):
        raise BadValue("must not contain control or invisible characters")
    return name


def secret(value: Any) -> Secret | None:
    """The API key; blank means unset, and the spaces or newline copied around a key are dropped."""
    if value is None or isinstance(value, Secret):
        return value
    if not isinstance(value, str):
        raise BadValue("must be a string")
    key = value.strip()
    if not key:
        return None
    if not _KEY.fullmatch(key):
        raise BadValue("must be printable ASCII without spaces or control characters (check what was copied)")
    return Secret(key)


def base_url(value: Any) -> str:
    url = text(value).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise BadValue("must start with http:// or https://")
    if _INVISIBLE.search(url) or any(char.isspace() for char in url):
        raise BadValue("must not contain spaces or control characters (write a space as %20)")
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # .port checks the number
    except ValueError as err:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        raise BadValue(f"is not a valid URL ({err})") from None
    if parts.username is not None or parts.password is not None:
        # error lines quote the URL: a password in it would be printed
        raise BadValue("must not hold a user name or password (give the key as api_key)", _masked(parts))
    if not host:
        raise BadValue("names no host (e.g. http://localhost:8080/v1)")
    problem = _host_problem(host)
    if problem:
        raise BadValue(problem)
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


def _masked(parts: SplitResult) -> str:
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise BadValue("must be true or false")


def whole(low: int, high: int | None = None) -> Reader:
    """An integer in [low, high]."""

    def read(value: Any) -> int:
        number = _whole(value)
        if number < low:
            raise BadValue(f"must be at least {low:,}")
        if high is not None and number > high:
            raise BadValue(f"must be at most {high:,}")
        return number

    return read


def optional_whole(low: int) -> Reader:
    check = whole(low)
    return lambda value: None if value is None else check(value)


def _whole(value: Any) -> int:
    if isinstance(value, bool):
        raise BadValue("must be a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip().replace("_", ""))
        except ValueError:
            pass
    raise BadValue("must be a whole number")


def seconds(high: float | None = None) -> Reader:
    """A finite number of seconds greater than 0 (and at most `high`)."""

    def read(value: Any) -> float:
        number: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            raise BadValue("must be a number of seconds")
        if number <= 0:
            raise BadValue("must be greater than 0")
        if high is not None and number > high:
            raise BadValue(f"must be at most {high:,g}")
        return number

    return read


def one_of(*choices: str) -> Reader:
    def read(value: Any) -> str:
        if isinstance(value, str) and value.strip() in choices:
            return value.strip()
        raise BadValue("must be one of " + ", ".join(repr(choice) for choice in choices))

    return read


def path(value: Any) -> Path:
    if isinstance(value, Path):
        return value
    if isinstance(value, str) and value.strip():
        return Path(value.strip())
    raise BadValue("must be a path")
