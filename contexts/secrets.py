"""Refuse text that looks like a credential: memories are shown to models
and people, and a leaked key in a memory is a leaked key everywhere.

What must be kept whatever it says (a session's event log: the harness's
hook JSON, kept whole) is kept with its credentials cut out instead
(`redact_secrets`, `redact_json`).

The rules are detect-secrets' (Yelp): its plugins' regexes for vendor keys,
JWTs, URLs with a password, private keys and `password = …` keywords, with
its false-positive heuristics, used in memory through its Python classes.
memflow adds the vendor formats those miss (its own `mf_` keys, Anthropic,
GitHub fine-grained, Google), URLs whose password has `!&$…`, `Authorization`
headers, passwords told in a sentence, and JSON keys that name a credential.

Rules are tried only near their anchors: a few dozen scans for literal-led
patterns over the text, encoded one byte a character, find the places worth
trying them, and most of a megabyte of log is never looked at again.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# (start, end, kind) of one credential in a text.
Span = tuple[int, int, str]
# A rule: the credentials in the scan's text[start:end], given where its anchors are in it.
Finder = Callable[["_Scan", int, int, Sequence[int]], Iterator[Span]]


@dataclass(frozen=True, eq=False)  # hashed by identity: a key of each scan's hits
class _Anchor:
    """Where a rule can apply. Each pattern starts with a literal, which keeps
    its scan as fast as `bytes.find`; it runs on the lower-cased text unless
    `cased`. `accept` (lower-cased text, hit) drops hits no rule wants."""

    pattern: re.Pattern[bytes]
    cased: bool = False
    accept: Callable[[bytes, int], bool] | None = None
    # What every hit starts with: `in` says "none here" in a fraction of a
    # microsecond, where a regex scan of a short text costs one or two.
    literal: bytes = b""


def _anchor(
    pattern: bytes, *, cased: bool = False, accept: Callable[[bytes, int], bool] | None = None
) -> _Anchor:
    lead = re.match(rb"(?:[^\\\[\](){}.*+?|^$]|\\[.\-/])*", pattern)
    assert lead is not None  # it matches the empty string at least
    literal = lead.group()
    prefix = literal.replace(b"\\", b"")
    # A quantifier after the last character makes that one optional.
    if prefix and pattern[len(literal) : len(literal) + 1] in (b"?", b"*", b"{"):
        prefix = prefix[:-1]
    return _Anchor(re.compile(pattern), cased, accept, prefix)


@dataclass(frozen=True)
class _Group:
    """Rules tried in a window around each accepted hit of their anchors: at
    most `before` characters before it and `after` after, within its line."""

    finders: tuple[Finder, ...]
    anchors: tuple[_Anchor, ...]
    before: int = 64
    after: int = 256
    accept: Callable[[_Scan, int], bool] | None = None


# A merged window longer than this is cut, so a long line with an anchor
# every few characters is still scanned about once per group.
_WINDOW_CAP = 16_384


class _Scan:
    """One text, with each anchor's hits found once and shared by the groups."""

    def __init__(self, text: str) -> None:
        self.text = text
        # One byte a character (anything else becomes `?`), so a byte's index
        # is the character's; bytes.lower() folds ASCII only, keeping them.
        self.raw = text.encode("ascii", "replace")
        self.folded = self.raw.lower()
        self._hits: dict[_Anchor, list[int]] = {}
        # How the credential name at a hit is used (`_ASSIGNED`…), for the named rules.
        self.uses: dict[int, int] = {}
        self.signs: dict[int, bytes] = {}  # and the sign after it (`=`, `:`, `(`…)
        self.sign_ends: dict[int, int] = {}
        self.named_until = 0  # the end of the last name so read: later hits in it add nothing

    def hits(self, anchor: _Anchor) -> list[int]:
        found = self._hits.get(anchor)
        if found is None:
            data = self.raw if anchor.cased else self.folded
            if anchor.literal not in data:
                found = self._hits[anchor] = []
                return found
            found = [m.start() for m in anchor.pattern.finditer(data)]
            if anchor.accept is not None:
                found = [at for at in found if anchor.accept(self.folded, at)]
            self._hits[anchor] = found
        return found

    def windows(self, group: _Group) -> Iterator[tuple[int, int, list[int]]]:
        """(start, end, hits in it) of the stretches worth trying the group's rules on."""
        hits: list[int] = []
        for anchor in group.anchors:
            hits += self.hits(anchor)
        hits.sort()
        if group.accept is not None:
            hits = [at for at in hits if group.accept(self, at)]
        if not hits:
            return
        text = self.text
        current: tuple[int, int, list[int]] | None = None
        for at in hits:
            start = max(0, at - group.before)
            newline = text.rfind("\n", start, at)
            start = newline + 1 if newline >= 0 else start
            end = min(len(text), at + group.after)
            newline = text.find("\n", at, end)
            end = newline if newline >= 0 else end
            if current is not None:
                if start <= current[1] and end - current[0] <= _WINDOW_CAP:
                    current = (current[0], max(current[1], end), current[2])
                    current[2].append(at)
                    continue
                yield current
            current = (start, end, [at])
        if current is not None:
            yield current


