"""Real text for the benches: Debian's package descriptions.

Every Debian machine can fetch them with its ordinary apt client; the bench
does so into a private lists folder (`apt-get update -o Dir::State::Lists=…`)
and never touches the system's own lists. Each package gives a memory of
10-80 words (`package: description`), and the labelled queries come from
the same records:

- paraphrase: the package's one-line synopsis, which describes it in other
  words than the long description the memory holds (any of the package's
  memories answers it);
- identifier: a token of the memory that occurs in no other memory (a
  package name, a path, a `Perl::Module`, `x86_64`…), verbatim;
- identifier_case: an identifier whose exact case occurs in one memory while
  its lower-cased form occurs in others — only exact-case matching finds it;
- fragment: eight consecutive words from the middle of a description.

`--lang zh` reads Debian's Chinese descriptions (`Translation-zh_CN`, about
1,200 packages) the same way (`load_corpus_zh`), with three kinds of query:
question-like (the synopsis), identifier, and fragment (a run of Chinese
characters from the middle of a description).
"""

from __future__ import annotations

import hashlib
import random
import re
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from contexts.secrets import find_secret
from memories import lexical

WORD = re.compile(r"\S+")


@dataclass
class Package:
    name: str
    synopsis: str
    paragraphs: list[str]


@dataclass
class Doc:
    key: str  # stable id: package name (+ paragraph number)
    text: str
    package: str
    synopsis: str
    body: str


@dataclass
class LabelledQuery:
    kind: str
    query: str
    answers: set[str]  # Doc keys
    split: str = ""  # dev or heldout (docs/BENCH-SETS.md); by its answers when not given

    def __post_init__(self) -> None:
        if not self.split and self.answers:
            from memories.bench.sets import split_of

            self.split = split_of(self.answers)


@dataclass
class Corpus:
    docs: list[Doc]
    queries: list[LabelledQuery] = field(default_factory=list)

    def digest(self) -> str:
        h = hashlib.sha256()
        for doc in self.docs:
            h.update(doc.key.encode() + b"\0" + doc.text.encode() + b"\1")
        return h.hexdigest()[:16]


def lists_dir(data_dir: Path, language: str = "en") -> Path:
    # One folder per language: apt deletes the indexes of languages it was not asked for.
    name = "apt-lists" if language == "en" else f"apt-lists-{language}"
    return data_dir / "bench" / name


def _translation_files(target: Path, language: str) -> list[Path]:
    # apt quotes the underscore of `zh_CN` in file names (`Translation-zh%5fCN`).
    quoted = language.replace("_", "%5f")
    names = {f"*_i18n_Translation-{language}*", f"*_i18n_Translation-{quoted}*"}
    return sorted({path for pattern in names for path in target.glob(pattern)})


def fetch_translations(data_dir: Path, language: str = "en") -> list[Path]:
    """Debian's description index for `language`, fetched into a private folder."""
    target = lists_dir(data_dir.resolve(), language)
    (target / "partial").mkdir(parents=True, exist_ok=True)
    found = _translation_files(target, language)
    if not found:
        subprocess.run(
            [
                "apt-get",
                "update",
                "-qq",
                "-o",
                f"Dir::State::Lists={target}",
                "-o",
                f"Acquire::Languages={language}",
                "-o",
                "Acquire::IndexTargets::deb::Translations::DefaultEnabled=true",
            ],
            check=True,
        )
        found = _translation_files(target, language)
    if not found:
        raise RuntimeError(f"apt-get fetched no Translation-{language} index into {target}")
    return found


