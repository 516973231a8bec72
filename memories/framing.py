"""Request framing: the words of a query that say how to answer, not what about.

A prompt a hook recalls with is worded as a request ("can you tell me what
we noted on …", "帮我查一下…"). Its request words are rare in most
workspaces' entries, so BM25 gives them weight, and an entry that happens to
hold "remember" or "entry" outranks the one about the subject. The lexical
arm counts these words for FRAMING_WEIGHT of their idf, but only in a query
that reads as a request (it addresses someone: "you", "me", "we", "please",
"tell", "remember"…) and has at least MIN_CONTENT terms besides them: a bare
topic ("tool for the network") or a short query made of such words ("check
the notes") is searched for as it is.

The list is general request language (addressing the assistant, politeness,
asking, remembering, pointing at notes), not any workspace's or bench's
wording. Only the lexical arm's weights change: the query's embedding, and
what is stored, stay the text as typed.
"""

from __future__ import annotations

from collections.abc import Iterable

from memories import lexical

# What a request word's idf is multiplied by.
FRAMING_WEIGHT = 0.2
# Terms besides the request words a query needs before they are discounted.
MIN_CONTENT = 2

_ENGLISH = """
a an the this that these those it its there here s
i me my we us our you your
is are was were be been am do does did have has had got get
can could would will should shall may might must
what which who whom where when why how whats
of on about for to in into at by with from up regarding re concerning
and or any some anything something everything
please pls plz kindly thanks thank thx hey hi hello ok okay so just quick quickly again also
tell show give let know remember recall recalled remind look find search check lookup
note noted notes wrote written saved record recorded stored forgot forget
need want help mean
entry entries memory memories info information details detail stuff thing things question
"""

# Chinese request phrases; the lexical index sees CJK text as character
# bigrams, so each phrase counts through its bigrams.
_CHINESE = (
    "帮我查一下",
    "帮忙查查",
    "请告诉我",
    "告诉我一下",
    "你还记得吗",
    "我们之前记了什么",
    "我们有没有关于",
    "有什么记录",
    "相关的信息",
    "能不能找一下",
    "麻烦看看",
)


def _bigrams(phrases: Iterable[str]) -> set[str]:
    return {p[i : i + 2] for p in phrases for i in range(len(p) - 1)}


def _forms(words: str) -> frozenset[str]:
    """The index terms of `words`: each word's stem and its written form (memories.lexical)."""
    return frozenset(
        form for w in words.split() for form in (w, lexical.stem(w), lexical.EXACT_FORM + w)
    )


FRAMING_TERMS = _forms(_ENGLISH) | frozenset(_bigrams(_CHINESE))
# Words that make a query a request rather than a topic: it speaks to someone.
_CUES = """
i me my we us our you your please pls plz thanks thank thx hey hi hello
tell remind remember recall recalled noted forgot forget
"""
REQUEST_CUES = _forms(_CUES) | frozenset(_bigrams(_CHINESE))


def framing_weights(terms: Iterable[str]) -> dict[str, float]:
    """Each query term's weight: FRAMING_WEIGHT for a request's own words when enough else remains."""
    terms = list(terms)
    # A written form beside its stem is the same word, counted once.
    content = sum(t not in FRAMING_TERMS and not lexical.is_exact_form(t) for t in terms)
    if content < MIN_CONTENT or not REQUEST_CUES.intersection(terms):
        return dict.fromkeys(terms, 1.0)
    return {t: FRAMING_WEIGHT if t in FRAMING_TERMS else 1.0 for t in terms}