# --- values: does this look like a credential, or like ordinary text? ----------------------

_PLACEHOLDERS = frozenset([
    "none", "null", "nil", "true", "false", "undefined", "required", "optional", "empty", "unset",
    "default", "yes", "no", "on", "off", "missing", "invalid", "incorrect", "wrong", "expired",
    "reset", "hidden", "masked", "redacted", "removed", "omitted", "example", "sample", "dummy",
    "test", "testing", "string", "str", "bool", "int", "number", "value", "values", "password",
    "passwords", "passwd", "pass", "pwd", "secret", "secrets", "token", "tokens", "key", "keys",
    "apikey", "credential", "credentials", "your_password", "yourpassword", "mypassword", "foo",
    "bar", "baz", "qux", "xxx", "xxxx", "xxxxx", "changeit", "stdin", "prompt", "ask", "env",
])  # fmt: skip
# Names ending like these hold something about a credential, not one.
_NOT_A_SECRET_NAME = re.compile(
    r"(?i)(?:^|[_\-.])(?:name|names|id|ids|path|paths|file|files|dir|type|types|len|length|size|"
    r"count|policy|policies|required|reset|field|fields|prompt|label|hint|help|strength|validators?|"
    r"min|max|mode|format|version|enabled|disabled|manager|store|ref|arn|url|uri|env|hash|hashed|"
    r"hasher|salt|rotation|expiry|expires|expired|timeout|ttl|regex|pattern|rules?|option|options|"
    r"flag|provider|backend|header|changed|budget|limit|source|kind)$|"
    r"less$|secret(?:ar|ion|e[sd]?\b)"
)
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_ENV_NAME = re.compile(r"[A-Z][A-Z_]*")
_CALL = re.compile(r"\w[\[(]")
# A variable: snake_case words, or any identifier that names a credential itself.
_VARIABLE = re.compile(
    r"_?[a-z]+(?:_[a-z]+)+|[A-Za-z_]*(?i:pass(?:word|wd)?|pwd|secret|token|key|auth)[A-Za-z_]*"
)
_NUMBER_UNIT = re.compile(r"\d+(?:\.\d+)?[-_]?[a-z]{1,6}|v?\d+(?:\.\d+)+")
_TEMPLATE = re.compile(r"\{\{|\$\{|\$\(|%\(|%s\b|<[^>]*>|\*\*\*")
_TRAILING = ".,;:)]}"


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_typed(value: str) -> bool:
    """Letters with a digit or a symbol: how passwords look, where a word with a
    capital or a hyphen inside (`CmosPwd`, `git-secret`) is still a word."""
    if not any(c.isalpha() for c in value):
        return False
    return any(c.isdigit() for c in value) or any(c in _SYMBOLS for c in value)


_SYMBOLS = frozenset("!@#$%^&*+=?~|<>")


