"""memflow's lexical index: tokenising, normalising, BM25.

Embeddings cannot see exact identifiers — file paths, part numbers, IDs,
`Test2::Plugin::MemUsage`, Chinese substrings — so recall has a lexical arm
too. Postgres has no BM25 and `ts_rank` is not BM25, so each memory carries
its own term map (`Memory.lex`, term → frequency, GIN-indexed) and each
workspace its document frequencies (`LexicalTerm`); BM25 is computed in SQL
over a bounded candidate set (`memories.selectors`).

Tokens:
- an identifier-like run (`foo_bar.so`, `x86_64`, `/usr/share/doc/x`,
  `Test2::Plugin::MemUsage`) is kept whole, lower-cased, and also split into
  its parts (`foo`, `bar`, `so`) and camel-case words (`mem`, `usage`);
- CJK text becomes character bigrams, plus single characters (used only
  when a query's CJK run is one character long);
- everything else is lower-cased words, each indexed by its stem (Snowball's
  English stemmer: `retries`, `retrying` → `retri`), so a question worded
  with other forms of the memory's words still meets them, and also as
  written (`=retries`) when that differs, so the exact form counts for more
  (`EXACT_FORM_WEIGHT`): verbatim fragments keep ranking their source first.
  Identifiers are kept whole as written; only their word parts are stemmed.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import Stemmer

# Han, kana, hangul: scripts written without spaces between words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A word character that is not CJK, then joiners that keep identifiers whole.
_W = rf"[^\W{_CJK}]"
_CHUNK = re.compile(rf"[{_CJK}]+|/?{_W}(?:(?:{_W}|[.:/\-+#@~])*{_W})?")
_PARTS = re.compile(r"[^\W_]+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_JOINERS = re.compile(r"[._:/\-+#@~]")
_NORM_DROP = re.compile(rf"[^\w{_CJK}]+")

MAX_TERM_LENGTH = 200
_STEMMER = Stemmer.Stemmer("english")
# A word's written form, indexed beside its stem when the two differ.
EXACT_FORM = "="
# What a written form's idf counts for beside its stem's: a query word found
# in the same form outranks one found in another form, not a rarer word.
EXACT_FORM_WEIGHT = 0.6
K1 = 1.2
B = 0.75


def normalize(text: str) -> str:
    """Case, width and punctuation folded away: the dedupe identity of a text.

    Punctuation becomes a space rather than nothing, so `v1.2` and `v12`
    stay different.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NORM_DROP.sub(" ", folded).split())


def norm_hash(text: str) -> str:
    return hashlib.sha256(normalize(text).encode()).hexdigest()


def _is_cjk(chunk: str) -> bool:
    return bool(_CJK_RUN.fullmatch(chunk))


is_cjk = _is_cjk  # for the dashboard's marking of a query's terms


def looks_like_identifier(chunk: str) -> bool:
    """Something a person would search for verbatim: has digits, joiners or inner capitals."""
    return bool(
        _JOINERS.search(chunk.strip("/"))
        or any(c.isdigit() for c in chunk)
        or any(c.isupper() for c in chunk[1:])
    )


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """The index term of a lower-cased word: its English stem if it is an ASCII word."""
    if len(word) < 4 or not (word.isascii() and word.isalpha()):
        return word
    return str(_STEMMER.stemWord(word))


def _word_terms(word: str) -> list[str]:
    """A lower-cased word's terms: its stem, and its written form if that differs."""
    stemmed = stem(word)
    return [stemmed] if stemmed == word else [stemmed, EXACT_FORM + word]


def is_exact_form(term: str) -> bool:
    return term.startswith(EXACT_FORM)


def _chunk_terms(chunk: str, *, cjk_unigrams: bool) -> list[str]:
    if _is_cjk(chunk):
        if len(chunk) == 1:
            return [chunk]
        bigrams = [chunk[i : i + 2] for i in range(len(chunk) - 1)]
        return bigrams + (list(chunk) if cjk_unigrams else [])
    lowered = chunk.lower()
    # A word is its stem, `MemUsage` too (its case is for the exact-case bonus);
    # a chunk with digits or joiners stays whole as written.
    if lowered.isalpha() and not looks_like_identifier(chunk):
        return _word_terms(lowered)
    terms = _word_terms(lowered) if lowered.isalpha() else [lowered]
    for part in _PARTS.findall(chunk):
        if part.lower() != lowered:
            terms.append(stem(part.lower()))
        words = _CAMEL.findall(part)
        if len(words) > 1:
            terms.extend(stem(w.lower()) for w in words)
    return terms


def compound_parts(term: str) -> list[str]:
    """The parts a joined term (`var/log`, `foo_bar.so`) is also indexed under; [] if none."""
    parts = [stem(p.lower()) for p in _PARTS.findall(term)]
    return parts if len(parts) > 1 else []


