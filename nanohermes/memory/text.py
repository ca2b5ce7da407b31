"""Text rules of SPEC §3.4–§3.5: tokenizer, normalize, duplicate test, negation guard, cutting, and
the analysis for retrieval (tokens, Snowball English stems, stop words dropped from queries)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from nanohermes.memory.constants import DUPLICATE_MIN_WEIGHT, MAX_TEXT

# Han, the iteration marks 々〆〇, Hiragana, Katakana and Hangul; not CJK punctuation.
_CJK_RANGES = (
    "\u1100-\u11ff\u3005-\u3007\u3041-\u30fa\u30fc-\u30ff\u3131-\u318e\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\uffa0-\uffdc\U00020000-\U0003134f"
)
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
# One match per run: group 1 a CJK run, group 2 a run of other letters/digits (`_` separates).
_RUNS = re.compile(f"([{_CJK_RANGES}]+)|([^\\W_{_CJK_RANGES}]+)")
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]{2,}")  # `_RUNS`' words of ≥ 2 characters, on ASCII text
_PAIRS = re.compile(r"(?=(..))", re.DOTALL)  # every overlapping pair of characters

_PUNCTUATION = "，。！？；：、,.!?;:()（）「」\"'“”【】…—-·*#`>~"
_DROP = re.compile(f"[\\s{re.escape(_PUNCTUATION)}]+")

_NEGATION_ZH = ("不", "别", "没", "勿", "禁止")
_NEGATION_EN = re.compile(r"\b(?:not|no|never|don't|dont|avoid|without|\w+n't)\b", re.IGNORECASE)

_SENTENCE_END = re.compile(r"[。！？；!?;]|\.(?=\s)|\n")
_CLAUSE_END = re.compile(r"[，、：,:]|\s[-—–]\s")


def tokenize(text: str) -> list[str]:
    """Lowercase words of ≥ 2 characters, and CJK runs as overlapping bigrams (a lone character stays)."""
    if text.isascii():  # no CJK possible: one plain pattern, much faster than the Unicode classes
        return [word.lower() for word in _ASCII_WORDS.findall(text)]
    tokens: list[str] = []
    for cjk, word in _RUNS.findall(text):
        if len(word) >= 2:
            tokens.append(word.lower())
        elif cjk:
            tokens.extend(_PAIRS.findall(cjk) or [cjk])
    return tokens


def normalize(text: str) -> str:
    """Lowercase, without whitespace and the punctuation set of SPEC §3.4: the duplicate key."""
    return _DROP.sub("", text.lower())


def weight(key: str) -> int:
    """A CJK character weighs 4 (about the information of a short English word), anything else 1."""
    return len(key) + 3 * len(_CJK_CHAR.findall(key))


def has_negation(text: str) -> bool:
    return (
        any(word in text for word in _NEGATION_ZH) or _NEGATION_EN.search(text.replace("’", "'")) is not None
    )


def is_duplicate(new_text: str, old_text: str) -> bool:
    """Equal keys, or one contains the other and the shorter weighs ≥ 12 — unless exactly one negates."""
    new_key, old_key = normalize(new_text), normalize(old_text)
    if new_key != old_key:
        shorter, longer = (new_key, old_key) if len(new_key) <= len(old_key) else (old_key, new_key)
        if not shorter or shorter not in longer or weight(shorter) < DUPLICATE_MIN_WEIGHT:
            return False
    return has_negation(new_text) == has_negation(old_text)


def cut_text(text: str, limit: int = MAX_TEXT) -> str:
    """At most `limit` characters: cut at the last sentence, clause or word boundary in the second half."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    floor = limit // 2
    for pattern in (_SENTENCE_END, _CLAUSE_END):
        ends = [m.end() for m in pattern.finditer(head) if floor <= m.end() <= limit]
        if ends:
            return text[: ends[-1]].rstrip()
    # the largest cut that does not split an ASCII word (CJK may be cut anywhere)
    word = {i for i in range(floor - 1, limit) if text[i].isascii() and (text[i].isalnum() or text[i] == "_")}
    cut = next(
        (cut for cut in range(limit - 1, floor - 1, -1) if cut - 1 not in word or cut not in word), limit - 1
    )
    return text[:cut].rstrip() + "…"


STOP_EN = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her
    hers herself it its itself they them their theirs themselves what which who whom this that these
    those am is are was were be been being have has had having do does did doing a an the and but if
    or because as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there when where
    why how all any both each few more most other some such no nor not only own same so than too very
    can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn would could ought cannot let
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
"""English function words: NLTK's and Snowball's modals (`don` is what is left of `don't`)."""

