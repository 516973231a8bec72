"""Labelled sets from the manual pages Debian packages install, and the dev/held-out split.

The rules the queries follow are written in docs/BENCH-SETS.md (before any
tuning against them). A page's roff source is read directly (no formatter
runs): the NAME line gives a summary query, the DESCRIPTION section the
memory, and the memory's own words the identifier and fragment queries.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from contexts.secrets import find_secret
from memories import lexical

MAN_ROOT = Path("/usr/share/man")
# The built-in sets and the manual sections each reads.
MAN_SETS = {"man-commands": ("1", "8"), "man-api": ("2", "3", "7")}
SPLITS = ("dev", "heldout")
MIN_WORDS, MAX_WORDS = 30, 150
KINDS = ("summary", "identifier", "fragment")


def split_of(answers: Iterable[str]) -> str:
    """`dev` or `heldout` for a query with these answers: a hash of the smallest one."""
    first = min(answers)
    return SPLITS[hashlib.sha256(first.encode()).digest()[0] % 2]


# --- roff to text ------------------------------------------------------------------------

_ESCAPES = {
    r"\-": "-",
    r"\(em": "—",
    r"\(en": "\u2013",
    r"\(aq": "'",
    r"\(dq": '"',
    r"\(lq": '"',
    r"\(rq": '"',
    r"\(oq": "'",
    r"\(cq": "'",
    r"\(bu": "*",
    r"\(co": "(c)",
    r"\(mu": "x",
    r"\e": "\\",
    r"\~": " ",
    r"\ ": " ",
    r"\0": " ",
    r"\|": "",
    r"\^": "",
    r"\&": "",
    r"\,": "",
    r"\/": "",
    r"\:": "",
    r"\c": "",
}
_ESCAPE = re.compile("|".join(re.escape(k) for k in sorted(_ESCAPES, key=len, reverse=True)))
_DROPPED = re.compile(
    r"\\f(\[[^\]]*\]|\(..|.)|\\s[-+]?\d+|\\\*(\[[^\]]*\]|\(..|.)|\\\[[^\]]*\]|\\\(..|\\[nk]\S"
)
_ALTERNATING = {".BR", ".RB", ".BI", ".IB", ".IR", ".RI"}
_INLINE = {".B", ".I", ".SM", ".SB", ".Nm", ".Ar", ".Fl", ".Pa", ".Cm", ".Va", ".Fn", ".Xr"}
_BREAKS = {".PP", ".P", ".LP", ".TP", ".IP", ".HP", ".sp", ".Pp", ".It", ".SS", ".Ss"}


def _unescape(text: str) -> str:
    return _DROPPED.sub("", _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], text))


def _macro_text(line: str) -> str | None:
    """The words a macro line prints (None: a break, or nothing printed)."""
    name, _, rest = line.partition(" ")
    args = re.findall(r'"([^"]*)"|(\S+)', rest)
    words = [a or b for a, b in args]
    if name in _ALTERNATING:
        return "".join(words)
    if name in _INLINE:
        return " ".join(words)
    return None


def _sections(source: str) -> dict[str, list[list[str]]]:
    """Each section's paragraphs, as lines of printed text."""
    sections: dict[str, list[list[str]]] = defaultdict(lambda: [[]])
    current = ""
    for raw in source.splitlines():
        line = raw.rstrip()
        if line.startswith((".SH", ".Sh")):
            current = _unescape(line[3:].strip().strip('"')).upper()
            continue
        if line.startswith(("'", ".")):
            name = line.split(" ", 1)[0]
            if name in _BREAKS:
                sections[current].append([])
                continue
            text = _macro_text(line)
            if text is None:
                continue
            line = text
        if current:
            sections[current][-1].append(_unescape(line))
    return sections


@dataclass
class Page:
    key: str  # name.section
    name: str
    summary: str
    description: str