def tokenize(text: str, *, cjk_unigrams: bool = True) -> list[str]:
    """All terms of a text, with repeats (term frequency counts them)."""
    text = unicodedata.normalize("NFKC", text)
    terms: list[str] = []
    for chunk in _CHUNK.findall(text):
        terms.extend(
            t for t in _chunk_terms(chunk, cjk_unigrams=cjk_unigrams) if len(t) <= MAX_TERM_LENGTH
        )
    return terms


def term_frequencies(text: str) -> tuple[dict[str, int], int]:
    """The `lex` map of a memory and its length in terms (written forms beside
    their stems are not counted twice)."""
    terms = tokenize(text)
    return dict(Counter(terms)), sum(not is_exact_form(t) for t in terms)


@dataclass(frozen=True)
class Query:
    terms: list[str]  # distinct, in order of first appearance
    identifiers: list[str]  # identifier-like chunks in their original case
    identifier_share: float = 0.0  # of the query's chunks, how many are identifiers
    cjk_share: float = 0.0  # of the query's word characters, how many are CJK
    # Each term as the query wrote it (lower-cased), for people to read: `retri` was `retries`.
    written: dict[str, str] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.terms


_OPTION_DASHES = re.compile(r"(?:^|(?<=\s))--?$")


def option_form(text: str, start: int, chunk: str) -> str:
    """A chunk as the exact-case check looks for it: a command-line option keeps
    its leading dashes (`--aws-sigv4`), which the chunk leaves out, so the
    entry holding the option outranks those holding the bare words."""
    dashes = _OPTION_DASHES.search(text, max(start - 2, 0), start)
    return (dashes.group(0) if dashes else "") + chunk


def parse_query(text: str) -> Query:
    """Query terms: like a document's, but CJK single characters only when a run is one character."""
    text = unicodedata.normalize("NFKC", query_window(text))
    seen: dict[str, str] = {}
    identifiers: list[str] = []
    found = list(_CHUNK.finditer(text))
    chunks = [m.group(0) for m in found]
    for match, chunk in zip(found, chunks, strict=True):
        terms = _chunk_terms(chunk, cjk_unigrams=False)
        plain = len([t for t in terms if not is_exact_form(t)]) == 1
        written = chunk.lower() if plain else None
        for term in terms:
            if len(term) <= MAX_TERM_LENGTH:
                seen.setdefault(term, written or term)
        if not _is_cjk(chunk) and looks_like_identifier(chunk) and len(chunk) >= 3:
            identifiers.append(option_form(text, match.start(), chunk))
    share = len(identifiers) / len(chunks) if chunks else 0.0
    cjk = sum(len(c) for c in chunks if _is_cjk(c))
    letters = sum(len(c) for c in chunks)
    return bounded_query(
        Query(
            terms=list(seen),
            identifiers=identifiers,
            identifier_share=share,
            cjk_share=cjk / letters if letters else 0.0,
            written=seen,
        )
    )


# A question has a few dozen terms; a pasted log or stack trace has thousands,
# and each costs recall a posting list and a column of the BM25 statement.
# Past these bounds the query keeps its opening terms (the question, the
# first frames) and its closing ones (where a trace names its error).
MAX_QUERY_TERMS = 96
MAX_QUERY_TAIL_TERMS = 32
MAX_QUERY_IDENTIFIERS = 24


MAX_QUERY_HEAD_CHARS = 6_000
MAX_QUERY_TAIL_CHARS = 2_000


def query_window(text: str) -> str:
    """The part of a long query whose terms are kept (its opening and its end): the
    rest would be parsed only to be dropped by `bounded_query`."""
    if len(text) <= MAX_QUERY_HEAD_CHARS + MAX_QUERY_TAIL_CHARS:
        return text
    return f"{text[:MAX_QUERY_HEAD_CHARS]}\n{text[-MAX_QUERY_TAIL_CHARS:]}"


def bounded_query(query: Query) -> Query:
    """`query` with at most MAX_QUERY_TERMS terms and MAX_QUERY_IDENTIFIERS identifiers."""
    terms, identifiers = query.terms, list(dict.fromkeys(query.identifiers))
    if len(terms) <= MAX_QUERY_TERMS and len(identifiers) <= MAX_QUERY_IDENTIFIERS:
        return query
    head = MAX_QUERY_TERMS - MAX_QUERY_TAIL_TERMS
    if len(terms) > MAX_QUERY_TERMS:
        terms = terms[:head] + terms[-MAX_QUERY_TAIL_TERMS:]
    tail = MAX_QUERY_IDENTIFIERS // 3
    if len(identifiers) > MAX_QUERY_IDENTIFIERS:
        identifiers = identifiers[: MAX_QUERY_IDENTIFIERS - tail] + identifiers[-tail:]
    return Query(
        terms=terms,
        identifiers=identifiers,
        identifier_share=query.identifier_share,
        cjk_share=query.cjk_share,
        written={t: query.written[t] for t in terms if t in query.written},
    )


def idf(df: int, n_docs: int) -> float:
    """BM25's (always positive) inverse document frequency."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