_IRREGULAR = {
    form: base
    for forms, base in (
        group.split(":")
        for group in """
    arose,arisen:arise awoke,awoken:awake beaten:beat became:become began,begun:begin bent:bend
    bitten:bite blew,blown:blow broke,broken:break brought:bring built:build burnt:burn bought:buy
    caught:catch chose,chosen:choose came:come crept:creep dealt:deal dug:dig drew,drawn:draw
    dreamt:dream drank,drunk:drink drove,driven:drive ate,eaten:eat fed:feed fought:fight
    flew,flown:fly forbade,forbidden:forbid forgot,forgotten:forget forgave,forgiven:forgive
    froze,frozen:freeze got,gotten:get gave,given:give went,gone:go grew,grown:grow hung:hang
    heard:hear hid,hidden:hide held:hold kept:keep knelt:kneel knew,known:know laid:lay led:lead
    learnt:learn lent:lend lost:lose meant:mean met:meet paid:pay ran:run rang,rung:ring
    rode,ridden:ride sang,sung:sing sank,sunk:sink sat:sit slept:sleep slid:slide sold:sell sent:send
    shook,shaken:shake shone:shine shot:shoot shown:show sought:seek spent:spend spun:spin stood:stand
    stole,stolen:steal stuck:stick stung:sting strove,striven:strive struck:strike swore,sworn:swear
    swept:sweep swam,swum:swim swung:swing taught:teach tore,torn:tear told:tell thought:think
    threw,thrown:throw took,taken:take understood:understand woke,woken:wake wore,worn:wear wept:weep
    wrote,written:write seen:see done:do spoke:speak spoken:speak made:make said:say felt:feel
    fell,fallen:fall
        """.split()  # noqa: SIM905
    )
    for form in forms.split(",")
}
"""Irregular English verb forms → their base (Snowball folds only regular inflection). Forms that are
also common words (`left`, `saw`, `found`, `rose`, `won` of won't) are left out."""

_STOP_ZH_CHARS = frozenset(
    "的了是在和与及或也都就还又把被给让对向从于以之而但则即吗呢吧啊呀嘛哦着过很太更最这那哪谁"
    "我你您他她它们个些么啥该得地将要会能可请"
)
STOP_ZH = frozenset(
    _STOP_ZH_CHARS
    | set(
        """
        怎么 怎样 怎麽 什么 什麽 如何 为何 为什 哪里 哪儿 哪个 哪些 一下 一个 一些 这个 那个 这些 那些
        这样 那样 这么 那么 这里 那里 我们 你们 他们 她们 它们 自己 可以 能够 应该 需要 是否 是不 不是
        还是 或者 以及 而且 但是 因为 所以 如果 虽然 然后 已经 就是 只是 有没 没有 有什 有哪 请问
        """.split()  # noqa: SIM905
    )
)
"""Chinese function characters and words (as the tokenizer's bigrams)."""


@functools.cache
def _stem_word() -> Callable[[str], str]:
    import Stemmer  # PyStemmer: Snowball in C; imported on first use, off the path to the prompt

    stem_word: Callable[[str], str] = Stemmer.Stemmer("english").stemWord
    return stem_word


@functools.lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """The Snowball English stem of a word token (`makefiles` → `makefil`, `drew` → `draw`)."""
    if _CJK_CHAR.match(token[0]):
        return token
    return _stem_word()(_IRREGULAR.get(token, token))


def is_stop_word(token: str) -> bool:
    """A function word (or a form of one: `done` is `do`), or a CJK bigram of two function characters."""
    if token in STOP_EN or token in STOP_ZH or _IRREGULAR.get(token) in STOP_EN:
        return True
    return len(token) == 2 and token[0] in _STOP_ZH_CHARS and token[1] in _STOP_ZH_CHARS


def analyze(text: str, *, query: bool = False) -> list[str]:
    """Stemmed tokens; for a query, without stop words unless every token is one."""
    return [stem(token) for token in _kept(tokenize(text), query)]


def analyze_words(text: str, *, query: bool = False) -> list[tuple[str, str]]:
    """(term, original token) pairs, as `analyze` would return the terms: for explanations."""
    return [(stem(token), token) for token in _kept(tokenize(text), query)]


def _kept(tokens: list[str], query: bool) -> list[str]:
    return ([token for token in tokens if not is_stop_word(token)] or tokens) if query else tokens