def _credible(value: str, *, quoted: bool, strict: bool) -> bool:
    """Could `value`, given for a credential-named thing, be the credential itself?

    `strict` (prose, `name: value` without quotes) also asks it to look like
    a password, since the word after "password:" is mostly just a word.
    """
    heuristic = _heuristic()
    if len(value) < 4 or len(value) > 512:
        return False
    lowered = value.lower()
    if lowered in _PLACEHOLDERS or set(lowered) <= set("x*.#-_ 0"):
        return False
    if (
        heuristic.is_templated_secret(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_not_alphanumeric_string(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_potential_uuid(value)
        or _TEMPLATE.search(value)
    ):
        return False
    if value[0] in "/~([{<" or value.startswith(("./", "../", "http://", "https://", "file:")):
        return False  # a path, an address, a pattern: `PWD=/home/ci`, `secret: (\S+)`
    if "…" in value or "..." in value:
        return False  # elided: `api_key="mf_…"`
    if not quoted and (
        _DOTTED_NAME.fullmatch(value)
        or _ENV_NAME.fullmatch(value)
        or _CALL.search(value)
        or _VARIABLE.fullmatch(value)
    ):
        return False  # code: `= self.password`, `=DB_PASSWORD`, `= os.environ[…]`, `=api_key`
    if _NUMBER_UNIT.fullmatch(lowered):
        return False  # `token is 3600s`, `password is 12chars`, `secret is 256-bit`
    return not (strict and not quoted and not _looks_typed(value))


def _first_token(value: str) -> str:
    """An unquoted value up to a space, or the bracket or comma that ends it in code."""
    token = value.split(None, 1)[0] if value.strip() else ""
    return _CODE_END.split(token, 1)[0].rstrip(_TRAILING)


_CODE_END = re.compile(r"[),;\]}]")


@functools.cache
def _heuristic() -> Any:
    from detect_secrets.filters import heuristic

    return heuristic


# --- detect-secrets' vendor rules -----------------------------------------------------------


def _span_of(match: re.Match[str], group: int) -> tuple[int, int]:
    start, end = match.span(group)
    text = match.string
    # Some patterns take the character around the value too (`(?:\s|"|$)`).
    while start < end and text[start] in " \t\"'=:":
        start += 1
    while end > start and text[end - 1] in " \t\"'\r\n":
        end -= 1
    return start, end


def _regex_finder(
    kind: str,
    patterns: Any,
    *,
    group: int = 0,
    valid: Callable[[str], bool] | None = None,
    extend: re.Pattern[str] | None = None,
) -> Finder:
    compiled = tuple(patterns)

    def find(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
        text = scan.text
        for pattern in compiled:
            for match in pattern.finditer(text, start, end):
                s, e = _span_of(match, group if pattern.groups >= group else 0)
                if e <= s or (valid is not None and not valid(text[s:e])):
                    continue
                if extend is not None and (more := extend.match(text, e)) is not None:
                    e = more.end()
                yield s, e, kind

    return find


def _jwt_valid(token: str) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(token))


# Fixed-prefix vendor formats detect-secrets has not, or only in a narrower
# shape: (kind, how it starts, what follows).
_VENDOR_FORMATS = [
    ("GitHub token", "gh[pousr]_", r"[A-Za-z0-9]{20,}"),
    ("GitHub fine-grained token", "github_pat_", r"[A-Za-z0-9_]{20,}"),
    ("PyPI token", "pypi-", r"AgEI[A-Za-z0-9_\-]{16,}"),
    ("Anthropic key", "sk-ant-", r"[A-Za-z0-9_\-]{16,}"),
    ("OpenAI project key", "sk-proj-", r"[A-Za-z0-9_\-]{16,}"),
    ("OpenAI key", "sk-", r"[A-Za-z0-9]{32,}"),
    ("Slack token", "xox", r"[bpoasr]-[A-Za-z0-9\-]{10,}"),
    ("Google API key", "AIza", r"[0-9A-Za-z_\-]{35}"),
    ("memflow API key", "mf_", r"[A-Za-z0-9_\-]{40,}"),
]


def _vendor_finders() -> list[Finder]:
    return [
        _regex_finder(kind, [re.compile(r"(?<![A-Za-z0-9_\-])" + start + rest)])
        for kind, start, rest in _VENDOR_FORMATS
    ]


# A password in a URL, whatever its characters: detect-secrets' pattern leaves
# out `!$&'()*+,;=`, which typed passwords often hold.
_URL_PASSWORD = re.compile(r"://[^\s:/?#@\[\]\"'<>]*:([^\s/?#@\[\]\"'<>]+)@")


def _url_password_valid(password: str) -> bool:
    heuristic = _heuristic()
    return not (
        heuristic.is_templated_secret(password)
        or password.startswith("$")
        or set(password) <= set("*x")
        or _TEMPLATE.search(password)
    )


# --- detect-secrets' keyword rules --------------------------------------------------------------


def _keyword_finder() -> Finder:
    """`password = "…"`, `secret: …`, `pwd := …`, `"…" == api_key`: the keyword
    plugin's forms, tried where one of its keywords starts."""
    from detect_secrets.plugins import keyword

    # Every form it knows, whatever the file type (a memory has none).
    forms: dict[re.Pattern[str], int] = {}
    for table in keyword.REGEX_BY_FILETYPE.values():
        forms.update(table)
    forms.update(keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    preceded = keyword.PRECEDED_BY_EQUAL_COMPARISON_SIGNS_QUOTES_REQUIRED_REGEX
    # The forms a sign after the keyword can begin (`:` → `password: …`, `:=`…).
    by_sign: dict[bytes, list[tuple[re.Pattern[str], int]]] = {}
    for sign, names in _KEYWORD_FORMS.items():
        for byte in sign:
            by_sign[bytes([byte])] = [
                (form, forms[form]) for form in (getattr(keyword, n) for n in names)
            ]
    colon = keyword.FOLLOWED_BY_COLON_REGEX
    # Its keywords, to find where one starts in the lower-cased text (`ñ` is `?` there).
    keywords = [k.replace("ñ", ".").encode() for k in keyword.DENYLIST]
    name = re.compile(rb"(?:" + b"|".join(keywords) + rb")\w*")
    heuristic = _heuristic()

    def find(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
        text, folded = scan.text, scan.folded
        tried: set[int] = set()
        for hit in hits:
            use = scan.uses.get(hit, 0)
            if not use & (_ASSIGNED | _COMPARED):
                continue
            if folded.startswith(b"key", hit) and not (
                _key_named(folded, hit) or folded.startswith((b"key_pass", b"keypass"), hit)
            ):
                continue  # `key` alone is no keyword; `api_key`, `db_key`, `key_pass` are
            found = name.search(folded, max(start, hit - 9), min(end, hit + 12))
            if found is None or found.start() in tried:
                continue
            at = found.start()
            tried.add(at)
            candidates = iter(by_sign.get(scan.signs.get(hit, b""), ()))
            if use & _COMPARED:
                candidates = itertools.chain(candidates, [(preceded, 2)])
            for pattern, group in candidates:
                if pattern is preceded:
                    match = pattern.search(text, max(start, at - 140), end)
                else:
                    match = pattern.match(text, at, end)
                if match is None:
                    continue
                s, e = match.span(group)
                quoted = s > 0 and text[s - 1] in "\"'`"
                value = text[s:e].rstrip() if quoted else _first_token(text[s:e])
                e = s + len(value)
                identifier = _name_at(text, at, end)
                if _NOT_A_SECRET_NAME.search(identifier):
                    continue
                if not _credible(value, quoted=quoted, strict=pattern is colon):
                    continue
                if not quoted and _prose_after(text, e, end, value):
                    continue
                line_end = text.find("\n", match.start(), end)
                rest = text[match.start() : end if line_end < 0 else line_end]
                if heuristic.is_indirect_reference(rest):
                    continue
                yield s, e, _password_or(identifier, "credential assignment")
                break

    return find


_KEYWORD_FORMS = {
    b":": ["FOLLOWED_BY_COLON_EQUAL_SIGNS_REGEX", "FOLLOWED_BY_COLON_REGEX",
           "FOLLOWED_BY_COLON_QUOTES_REQUIRED_REGEX"],
    b"=!": ["FOLLOWED_BY_EQUAL_SIGNS_REGEX", "FOLLOWED_BY_EQUAL_SIGNS_QUOTES_REQUIRED_REGEX",
            "FOLLOWED_BY_ARROW_FUNCTION_SIGN_QUOTES_REQUIRED_REGEX",
            "FOLLOWED_BY_EQUAL_SIGNS_OPTIONAL_BRACKETS_OPTIONAL_AT_SIGN_QUOTES_REQUIRED_REGEX"],
    b"[": ["FOLLOWED_BY_EQUAL_SIGNS_OPTIONAL_BRACKETS_OPTIONAL_AT_SIGN_QUOTES_REQUIRED_REGEX"],
    b"(": ["FOLLOWED_BY_OPTIONAL_ASSIGN_QUOTES_REQUIRED_REGEX"],
    b"@\"'`": ["FOLLOWED_BY_QUOTES_AND_SEMICOLON_REGEX"],
}  # fmt: skip


def _name_at(text: str, at: int, end: int) -> str:
    """The whole identifier around a keyword (`DB_PASSWORD` for one at `PASSWORD`)."""
    start = at
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    stop = at
    while stop < end and (text[stop].isalnum() or text[stop] in "_-"):
        stop += 1
    return text[start:stop]


def _password_or(name: str, other: str) -> str:
    lowered = name.lower()
    if "pass" in lowered or "pwd" in lowered or "contrase" in lowered:
        return "password"
    return other


def _prose_after(text: str, at: int, end: int, value: str) -> bool:
    """A plain word followed by more words: `secret = a word in a sentence`."""
    if not (value.isalpha() and value.islower()):
        return False
    rest = text[at : min(end, at + 40)].split()
    return bool(rest) and rest[0].isalpha()


# --- memflow's own rules ------------------------------------------------------------------------

# `Authorization: Bearer …` (or Basic, Token…), and a bare `Bearer <long token>`.
_AUTH_HEADER = re.compile(
    r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|bot|digest|apikey)\s+)?"
    r"([A-Za-z0-9._~+/\-]{8,}=*)"
)
_BEARER = re.compile(r"(?i)bearer\s+([A-Za-z0-9._~+/\-]{20,}=*)")


def _auth_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text = scan.text
    for hit in hits:
        for pattern in (_AUTH_HEADER, _BEARER):
            match = pattern.match(text, hit, end)
            if match is None:
                continue
            s, e = match.span(1)
            value = text[s:e]
            if value.lower() in ("bearer", "basic", "token") or not _credible(
                value, quoted=False, strict=True
            ):
                continue
            if pattern is _BEARER and _entropy(value) < 3.0:
                continue
            yield s, e, "authorization header"


# A password told in a sentence: "the db password is hunter2", "my password:
# S3cret!", "pwd is …", "the api key is …" (`name = …` is the keyword rules').
# Matched in the lower-cased text.
_VALUE = (
    rb"\s+(?:now\s+|still\s+|just\s+|simply\s+)?(?P<q>[\"'`]?)(?P<value>[^\s\"'`]{4,128})(?P=q)"
)
_TOLD = re.compile(
    rb"(?P<name>pass(?:word|wd|phrase|code)|pwd|secret(?:[ _-]key)?|api[ _-]?key|token)s?\b"
    rb"(?:\s+(?:for|of|to|on|at)\s+[^\n;:=]{1,40}?)?"
    rb"(?:\s+(?:(?:was\s+|is\s+|has\s+been\s+)?(?:set|changed|reset)\s+to|will\s+be|should\s+be"
    rb"|has\s+been|is|was|are)|\s*:)" + _VALUE
)
# "set the password to …", "log in with password …": the verb comes first.
_TOLD_AFTER_VERB = re.compile(rb"(?:password|passphrase)(?:\s+to)?" + _VALUE)
_VERB_BEFORE = re.compile(
    rb"\b(?:(?:set|change|reset)\s+(?:the\s+|my\s+|our\s+|his\s+|her\s+)?(?:\w+\s+)?"
    rb"|(?:use|with|using|enter|type)\s+(?:the\s+)?)$"
)


def _told_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text, folded = scan.text, scan.folded
    tried: set[int] = set()
    for hit in hits:
        if not scan.uses.get(hit, 0) & (_ASSIGNED | _TOLD_BY_VERB | _GIVEN):
            continue
        # "api key" and "secret key" start before their anchor "key".
        starts = (hit - 3, hit - 4, hit - 7) if folded.startswith(b"key", hit) else (hit,)
        for at in starts:
            if at < start or at in tried or (at > 0 and folded[at - 1 : at].isalnum()):
                continue
            match = _TOLD.match(folded, at, end)
            if (
                match is None
                and folded.startswith(b"pass", at)
                and _VERB_BEFORE.search(folded, max(start, at - 40), at)
            ):
                match = _TOLD_AFTER_VERB.match(folded, at, end)
            if match is None:
                continue
            tried.add(at)
            s, e = match.span("value")
            quoted = bool(match.group("q"))
            value = text[s:e] if quoted else text[s:e].rstrip(_TRAILING + "?")
            if not _credible(value, quoted=quoted, strict=True):
                continue
            yield s, s + len(value), _password_or(text[at : at + 8], "credential")


# `API_TOKEN=…`, `auth: …`, `access_key=…` with a value that looks random: the
# names detect-secrets' keywords miss. Read from the credential word to the
# value, possessively, so nothing is read twice.
_ASSIGNMENT = re.compile(r"[\w.\-]*+\s*+[:=]\s*+['\"]?")
_RANDOM_VALUE = re.compile(r"[A-Za-z0-9+/=_\-.]{16,}+")


def _assignment_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text, folded = scan.text, scan.folded
    tried: set[int] = set()
    for hit in hits:
        if not scan.uses.get(hit, 0) & _ASSIGNED:
            continue
        if folded.startswith(b"key", hit) and not folded.endswith(_ACCESS_OR_API, 0, hit):
            continue  # only `api_key` and `access_key` among the `…key` names
        if folded.startswith(b"pwd", hit):
            continue
        match = _ASSIGNMENT.match(text, hit, end)
        if match is None or match.end() in tried:
            continue
        tried.add(match.end())
        value = _RANDOM_VALUE.match(text, match.end(), end)
        if value is None:
            continue
        found = value.group()
        has_mix = any(c.isdigit() for c in found) and any(c.isalpha() for c in found)
        if has_mix and _entropy(found) >= 3.5 and not _WORDS.fullmatch(found):
            yield value.start(), value.end(), "credential assignment"


# Lower-case words joined by `-`, `_` or `.` (`krb5-auth-dialog`): a name, not a key.
_WORDS = re.compile(r"(?:[a-z]+[0-9]*|[0-9]+)(?:[-_.](?:[a-z]+[0-9]*|[0-9]+))+")
_ACCESS_OR_API = (b"api", b"api_", b"api-", b"access", b"access_", b"access-")


# A JSON key that names a credential: `"PGPASSWORD": "…"`, `"api_token": "…"`.
_SECRET_KEY_NAME = re.compile(
    r"(?i)(?:^|[_\-.\s])(?:[a-z]*pass(?:word|wd|phrase)|pwd|secret|token|api[_-]?key|"
    r"access[_-]?key|private[_-]?key|client[_-]?key|auth[_-]?key|credentials?)(?:$|[_\-.\s])"
    r"|^[a-z]*pass(?:word|wd)$|^(?:[a-z]+_)?secret$"
)


def _pair_kind(key: str, value: str) -> str | None:
    """The kind of credential `value` is, given under `key` in a JSON object, or None."""
    if not _SECRET_KEY_NAME.search(key) or _NOT_A_SECRET_NAME.search(key):
        return None
    value = value.strip()
    if not value or any(c.isspace() for c in value):
        return None
    if not _credible(value, quoted=True, strict=False):
        return None
    return _password_or(key, "credential")


# --- anchors and the rule set -------------------------------------------------------------------


def _a_password(folded: bytes, at: int) -> bool:
    """`password`, `passwd`, `passphrase`, `passcode`, or detect-secrets' `db_pass`,
    `key_pass`…: not `PASSED`, `bypass`, `compass`."""
    return folded.startswith((b"passw", b"passph", b"passc"), at) or folded.endswith(
        (b"db", b"db_", b"database", b"database_", b"key", b"key_"), 0, at
    )


_PASS = _anchor(rb"pass", accept=_a_password)
_PWD = _anchor(rb"pwd")
_SECRET = _anchor(rb"secret")
_KEY = _anchor(rb"key")
_TOKEN = _anchor(rb"token")
_AUTH = _anchor(rb"auth")
_AUTH_NAME = _anchor(rb"auth(?![a-z])")  # `auth=`, `x-auth:`, not `authentication`
# What follows a credential's name (the rest of the identifier, a closing quote
# or bracket) when it is given a value: a sign of assignment, a call or a quote;
# or, in prose, "[for the db] is/was/will be/set to …".
_NAME_USE = re.compile(
    rb"[a-z0-9_.\-?]*(?:[\]\"'`]{0,2}[ \t]{0,8}(?P<sign>[:=!(\[@\"'`])"
    rb"|(?:[ \t]+(?:for|of|to|on|at)[ \t][^\n;:=]{1,40}?)?"
    rb"[ \t]+(?:is|was|are|will|should|has|set|changed|reset)[ \t])"
)


_ASSIGNED, _TOLD_BY_VERB, _COMPARED, _GIVEN = 1, 2, 4, 8


def _named_here(scan: _Scan, at: int) -> bool:
    """Is the credential name at `at` given a value (`password = …`, `password: …`,
    "the password is …", "with password …"), or compared with one (`"…" == password`)?
    How is kept in `scan.uses`, for the rules to try only the hits of their form."""
    if at < scan.named_until:
        return False  # `token` in `auth_token = …`: its `auth` was read to the `=`
    folded = scan.folded
    named = _NAME_USE.match(folded, at, at + 96)
    use = 0 if named is None else _ASSIGNED if named.group("sign") else _TOLD_BY_VERB
    if named is not None:
        scan.named_until = named.end()
    if folded.find(b"=", max(0, at - 40), at) >= 0:
        before = folded[max(0, at - 40) : at]
        if b"==" in before or b"!=" in before:
            use |= _COMPARED
    if folded.startswith(b"pass", at) and _VERB_BEFORE.search(folded, max(0, at - 40), at):
        use |= _GIVEN
    if use:
        scan.uses[at] = use
        if use & _ASSIGNED:
            assert named is not None
            scan.signs[at] = named.group("sign")
            scan.sign_ends[at] = named.end()
    return use != 0


# What comes before `key` in detect-secrets' keywords (`api_key`, `db_key`…).
_KEY_PREFIXES = (b"api", b"auth", b"service", b"account", b"db", b"database", b"priv", b"private",
                 b"client", b"secret", b"access")  # fmt: skip


def _key_named(folded: bytes, at: int) -> bool:
    return folded[max(0, at - 9) : at].rstrip(b"_-").endswith(_KEY_PREFIXES)


# A value of 24 or more after the sign (`= "`, `: `, `=>`): what those rules need.
_LONG_AFTER_SIGN = re.compile(rb"[=:>\s\"']{0,4}[a-z0-9_\-/+]{24}")


def _near_long_values(*finders: Finder) -> Finder:
    """Rules for `name = <long value>`, tried only around names with one just after."""

    def find(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
        stretches: list[tuple[int, int]] = []
        for hit in hits:
            after = scan.sign_ends.get(hit)
            if after is None or _LONG_AFTER_SIGN.match(scan.folded, after, end) is None:
                continue
            low, high = max(start, hit - 48), min(end, hit + 128)
            if stretches and low <= stretches[-1][1]:
                stretches[-1] = (stretches[-1][0], high)
            else:
                stretches.append((low, high))
        for low, high in stretches:
            for finder in finders:
                yield from finder(scan, low, high, hits)

    return find


_PEM_HEADER = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# A PEM block's header names it; its body runs to the matching footer.
_PEM_END = re.compile(r"-----END [A-Z0-9 ]+-----")
_B64_TAIL = re.compile(r"[A-Za-z0-9\-_.+/=]*")


@functools.cache
def _groups() -> tuple[_Group, ...]:
    """The rules, in the order a text's first credential is named by (vendors first).

    Built on first use: detect-secrets pulls in `requests`, 0.15 s of imports
    that a CLI which never scans text should not pay.
    """
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    def rule(kind: str, plugin: Any, *, group: int = 0, **options: Any) -> Finder:
        return _regex_finder(kind, plugin.denylist, group=group, **options)

    aws_id, aws_secret = AWSKeyDetector.denylist
    vendor_starts = [
        rb"gh[pousr]_", rb"github_pat_", rb"gl[a-z]{2,7}-", rb"gr1348941", rb"pypi-", rb"sk-",
        rb"k_live_", rb"sq0csp-", rb"sg\.", rb"xox", rb"hooks\.slack\.com", rb"accountkey=",
        rb"aiza", rb"mf_",
    ]  # fmt: skip
    return (
        _Group(
            finders=(
                rule("GitHub token", GitHubTokenDetector),
                rule("GitLab token", GitLabTokenDetector),
                rule("PyPI token", PypiTokenDetector),
                rule("OpenAI key", OpenAIDetector),
                rule("Stripe key", StripeDetector),
                rule("Square OAuth secret", SquareOAuthDetector),
                rule("SendGrid key", SendGridDetector),
                rule("Slack token", SlackDetector),
                rule("Azure storage key", AzureStorageKeyDetector),
                *_vendor_finders(),
            ),
            anchors=tuple(_anchor(start) for start in vendor_starts),
            before=16,
            after=512,
        ),
        _Group(
            finders=(
                _regex_finder("AWS access key id", [aws_id]),
                rule("Artifactory credential", ArtifactoryDetector),
                rule("Twilio key", TwilioKeyDetector),
            ),
            anchors=(
                _anchor(rb"A(?:KIA|SIA|BIA|CCA|3T|KC|P[0-9A-F]|C[a-z0-9])", cased=True),
                _anchor(rb"SK[a-z0-9]", cased=True),
            ),
            before=2,
            after=128,
        ),
        _Group(
            finders=(
                rule("Discord bot token", DiscordBotTokenDetector),
                rule("Telegram bot token", TelegramBotTokenDetector),
                rule("Mailchimp key", MailchimpDetector),
            ),
            # A Discord token's two dots, Telegram's `:` and 35, Mailchimp's `-us<dc>`.
            anchors=(
                _anchor(rb"\.[A-Za-z0-9_\-]{6}\.", cased=True),
                _anchor(rb":[A-Za-z0-9_\-]{35}", cased=True),
                _anchor(rb"-us[0-9]", cased=True),
            ),
            before=40,
            after=64,
        ),
        _Group(
            finders=(rule("npm token", NpmDetector, group=1),),
            anchors=(_TOKEN,),
            accept=lambda scan, at: scan.folded.endswith(b"_auth", 0, at),
            before=256,
            after=256,
        ),
        _Group(
            finders=(_regex_finder("private key", [_PEM_HEADER, *PrivateKeyDetector.denylist]),),
            anchors=(_KEY,),
            accept=lambda scan, at: scan.folded.endswith((b"private ", b"putty-user-"), 0, at),
            before=32,
            after=64,
        ),
        _Group(
            finders=(rule("JSON Web Token", JwtTokenDetector, valid=_jwt_valid, extend=_B64_TAIL),),
            anchors=(_anchor(rb"eyJ", cased=True),),
            before=0,
            after=8192,
        ),
        _Group(
            finders=(
                rule("password in a URL", BasicAuthDetector, group=1, valid=_url_password_valid),
                _regex_finder(
                    "password in a URL", [_URL_PASSWORD], group=1, valid=_url_password_valid
                ),
                # Their URL forms; the `key = …` ones are with the long values below.
                _regex_finder("Cloudant credential", CloudantDetector.denylist[2:], group=1),
                _regex_finder("SoftLayer key", SoftlayerDetector.denylist[1:], group=1),
            ),
            # A userinfo with an `@`, or SoftLayer's key in its path.
            anchors=(_anchor(rb"://[^\s/?#@]{1,256}@"), _anchor(rb"api\.softlayer\.com/")),
            before=64,
            after=512,
        ),
        _Group(
            finders=(_auth_finder,),
            anchors=(_AUTH, _anchor(rb"bearer")),
            accept=lambda scan, at: scan.folded.startswith((b"authorization", b"bearer"), at),
            before=0,
            after=8192,
        ),
        # Named credentials (`password = …`, "the password is …", `API_TOKEN=…`,
        # `ibm_cloud_iam_api_key = "<44>"`): one window pass for four kinds of rule.
        _Group(
            finders=(
                _near_long_values(
                    _regex_finder("AWS secret access key", [aws_secret], group=1),
                    rule("IBM Cloud IAM key", IbmCloudIamDetector, group=1),
                    rule("IBM COS HMAC key", IbmCosHmacDetector, group=1),
                    _regex_finder("Cloudant credential", CloudantDetector.denylist[:2], group=1),
                    _regex_finder("SoftLayer key", SoftlayerDetector.denylist[:1], group=1),
                ),
                _keyword_finder(),
                _told_finder,
                _assignment_finder,
            ),
            anchors=(_PASS, _PWD, _SECRET, _KEY, _TOKEN, _AUTH_NAME, _anchor(rb"contrase")),
            before=160,
            after=256,
            accept=_named_here,
        ),
    )


@functools.cache
def _gate() -> tuple[re.Pattern[bytes], re.Pattern[bytes], tuple[re.Pattern[bytes], ...]]:
    """Every anchor's literal, lower-cased and as it is, each set as one pattern of
    literals; and the patterns whose literal is one common character (`.`, `:`),
    which must be asked themselves."""
    anchors = dict.fromkeys(anchor for group in _groups() for anchor in group.anchors)

    def one_of(literals: set[bytes]) -> re.Pattern[bytes]:
        return re.compile(b"|".join(re.escape(x) for x in sorted(literals, key=len, reverse=True)))

    folded = one_of({a.literal for a in anchors if not a.cased and len(a.literal) > 1})
    cased = one_of({a.literal for a in anchors if a.cased and len(a.literal) > 1})
    patterns = tuple(a.pattern for a in anchors if len(a.literal) <= 1)
    assert all(a.cased for a in anchors if len(a.literal) <= 1)
    return folded, cased, patterns


def _any_anchor(scan: _Scan) -> bool:
    """Does any anchor occur? Most short texts have none, and stop here."""
    folded, cased, patterns = _gate()
    return (
        folded.search(scan.folded) is not None
        or cased.search(scan.raw) is not None
        or any(pattern.search(scan.raw) for pattern in patterns)
    )


# Below this, asking every anchor first costs less than it saves.
_SHORT = 4096


def _spans(text: str) -> Iterator[Span]:
    """Every credential found in `text`, rule group by rule group."""
    scan = _Scan(text)
    if len(text) < _SHORT and not _any_anchor(scan):
        return
    for group in _groups():
        for start, end, hits in scan.windows(group):
            for finder in group.finders:
                yield from finder(scan, start, end, hits)


def find_secret(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None."""
    for _, _, kind in _spans(text):
        return kind
    return None


def find_secret_in_json(value: Any) -> str | None:
    """The kind of credential in any key or string of a JSON value, or None.

    A key naming a credential (`"password": "hunter2"`) makes its string
    value one, where the value alone would say nothing.
    """
    if isinstance(value, str):
        return find_secret(value)
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            found = find_secret(name) or (_pair_kind(name, item) if isinstance(item, str) else None)
            if found := found or find_secret_in_json(item):
                return found
        return None
    if isinstance(value, list | tuple):
        for item in value:
            if found := find_secret_in_json(item):
                return found
    return None


def redact_secrets(text: str) -> str:
    """`text` with each credential `find_secret` would report replaced by `[redacted: kind]`.

    Everything else is kept as it was; text with no credential comes back
    unchanged. A PEM block goes from its header to its footer (or to the end
    of the text when it has none).
    """
    spans: list[Span] = []
    for start, end, kind in _spans(text):
        if kind == "private key":
            while start > 0 and text[start - 1] == "-":
                start -= 1  # detect-secrets' patterns start at BEGIN
            footer = _PEM_END.search(text, end)
            end = footer.end() if footer else len(text)
        spans.append((start, end, kind))
    if not spans:
        return text
    parts, at = [], 0
    for start, end, kind in sorted(spans):
        if end <= at:
            continue  # inside one already cut out
        parts += [text[at : max(start, at)], f"[redacted: {kind}]"]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_json(value: Any) -> Any:
    """A JSON value with every string in it passed through `redact_secrets` (keys kept).

    The whole string under a key that names a credential (`"PGPASSWORD": "…"`)
    is cut out when it could be one.
    """
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            kind = _pair_kind(str(key), item) if isinstance(item, str) else None
            out[key] = f"[redacted: {kind}]" if kind else redact_json(item)
        return out
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    return value