def _read_index(path: Path) -> str:
    # apt-helper decompresses whatever apt stored (lz4, xz, gz, none).
    return subprocess.run(
        ["/usr/lib/apt/apt-helper", "cat-file", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def parse_translations(text: str, language: str = "en") -> Iterator[Package]:
    field_name = f"Description-{language}:"
    for record in text.split("\n\n"):
        name = ""
        synopsis = ""
        body: list[str] = []
        in_description = False
        for line in record.splitlines():
            if line.startswith("Package:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith(field_name):
                synopsis = line.split(":", 1)[1].strip()
                in_description = True
            elif in_description and line.startswith(" "):
                body.append(line[1:])
            else:
                in_description = False
        if not name or not synopsis:
            continue
        if language != "en":
            # Chinese is wrapped anywhere, even inside a word: no space at a CJK line break.
            paragraphs = [_join_wrapped(p) for p in "\n".join(body).split("\n.\n")]
            paragraphs = [p for p in paragraphs if p and p != "."]
            yield Package(name=name, synopsis=synopsis, paragraphs=paragraphs)
            continue
        paragraphs = [" ".join(p.split()) for p in "\n".join(body).split("\n.\n")]
        paragraphs = [p for p in paragraphs if p and p != "."]
        yield Package(name=name, synopsis=synopsis, paragraphs=paragraphs)


_CJK_EDGE = re.compile(f"[{lexical._CJK}\u3000-\u303f\uff00-\uffef]")


def _join_wrapped(paragraph: str) -> str:
    joined = ""
    for line in paragraph.split("\n"):
        line = " ".join(line.split())
        if not line:
            continue
        if joined and not (_CJK_EDGE.match(joined[-1]) and _CJK_EDGE.match(line[0])):
            joined += " "
        joined += line
    return joined


def load_packages(data_dir: Path, language: str = "en") -> list[Package]:
    seen: dict[str, Package] = {}
    for path in fetch_translations(data_dir, language):
        for package in parse_translations(_read_index(path), language):
            seen.setdefault(package.name, package)
    return [seen[name] for name in sorted(seen)]


def _clip_words(text: str, limit: int = 80) -> str:
    words = text.split()
    if len(words) <= limit:
        return text
    clipped = " ".join(words[:limit])
    end = max(clipped.rfind(". "), clipped.rfind("; "))
    return clipped[: end + 1] if end > len(clipped) // 2 else clipped


def build_docs(packages: list[Package], *, per_package: int = 1, min_words: int = 10) -> list[Doc]:
    """Distinct memories of 10-80 words, `per_package` paragraphs each at most."""
    docs: list[Doc] = []
    seen: set[str] = set()
    for package in packages:
        # The last paragraph is usually the package-specific one.
        order = list(reversed(package.paragraphs))[:per_package]
        for number, paragraph in enumerate(order):
            body = _clip_words(paragraph)
            if len(body.split()) < min_words:
                continue
            text = f"{package.name}: {body}"
            norm = lexical.normalize(text)
            if norm in seen or find_secret(text):
                continue  # a repeat, or text the credential filter refuses (PEM examples)
            seen.add(norm)
            key = package.name if number == 0 else f"{package.name}#{number}"
            docs.append(
                Doc(key=key, text=text, package=package.name, synopsis=package.synopsis, body=body)
            )
    return docs


_IDENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/+\-]*[A-Za-z0-9_]")


def build_queries(docs: list[Doc], *, per_kind: int, seed: int = 7) -> list[LabelledQuery]:
    rng = random.Random(seed)
    by_key = {d.key: d for d in docs}
    order = list(by_key)
    rng.shuffle(order)

    # Token occurrence over the whole corpus, exact and case-folded.
    exact: dict[str, set[str]] = defaultdict(set)
    folded: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        for token in set(_IDENT.findall(doc.text)):
            exact[token].add(doc.key)
            folded[token.lower()].add(doc.key)
    synopsis_count = Counter(lexical.normalize(d.synopsis) for d in docs)
    norms = {d.key: lexical.normalize(d.text) for d in docs}

    # A synopsis describes its whole package: with several paragraphs per
    # package (large corpora), any of them answers it.
    by_package: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        by_package[doc.package].add(doc.key)
    queries: list[LabelledQuery] = []
    counts: Counter[str] = Counter()
    for key in order:
        doc = by_key[key]
        # paraphrase: a synopsis that is unique and not already in the text
        syn = lexical.normalize(doc.synopsis)
        if (
            counts["paraphrase"] < per_kind
            and synopsis_count[syn] == 1
            and syn not in norms[key]
            and len(doc.synopsis.split()) >= 3
        ):
            queries.append(LabelledQuery("paraphrase", doc.synopsis, by_package[doc.package]))
            counts["paraphrase"] += 1
        # identifier: a rare identifier-like token (not only the package name)
        tokens = [
            t for t in _IDENT.findall(doc.body) if lexical.looks_like_identifier(t) and len(t) >= 4
        ]
        unique = [t for t in tokens if len(folded[t.lower()]) == 1]
        if counts["identifier"] < per_kind:
            choice = rng.choice(unique) if unique else doc.package
            if len(folded[choice.lower()]) == 1:
                queries.append(LabelledQuery("identifier", choice, {key}))
                counts["identifier"] += 1
        # identifier_case: the exact case is unique, the folded form is not
        cased = [
            t
            for t in tokens
            if len(exact[t]) == 1
            and len(folded[t.lower()]) > 1
            and not (
                t.isalpha() and (t.isupper() or t.istitle())
            )  # a shouted or capitalised word is no identifier
        ]
        if counts["identifier_case"] < per_kind and cased:
            choice = rng.choice(cased)
            queries.append(LabelledQuery("identifier_case", choice, set(exact[choice])))
            counts["identifier_case"] += 1
        # fragment: eight words from the middle
        words = doc.body.split()
        if counts["fragment"] < per_kind and len(words) >= 14:
            start = rng.randrange(2, len(words) - 9)
            fragment = " ".join(words[start : start + 8])
            needle = lexical.normalize(fragment)
            answers = {k for k, norm in norms.items() if needle in norm}
            if len(answers) <= 3:
                queries.append(LabelledQuery("fragment", fragment, answers))
                counts["fragment"] += 1
        if all(
            counts[k] >= per_kind
            for k in ("paraphrase", "identifier", "identifier_case", "fragment")
        ):
            break
    return queries


def load_corpus(data_dir: Path, *, size: int, queries_per_kind: int = 200, seed: int = 7) -> Corpus:
    """`size` distinct memories (a fixed sample) with labelled queries over them."""
    packages = load_packages(data_dir)
    per_package = 1 if size <= len(packages) * 0.6 else 3
    docs = build_docs(packages, per_package=per_package)
    rng = random.Random(seed)
    if size < len(docs):
        docs = sorted(rng.sample(docs, size), key=lambda d: d.key)
    corpus = Corpus(docs=docs)
    corpus.queries = build_queries(docs, per_kind=queries_per_kind, seed=seed)
    return corpus


# --- Chinese -----------------------------------------------------------------------------

ZH_KINDS = ("question", "identifier", "fragment")
_CJK_RUN = re.compile(f"[{lexical._CJK}]+")
_SENTENCE_END = re.compile("[\u3002\uff01\uff1f\uff1b]")  # Chinese full stop, !, ?, ;


def _clip_chars(text: str, limit: int = 200) -> str:
    """At most `limit` characters, ending at a sentence end when one is past the middle."""
    if len(text) <= limit:
        return text
    window = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    return window[: ends[-1]] if ends and ends[-1] > limit // 2 else window


def build_docs_zh(packages: list[Package], *, min_cjk: int = 20) -> list[Doc]:
    """One memory per package: `package: description`, at most 200 characters of it."""
    docs: list[Doc] = []
    seen: set[str] = set()
    for package in packages:
        body = _clip_chars(" ".join(package.paragraphs))
        if sum(len(run) for run in _CJK_RUN.findall(body)) < min_cjk:
            continue  # untranslated, or hardly any Chinese
        text = f"{package.name}: {body}"
        norm = lexical.normalize(text)
        if norm in seen or find_secret(text):
            continue
        seen.add(norm)
        docs.append(
            Doc(
                key=package.name,
                text=text,
                package=package.name,
                synopsis=package.synopsis,
                body=body,
            )
        )
    return docs


def build_queries_zh(docs: list[Doc], *, per_kind: int, seed: int = 7) -> list[LabelledQuery]:
    """Question-like (the synopsis), identifier and fragment (Chinese characters) queries."""
    rng = random.Random(seed)
    by_key = {d.key: d for d in docs}
    order = list(by_key)
    rng.shuffle(order)
    folded: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        for token in set(_IDENT.findall(doc.text)):
            folded[token.lower()].add(doc.key)
    synopsis_count = Counter(lexical.normalize(d.synopsis) for d in docs)
    norms = {d.key: lexical.normalize(d.text) for d in docs}
    queries: list[LabelledQuery] = []
    counts: Counter[str] = Counter()
    for key in order:
        doc = by_key[key]
        # question: a synopsis in Chinese, unique, not already in the text
        syn = lexical.normalize(doc.synopsis)
        if (
            counts["question"] < per_kind
            and synopsis_count[syn] == 1
            and syn not in norms[key]
            and len(_CJK_RUN.findall(doc.synopsis)) > 0
            and len(doc.synopsis) >= 4
        ):
            queries.append(LabelledQuery("question", doc.synopsis, {key}))
            counts["question"] += 1
        # identifier: a rare identifier-like token, else the package name when unique
        tokens = [
            t for t in _IDENT.findall(doc.body) if lexical.looks_like_identifier(t) and len(t) >= 4
        ]
        unique = [t for t in tokens if len(folded[t.lower()]) == 1]
        if counts["identifier"] < per_kind:
            choice = rng.choice(unique) if unique else doc.package
            if len(folded[choice.lower()]) == 1:
                queries.append(LabelledQuery("identifier", choice, {key}))
                counts["identifier"] += 1
        # fragment: 6-12 consecutive Chinese characters from inside the description
        runs = [run for run in _CJK_RUN.findall(doc.body) if len(run) >= 8]
        if counts["fragment"] < per_kind and runs:
            run = rng.choice(runs)
            length = rng.randint(6, min(12, len(run)))
            start = rng.randrange(0, len(run) - length + 1)
            fragment = run[start : start + length]
            needle = lexical.normalize(fragment)
            answers = {k for k, norm in norms.items() if needle in norm.replace(" ", "")}
            if key in answers and len(answers) <= 3:
                queries.append(LabelledQuery("fragment", fragment, answers))
                counts["fragment"] += 1
        if all(counts[k] >= per_kind for k in ZH_KINDS):
            break
    return queries


def load_corpus_zh(
    data_dir: Path, *, size: int, queries_per_kind: int = 200, seed: int = 7
) -> Corpus:
    """Debian's Chinese package descriptions (at most `size`) with labelled queries."""
    docs = build_docs_zh(load_packages(data_dir, "zh_CN"))
    if size < len(docs):
        docs = sorted(random.Random(seed).sample(docs, size), key=lambda d: d.key)
    corpus = Corpus(docs=docs)
    corpus.queries = build_queries_zh(docs, per_kind=queries_per_kind, seed=seed)
    return corpus


# --- any labelled set -------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    import json

    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load_labelled(
    directory: Path, *, size: int | None = None, queries_per_kind: int | None = None, seed: int = 7
) -> Corpus:
    """A labelled set on disk: `corpus.jsonl` ({id, text, …}) and `queries.jsonl`
    ({qid, kind, query, answers, split?}), any kinds.

    `size` below the set's: a fixed subsample that holds every answer of the
    queries it keeps (at most `queries_per_kind` of each kind in each split,
    drawn at random), filled up with other memories drawn at random. A
    query without a split gets one from its answers (sets.split_of).
    """
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (directory / name).is_file():
            raise FileNotFoundError(f"{directory} holds no {name} (see `memflow bench --help`)")
    rows = _read_jsonl(directory / "corpus.jsonl")
    # A text that looks like it holds a secret is refused by remember, and
    # one refused item refuses its whole batch: such memories (and the
    # queries only they answer) are left out, as the Debian corpus does.
    docs = {
        str(r["id"]): Doc(key=str(r["id"]), text=str(r["text"]), package="", synopsis="", body="")
        for r in rows
        if not find_secret(str(r["text"]))
    }
    rng = random.Random(seed)
    raw = _read_jsonl(directory / "queries.jsonl")
    rng.shuffle(raw)
    limit = size if size is not None and size < len(docs) else len(docs)
    kept: set[str] = set()
    queries: list[LabelledQuery] = []
    counts: Counter[tuple[str, str]] = Counter()
    for r in raw:
        kind = str(r["kind"])
        answers = {str(a) for a in r["answers"]} & docs.keys()  # type: ignore[attr-defined]
        if not answers:
            continue
        query = LabelledQuery(kind, str(r["query"]), answers, str(r.get("split") or ""))
        if queries_per_kind is not None and counts[kind, query.split] >= queries_per_kind:
            continue
        if len(kept | answers) > limit:
            continue
        kept |= answers
        counts[kind, query.split] += 1
        queries.append(query)
    rest = sorted(docs.keys() - kept)
    kept |= set(rng.sample(rest, limit - len(kept)))
    queries.sort(key=lambda q: (q.split, q.kind, q.query))
    return Corpus(docs=[docs[k] for k in sorted(kept)], queries=queries)