def read_page(path: Path) -> Page | None:
    """A page's name, NAME summary and DESCRIPTION text; None for a redirect or no text."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            source = f.read(200_000)
    except OSError:
        return None
    if source.lstrip().startswith(".so "):
        return None
    sections = _sections(source)
    name_line = " ".join(" ".join(p) for p in sections.get("NAME", []))
    name, sep, summary = name_line.partition(" - ")
    if not sep:
        return None
    paragraphs = [" ".join(" ".join(p).split()) for p in sections.get("DESCRIPTION", [])]
    description = _clipped(" ".join(p for p in paragraphs if p))
    key = path.name.removesuffix(".gz")
    return Page(
        key=key, name=name.strip(), summary=" ".join(summary.split()), description=description
    )


def _clipped(text: str) -> str:
    words = text.split()
    if len(words) <= MAX_WORDS:
        return text
    clipped = " ".join(words[:MAX_WORDS])
    end = clipped.rfind(". ")
    return clipped[: end + 1] if end > len(clipped) // 2 else clipped


def man_pages(sections: Iterable[str], root: Path = MAN_ROOT) -> Iterator[Page]:
    for section in sections:
        for path in sorted((root / f"man{section}").glob("*")):
            page = read_page(path)
            if page is not None and len(page.description.split()) >= MIN_WORDS:
                yield page


def distinct_pages(pages: Iterable[Page]) -> list[Page]:
    """Each text once, none the credential filter refuses."""
    seen: set[str] = set()
    kept = []
    for page in pages:
        norm = lexical.normalize(page.description)
        if norm in seen or find_secret(page.description):
            continue
        seen.add(norm)
        kept.append(page)
    return kept


# --- queries -----------------------------------------------------------------------------

_TOKEN = re.compile(r"\S+")
_TRIM = ".,;:()[]{}\"'`<>!?*"
_SEE_ALSO = re.compile(r"\(\d\w*\)?$")  # a page reference's section: `open(2)`


def _identifiers(text: str) -> set[str]:
    """The identifier-like tokens of a text, trailing punctuation trimmed."""
    found = set()
    for raw in _TOKEN.findall(text):
        token = _SEE_ALSO.sub("", raw.strip(_TRIM)).strip(_TRIM)
        if len(token) >= 4 and lexical.looks_like_identifier(token):
            found.add(token)
    return found


@dataclass
class Drawn:
    kind: str
    query: str
    answers: set[str]


def _summary(page: Page, summaries: Counter[str], norm: str) -> Drawn | None:
    wanted = lexical.normalize(page.summary)
    if len(page.summary.split()) < 3 or summaries[wanted] != 1 or wanted in norm:
        return None
    return Drawn("summary", page.summary, {page.key})


def _identifier(page: Page, owners: dict[str, set[str]], rng: random.Random) -> Drawn | None:
    names = {n.strip().lower() for n in page.name.split(",")}
    unique = sorted(
        t
        for t in _identifiers(page.description)
        if owners[t.lower()] == {page.key} and t.lower() not in names
    )
    return Drawn("identifier", rng.choice(unique), {page.key}) if unique else None


def _fragment(page: Page, norms: dict[str, str], rng: random.Random) -> Drawn | None:
    words = page.description.split()
    length = rng.randint(4, 8)
    if len(words) < length + 2:
        return None
    start = rng.randrange(1, len(words) - length + 1)
    fragment = " ".join(words[start : start + length])
    needle = lexical.normalize(fragment)
    answers = {k for k, text in norms.items() if needle in text}
    if not needle or page.key not in answers or len(answers) > 3:
        return None
    return Drawn("fragment", fragment, answers)


def draw_queries(pages: list[Page], *, per_kind: int, seed: int = 7) -> list[Drawn]:
    """At most `per_kind` queries of each kind (KINDS), by the rules of docs/BENCH-SETS.md."""
    rng = random.Random(seed)
    norms = {p.key: lexical.normalize(p.description) for p in pages}
    summaries = Counter(lexical.normalize(p.summary) for p in pages)
    owners: dict[str, set[str]] = defaultdict(set)
    for page in pages:
        for token in _identifiers(page.description):
            owners[token.lower()].add(page.key)
    order = list(pages)
    rng.shuffle(order)
    drawn: list[Drawn] = []
    counts: Counter[str] = Counter()
    for page in order:
        for query in (
            _summary(page, summaries, norms[page.key]),
            _identifier(page, owners, rng),
            _fragment(page, norms, rng),
        ):
            if query is not None and counts[query.kind] < per_kind:
                drawn.append(query)
                counts[query.kind] += 1
    return drawn


def build_man_set(name: str, target: Path, *, per_kind: int = 2000) -> Path:
    """The set `name` (MAN_SETS) written to `target` as corpus.jsonl and queries.jsonl."""
    pages = distinct_pages(man_pages(MAN_SETS[name]))
    queries = draw_queries(pages, per_kind=per_kind)
    target.mkdir(parents=True, exist_ok=True)
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for page in pages:
            row = {"id": page.key, "name": page.name, "text": page.description}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with (target / "queries.jsonl").open("w", encoding="utf-8") as out:
        for n, q in enumerate(queries):
            labelled: dict[str, object] = {
                "qid": f"{name}-{n}",
                "kind": q.kind,
                "query": q.query,
                "answers": sorted(q.answers),
                "split": split_of(q.answers),
            }
            out.write(json.dumps(labelled, ensure_ascii=False) + "\n")
    return target


def man_set(data_dir: Path, name: str) -> Path:
    """The folder of the built-in set `name`, built on first use."""
    target = data_dir / "bench" / "sets" / name
    if not (target / "queries.jsonl").is_file():
        build_man_set(name, target)
    return target
