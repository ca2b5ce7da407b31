"""SPEC §6 on write: redact secrets; refuse invisible Unicode, control characters, injection phrases."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from nanohermes.core.types import hide_secrets

REDACTED = "[REDACTED]"
MAX_CHECKED_CHARS = 4000  # ten times what is stored: redaction can shrink the head and leave a full memory

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
# `password=…`, `api_key: "…"`: keep the name, redact the value unless it points elsewhere (`$VAR`).
# The name starts at a boundary or after `_`/`-` (`DB_PASSWORD`), with no `(?:[a-z0-9]+[_-])*` prefix:
# that ran to the end of a long `a-b-c-…` from each of its boundaries (an 80 KB paste: half a minute).
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?:\b|(?<=[_-]))((?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey
        |access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token))
    (["']?\s*(?:=|:)\s*)
    (?!\$|%|<|\{|os\.environ|process\.env|getenv|env\()
    (["']?)([^\s"',;]{4,})
    """
)
# A 40-character AWS secret access key is indistinguishable from other base64 on its own: redacted when
# the words "aws" or "secret" stand within 60 characters before or after it.
_B64_40 = r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_AWS_SECRET = re.compile(
    rf"(?i)(?:\baws|secret)[^\n]{{0,60}}?({_B64_40})|({_B64_40})[^\n]{{0,60}}?(?:\baws|secret)"
)
# `scheme://user:password@`, found from its `://` (a scheme matched from every `\b` of a long
# `a.b.c.…` ran to its end again: quadratic).
_URL_CREDENTIALS = re.compile(r"([a-z0-9+.-]://[^\s:/@]+:)([^\s@/]+)(@)", re.IGNORECASE)

_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]")
# C0 and C1 control characters and DEL; not tab, newline, vertical tab, form feed or carriage return.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
# A whole terminal escape sequence (CSI, OSC/DCS/SOS/PM/APC strings, other ESC sequences), so that
# cleaning leaves no `[31m` behind.
_ESCAPE_SEQUENCE = re.compile(
    "(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]"
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|\x1b[ -/]*[0-~]"
)
_CONTROL_NAMES = {0x00: "null", 0x07: "bell", 0x08: "backspace", 0x7F: "delete"}
_CONTROL_NAMES[0x9B] = "control sequence introducer"
_CONTROL_NAMES[0x1B] = "escape, which starts terminal escape sequences"
_INJECTION = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|preceding|system|original)\s+"
    r"(?:instructions?|prompts?|rules|messages?|directions)"
    r"|\b(?:do\s+not|don't|dont|never)\s+(?:tell|inform|notify|alert|show)\s+(?:this\s+to\s+)?the\s+user"
    r"|\bwithout\s+(?:telling|informing|notifying)\s+the\s+user"
    r"|(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|先前|前面|上述|上面|所有)(?:的)?(?:所有)?(?:指令|指示|提示|规则|要求)"
    r"|(?:不要|别|不许|切勿)(?:告诉|通知|提醒|让)用户"
)


_ZWJ = "\u200d"
_EMOJI_MODIFIERS = frozenset("\ufe0e\ufe0f\u20e3") | {chr(c) for c in range(0x1F3FB, 0x1F400)}
_FLAG = re.compile("\U0001f3f4[\U000e0020-\U000e007e]*\U000e007f")  # 🏴 + tags + cancel tag


def _in_emoji(text: str, at: int) -> bool:
    """Whether the invisible character at `at` is part of an emoji sequence: a zero-width joiner between
    two pictographs (👨‍👩‍👧, 🧘‍♀️ with a modifier), or a tag character of a subdivision flag."""
    if text[at] == _ZWJ:
        before = at - 1
        while before >= 0 and text[before] in _EMOJI_MODIFIERS:
            before -= 1
        after = text[at + 1 : at + 2]
        pictographs = before >= 0 and unicodedata.category(text[before]) == "So"
        return pictographs and after != "" and unicodedata.category(after) == "So"
    flag = text.rfind("\U0001f3f4", 0, at)
    found = _FLAG.match(text, flag) if flag >= 0 else None
    return found is not None and found.end() > at


