"""SPEC §6 on write: redact secrets; refuse invisible Unicode and prompt-injection phrases."""

from __future__ import annotations

import re
import unicodedata

REDACTED = "[REDACTED]"

# Token families whose whole match is a secret.
_TOKENS = re.compile(
    r"""
      \bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}        # OpenAI, Anthropic, generic sk-
    | \b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}              # Stripe
    | \bgh[pousr]_[A-Za-z0-9]{20,}                                # GitHub tokens
    | \bgithub_pat_[A-Za-z0-9_]{20,}                              # GitHub fine-grained tokens
    | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b                              # AWS access key ids
    | \bxox[abposre]-[A-Za-z0-9-]{10,}                            # Slack
    | \bglpat-[A-Za-z0-9_-]{20,}                                  # GitLab
    | \bhf_[A-Za-z0-9]{30,}                                       # Hugging Face
    | \bnpm_[A-Za-z0-9]{30,}                                      # npm
    | \bAIza[0-9A-Za-z_-]{35}                                     # Google API keys
    | \beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}   # JWTs
    """,
    re.VERBOSE,
)
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r".*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_BEARER = re.compile(r"\b(Bearer|Basic|Token)(\s+)([A-Za-z0-9._~+/=-]{12,})", re.IGNORECASE)
# `password=…`, `api_key: "…"`: keep the name, redact the value. A value that points elsewhere
# (`$VAR`, `${VAR}`, `%VAR%`, `<placeholder>`, `os.environ[...]`) is not a secret and stays.
_ASSIGNMENT = re.compile(
    r"""(?ix)
    \b((?:[a-z0-9]+[_-])*(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey
        |access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token))
    (["']?\s*(?:=|:)\s*)
    (?!\$|%|<|\{|os\.environ|process\.env|getenv|env\()
    (["']?)([^\s"',;]{4,})
    """
)
_URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)", re.IGNORECASE)

_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]")
_INJECTION = (
    re.compile(
        r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
        r"(?:previous|prior|above|earlier|preceding|system|original)\s+"
        r"(?:instructions?|prompts?|rules|messages?|directions)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:do\s+not|don't|dont|never)\s+(?:tell|inform|notify|alert|show)\s+(?:this\s+to\s+)?the\s+user",
        re.IGNORECASE,
    ),
    re.compile(r"\bwithout\s+(?:telling|informing|notifying)\s+the\s+user", re.IGNORECASE),
    re.compile(
        r"(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|先前|前面|上述|上面|所有)(?:的)?(?:所有)?(?:指令|指示|提示|规则|要求)"
    ),
    re.compile(r"(?:不要|别|不许|切勿)(?:告诉|通知|提醒|让)用户"),
)


def redact(text: str) -> str:
    """`text` with every secret it holds replaced by [REDACTED]."""
    text = _PEM.sub(REDACTED, text)
    text = _TOKENS.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", text)
    return _ASSIGNMENT.sub(_redact_assignment, text)


def _redact_assignment(match: re.Match[str]) -> str:
    name, separator, quote, value = match.groups()
    if value.startswith("[REDACTED"):
        return match.group(0)
    if ":" in separator and not quote and not _looks_secret(value):
        return match.group(0)  # prose such as "token: never share it"
    return f"{name}{separator}{quote}{REDACTED}"


def _looks_secret(value: str) -> bool:
    return len(value) >= 8 and any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


def refusal_reason(text: str) -> str | None:
    """Why `text` must not be stored (invisible Unicode, an injection phrase), or None if it may be."""
    invisible = _INVISIBLE.search(text)
    if invisible is not None:
        char = invisible.group(0)
        name = unicodedata.name(char, "format character").lower()
        return f"text holds the invisible Unicode character U+{ord(char):04X} ({name}); refused"
    for pattern in _INJECTION:
        found = pattern.search(text)
        if found is not None:
            phrase = " ".join(found.group(0).split())
            return f"text looks like a prompt injection ({phrase!r}); refused"
    return None