def unsafe_removed(text: str) -> str:
    """`text` without terminal escape sequences and what else `refusal_reason` refuses but phrases."""
    text = _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))
    if _INVISIBLE.search(text) is None:
        return text
    return "".join(ch for at, ch in enumerate(text) if not _INVISIBLE.match(ch) or _in_emoji(text, at))


def controls_shown(text: str) -> str:
    """`text` with each control character written as a visible escape (`\\x1b`): one an older version
    stored reaches the prompt as text, not as a sequence."""
    return _CONTROL.sub(lambda found: repr(found.group(0))[1:-1], text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret replaced by [REDACTED]: each of `secrets`, then the shapes of SPEC §6."""
    text = _PEM.sub(REDACTED, hide_secrets(text, secrets, REDACTED))
    text = _TOKENS.sub(REDACTED, text)
    text = _AWS_SECRET.sub(_redact_aws, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", text)
    return _ASSIGNMENT.sub(_redact_assignment, text)


def _redact_aws(match: re.Match[str]) -> str:
    whole = match.group(0)
    key = match.group(1) or match.group(2)
    if not any(ch.isdigit() for ch in key) or not any(ch.isupper() for ch in key):
        return whole  # a long word or path, not a key
    return whole.replace(key, REDACTED)


def _redact_assignment(match: re.Match[str]) -> str:
    name, separator, quote, value = match.groups()
    secret = len(value) >= 8 and any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)
    if value.startswith("[REDACTED") or (":" in separator and not quote and not secret):
        return match.group(0)  # redacted already, or prose such as "token: never share it"
    return f"{name}{separator}{quote}{REDACTED}"


_WHITESPACE_RUN = re.compile(r"\s{2,}")


def _as_read(text: str) -> str:
    """`text` as the model reads it: fullwidth forms folded, format characters (a soft hyphen) dropped,
    a whitespace run one space or line break (the patterns' adjacent `\\s*` took cubic time over one)."""
    if not text.isascii():
        folded = unicodedata.normalize("NFKC", text)
        text = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    return _WHITESPACE_RUN.sub(lambda run: "\n" if "\n" in run.group(0) else " ", text)


def refusal_reason(text: str) -> str | None:
    """Why `text` must not be stored (a control character, invisible Unicode, an injection phrase)."""
    control = _CONTROL.search(text)
    if control is not None:
        code = ord(control.group(0))
        name = _CONTROL_NAMES.get(code, "C0 control character" if code < 0x80 else "C1 control character")
        return f"text holds the control character U+{code:04X} ({name}); refused"
    invisible = next((m for m in _INVISIBLE.finditer(text) if not _in_emoji(text, m.start())), None)
    if invisible is not None:
        char = invisible.group(0)
        name = unicodedata.name(char, "format character").lower()
        return f"text holds the invisible Unicode character U+{ord(char):04X} ({name}); refused"
    found = _phrase(_as_read(text), (("looks like a prompt injection", _INJECTION),))
    return None if found is None else f"text {found}; refused"


# SPEC §3.7: memories are the user's, not a file's. A distilled text carrying one of these instructions
# most likely came from a README or a tool output planting it, so `remember` refuses it for source auto.
_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|http(?:ie)?)\b"
_SHELLS = (
    r"(?:sudo\s+)?(?:ba|z|k|da|fi)?sh|python[23]?|perl|ruby|node|php|iex|invoke-expression|pwsh|powershell"
)
_OBJECTS = (
    r"(?:data|contents?|files?|secrets?|\.?env(?:ironment)?(?:\s+variables)?|keys?|tokens?|credentials?"
    r"|passwords?|history|repo(?:sitory)?|code|source|logs?|cookies?|sessions?|outputs?|workspace"
    r"|everything|conversations?|prompts?|ssh|memor(?:y|ies)|home\s+directory)"
)
_DESTINATION = (
    r"(?:https?://|ftp://|\b[\w.+-]+@[\w-]+\.[\w.]+|\b(?:\d{1,3}\.){3}\d{1,3}\b|webhook|pastebin|ngrok)"
)
# `curl … | sh` is looked for from a pipeline segment's first fetch word only: tried from every fetch
# word, `[^\n|;&]*` ran to the segment's end once per word (`curl curl …`: quadratic).
_SEGMENT_START = r"(?:\A|(?<=[\n|;&]))"
_RISKY: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "runs code fetched from the network",
        re.compile(
            rf"(?ix){_SEGMENT_START}(?>[^\n|;&]*?(?=\b{_FETCH}))"  # curl … | sh, from its segment's
            rf"(?P<pipe>\b{_FETCH}[^\n|;&]*+\|\s*(?:{_SHELLS})\b)"  # first fetch word: linear
            # sh <(curl …), eval "$(curl …)"
            rf"|(?:\b(?:{_SHELLS})\b|\beval|\bsource|\.)\s*(?:-c\s*)?[\"']?\s*[<$]\(\s*{_FETCH}"
            rf"|\b(?:iex|invoke-expression)\b\s*\(?\s*(?:\(?\s*{_FETCH}|\(?\s*new-object\s+net\.webclient)"
            r"|\bdownloadstring\s*\("
        ),
    ),
    (
        "disables a security check",
        re.compile(
            r"(?ix)--no-verify\b|\bverify\s*=\s*false\b|--insecure\b|\bcurl\s+(?:-\w+\s+)*-k\b"
            r"|\bchmod\s+(?:-R\s+)?(?:0?777|a\+rwx|ugo\+rwx)\b|\bsetenforce\s+0\b|\bufw\s+disable\b"
            r"|node_tls_reject_unauthorized\s*=\s*[\"']?0|pythonhttpsverify\s*=\s*[\"']?0|git_ssl_no_verify"
            r"|sslverify\s*(?:=\s*)?false|stricthostkeychecking\s*=?\s*no|--trusted-host\b"
            r"|--disable-web-security|--allow-unauthenticated|\bset\s+\+o\s+noclobber"
            r"|\b(?:disable|turn\s+off|switch\s+off|skip|bypass|ignore)\s+(?:the\s+|all\s+)?"
            r"(?:ssl|tls|https|certificate|cert|signature|gpg|hash|checksum|host\s*key|security|firewall"
            r"|antivirus|sandbox|selinux|apparmor|pre-commit|git\s+hooks?)"
            r"(?:\s+(?:verification|validation|checks?|checking|hooks?|protection))?\b"
            r"|(?:关闭|禁用|跳过|绕过)(?:证书|SSL|TLS|安全|防火墙|签名|校验)"
        ),
    ),
    (
        "sends data to somewhere outside",
        re.compile(
            rf"(?ix)\b(?:send|upload|post|exfiltrate|forward|transmit|e-?mail|leak|copy|sync|pipe|report)s?\b"
            rf"[^\n]{{0,80}}?\b{_OBJECTS}\b[^\n]{{0,80}}?{_DESTINATION}"
            r"|(?:\A|(?<=\n))(?>[^\n]*?(?=\bcurl\b))"  # curl -d @file, from its line's first curl
            r"(?P<upload>\bcurl\b[^\n]*\s(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file)"
            r"\s+[\"']?@)"
            r"|\|\s*(?:nc|ncat|netcat|socat)\s+\S+|\b(?:nc|ncat|netcat)\s+\S+\s+\d+\s*<"
            r"|(?:发送|上传|转发)(?:到|至|给)?[^\n]{0,40}?(?:https?://|服务器|邮箱)"
        ),
    ),
)


def risky_instruction(text: str) -> str | None:
    """Why `text` is an instruction no file may plant as a memory, or None."""
    found = _phrase(_as_read(text), _RISKY)
    return None if found is None else f"text {found}"


def _phrase(probe: str, rules: Iterable[tuple[str, re.Pattern[str]]]) -> str | None:
    """`what (phrase)` of the first rule whose pattern `probe` holds: its named group, else the match."""
    for what, pattern in rules:
        found = pattern.search(probe)
        if found is not None:
            named = [part for part in found.groupdict().values() if part]
            return f"{what} ({' '.join((named[0] if named else found.group(0)).split())[:80]!r})"
    return None


def checked_part(text: str, limit: int = MAX_CHECKED_CHARS) -> str:
    """The head of a memory text the model sent (checking megabytes held the GIL for seconds), cut at
    whitespace in its second half if any: a secret cut in two could escape redaction."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind(space) for space in (" ", "\n", "\t"))
    return head[:cut] if cut > limit // 2 else head
