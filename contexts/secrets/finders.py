"""The rules: detect-secrets' vendor and keyword rules, and those memflow adds."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from contexts.secrets.scan import _TOKEN_REACH, Finder, Span, _anchor, _near, _Scan
from contexts.secrets.shapes import basic_userinfo
from contexts.secrets.values import (
    _NOT_A_SECRET_NAME,
    _TEMPLATE,
    _TRAILING,
    _URL_PLACEHOLDERS,
    _credible,
    _entropy,
    _first_token,
    _heuristic,
)

# --- detect-secrets' vendor rules -----------------------------------------------------------


# Some patterns take the character around the value too (`(?:\s|"|$)`).
_AROUND_START, _AROUND_END = " \t\"'=:", " \t\"'\r\n"


def _span_of(match: re.Match[str], group: int) -> tuple[int, int]:
    start, end = match.span(group)
    text = match.string
    while start < end and text[start] in _AROUND_START:
        start += 1
    while end > start and text[end - 1] in _AROUND_END:
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
        verdicts = scan.verdicts_of(valid)
        for pattern in compiled:
            which = group if pattern.groups >= group else 0
            for match in pattern.finditer(text, start, end):
                s, e = match.span(which)
                if s >= e or text[s] in _AROUND_START or text[e - 1] in _AROUND_END:
                    s, e = _span_of(match, which)
                    if e <= s:
                        continue
                if valid is not None:  # each value judged once a scan (a page of URLs repeats them)
                    value = text[s:e]
                    if (verdict := verdicts.get(value)) is None:
                        verdict = verdicts[value] = valid(value)
                    if not verdict:
                        continue
                if extend is not None and (more := extend.match(text, e)) is not None:
                    e = more.end()
                yield s, e, kind

    return find


def _jwt_valid(token: str) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(token))


# detect-secrets' JWT pattern, possessive: its header and payload runs are read
# once, where its greedy form tried every `eyJ` of a long run to the run's end.
_JWT_HEAD = re.compile(r"eyJ[A-Za-z0-9\-_=]*+")
_JWT_REST = re.compile(r"\.[A-Za-z0-9\-_=]++\.?[A-Za-z0-9\-_.+/=]*+")


def _jwt_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    """JSON Web Tokens, each run of token characters read once: an `eyJ` inside
    a run already read (`eyJeyJeyJ…`) starts nothing new."""
    text = scan.text
    read_until = start
    for hit in hits:
        head = _JWT_HEAD.match(text, hit, end) if hit >= read_until else None
        if head is None:
            continue
        read_until = head.end()
        if head.end() - hit < 4 or (rest := _JWT_REST.match(text, head.end(), end)) is None:
            continue
        read_until = rest.end()
        if _jwt_valid(text[hit : rest.end()]):
            yield hit, rest.end(), "JSON Web Token"


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
    # From gitleaks' rule list (its `config/gitleaks.toml`), where detect-secrets has none.
    ("Hugging Face token", "hf_", r"[A-Za-z0-9]{34}(?![A-Za-z0-9])"),
    ("DigitalOcean token", "do[por]_v1_", r"[a-f0-9]{64}"),
    ("Shopify token", "shp(?:at|ss|ca|pa)_", r"[a-fA-F0-9]{32}"),
    ("Atlassian token", "ATATT3", r"[A-Za-z0-9_\-=]{150,}"),
    ("Vault token", "hv[sbr]\\.", r"[A-Za-z0-9_\-]{24,}"),
    ("Doppler token", "dp\\.(?:st|ct|sa|scim|audit)\\.", r"(?:[a-z0-9_\-]{2,35}\.)?[A-Za-z0-9]{40,}"),
    ("Databricks token", "dapi", r"[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])"),
    ("Linear key", "lin_api_", r"[A-Za-z0-9]{40}"),
    ("Postman key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("New Relic key", "NRAK-", r"[A-Z0-9]{27}"),
    ("age secret key", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("Stripe webhook secret", "whsec_", r"[A-Za-z0-9]{32,}"),
    ("Slack app token", "xapp-", r"[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+"),
    ("Sentry token", "sntry[su]_", r"[A-Za-z0-9_\-=+/]{40,}"),
    ("Grafana token", "gl(?:sa|c)_", r"[A-Za-z0-9+/_]{32,}={0,2}"),
    ("Supabase token", "sbp_", r"[a-f0-9]{40}"),
    ("Figma token", "figd_", r"[A-Za-z0-9_\-]{40}"),
    ("Discord webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/",
     r"[0-9]+/[A-Za-z0-9_\-]{60,}"),
]  # fmt: skip


def _vendor_finders() -> list[Finder]:
    return [
        _regex_finder(kind, [re.compile(r"(?<![A-Za-z0-9_\-])" + start + rest)])
        for kind, start, rest in _VENDOR_FORMATS
    ]


# A password in a URL, whatever its characters: detect-secrets' pattern leaves
# out `!$&'()*+,;=`, which typed passwords often hold.
_URL_PASSWORD = re.compile(r"://[^\s:/?#@\[\]\"'<>]*:([^\s/?#@\[\]\"'<>]+)@")


def _url_password_valid(password: str) -> bool:
    return not (
        password.lower() in _URL_PLACEHOLDERS
        or _heuristic().is_templated_secret(password)
        or password.startswith("$")
        or set(password) <= _STARS
        or _TEMPLATE.search(password)
    )


_STARS = frozenset("*x")


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
        if name.search(folded, start, end) is None:
            return  # none of its keywords in the window (`token=`, `"auth":`): nothing to try
        tried: set[int] = set()
        read_until = start  # the end of the last value read: a name inside it is part of it
        for hit in hits:
            use = scan.uses.get(hit, 0)
            if hit < read_until or not use & (_ASSIGNED | _COMPARED):
                continue
            if folded.startswith(b"key", hit) and not (
                _key_named(folded, hit) or folded.startswith((b"key_pass", b"keypass"), hit)
            ):
                continue  # `key` alone is no keyword; `api_key`, `db_key`, `key_pass` are
            stop = _near(hit, end)
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
                    match = pattern.search(text, max(start, at - 140), stop)
                else:
                    match = pattern.match(text, at, stop)
                if match is None:
                    continue
                s, e = match.span(group)
                quoted = s > 0 and text[s - 1] in "\"'`"
                value = text[s:e].rstrip() if quoted else _first_token(text[s:e])
                e = s + len(value)
                read_until = max(read_until, e)
                identifier = _name_at(text, at, stop)
                if _NOT_A_SECRET_NAME.search(identifier):
                    continue
                if not scan.credible(value, quoted=quoted, strict=pattern is colon):
                    continue
                if not quoted and _prose_after(text, e, end, value):
                    continue
                line_end = text.find("\n", match.start(), stop)
                rest = text[match.start() : stop if line_end < 0 else line_end]
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
            match = pattern.match(text, hit, _near(hit, end, _TOKEN_REACH))
            if match is None:
                continue
            s, e = match.span(1)
            value = text[s:e]
            if value.lower() in ("bearer", "basic", "token") or not scan.credible(
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
# What every match of those starts with, or holds (`api key`).
_TOLD_NAME = re.compile(rb"pass|pwd|secret|key|token")
# "set the password to …", "log in with password …": the verb comes first.
_TOLD_AFTER_VERB = re.compile(rb"(?:password|passphrase)(?:\s+to)?" + _VALUE)
_VERB_BEFORE = re.compile(
    rb"\b(?:(?:set|change|reset)\s+(?:the\s+|my\s+|our\s+|his\s+|her\s+)?(?:\w+\s+)?"
    rb"|(?:use|with|using|enter|type)\s+(?:the\s+)?)$"
)


def _told_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text, folded = scan.text, scan.folded
    if _TOLD_NAME.search(folded, start, end) is None:
        return  # no name it reads in the window (`"auth": …`): nothing to try
    tried: set[int] = set()
    for hit in hits:
        use = scan.uses.get(hit, 0)
        if not use & (_TOLD_BY_VERB | _GIVEN) and not (
            use & _ASSIGNED and scan.signs.get(hit) == b":"
        ):
            continue  # `name = …` is the keyword rules'; this one reads `name: …` and "name is …"
        # "api key" and "secret key" start before their anchor "key".
        starts = (hit - 3, hit - 4, hit - 7) if folded.startswith(b"key", hit) else (hit,)
        for at in starts:
            if at < start or at in tried or (at > 0 and folded[at - 1 : at].isalnum()):
                continue
            stop = _near(at, end)
            match = _TOLD.match(folded, at, stop)
            if (
                match is None
                and folded.startswith(b"pass", at)
                and _VERB_BEFORE.search(folded, max(start, at - 40), at)
            ):
                match = _TOLD_AFTER_VERB.match(folded, at, stop)
            if match is None:
                continue
            tried.add(at)
            s, e = match.span("value")
            quoted = bool(match.group("q"))
            value = text[s:e] if quoted else text[s:e].rstrip(_TRAILING + "?")
            if not scan.credible(value, quoted=quoted, strict=True):
                continue
            yield s, s + len(value), _password_or(text[at : at + 8], "credential")


# `API_TOKEN=…`, `auth: …`, `access_key=…` with a value that looks random: the
# names detect-secrets' keywords miss. Read from the credential word to the
# value, possessively, so nothing is read twice.
_ASSIGNMENT = re.compile(r"[\w.\-]*+\s*+[:=]\s*+['\"]?")
_RANDOM_VALUE = re.compile(r"[A-Za-z0-9+/=_\-.]{16,}+")


def _assignment_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text, folded = scan.text, scan.folded
    if _RANDOM_VALUE.search(text, start, end) is None:
        return  # no value long enough in the window: nothing to try
    tried: set[int] = set()
    read_until = start  # the end of the last value read: a hit inside it adds nothing
    for hit in hits:
        if hit < read_until or not scan.uses.get(hit, 0) & _ASSIGNED:
            continue
        if folded.startswith(b"key", hit) and not folded.endswith(_ACCESS_OR_API, 0, hit):
            continue  # only `api_key` and `access_key` among the `…key` names
        if folded.startswith(b"pwd", hit):
            continue
        stop = _near(hit, end)
        match = _ASSIGNMENT.match(text, hit, stop)
        if match is None or match.end() in tried:
            continue
        tried.add(match.end())
        value = _RANDOM_VALUE.match(text, match.end(), stop)
        if value is None:
            continue
        read_until = value.end()
        found = value.group()
        has_mix = _DIGIT.search(found) is not None and _LETTER.search(found) is not None
        if has_mix and _entropy(found) >= 3.5 and not _WORDS.fullmatch(found):
            yield value.start(), value.end(), "credential assignment"


_DIGIT, _LETTER = re.compile(r"[0-9]"), re.compile(r"[A-Za-z]")
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
    if key.lower() == "auth" and basic_userinfo(value.strip()):
        return "registry auth"  # Docker's config.json: base64 of `user:password`
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
_AUTHORIZATION = _anchor(rb"authorization")
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
_COMPARISON = re.compile(rb"[=!]=")


def _named_here(scan: _Scan, hits: list[int]) -> list[int]:
    """The hits where a credential's name is given a value (`password = …`, `password: …`,
    "the password is …", "with password …"), or compared with one (`"…" == password`).
    How is kept in `scan.uses`, for the rules to try only the hits of their form.

    One loop for all of a piece's hits, the lookups bound once: near-matching
    text has a name every few characters, and this runs for each."""
    folded, uses, signs, sign_ends = scan.folded, scan.uses, scan.signs, scan.sign_ends
    name_use = _NAME_USE.match
    # Asked once a piece: most have no comparison at all.
    compared = _COMPARISON.search if _COMPARISON.search(folded) is not None else None
    named_until = scan.named_until
    accepted = []
    for at in hits:
        if at < named_until:
            continue  # `token` in `auth_token = …`: its `auth` was read to the `=`
        named = name_use(folded, at, at + 96)
        sign = None
        if named is None:
            use = 0
        else:
            named_until = named_end = named.end()
            sign = named.group(1)
            use = _ASSIGNED if sign else _TOLD_BY_VERB
        low = at - 40 if at > 40 else 0
        if compared is not None and compared(folded, low, at) is not None:
            use |= _COMPARED
        # Each form of the verb ends in a space: the byte before tells most hits at once.
        if (
            folded.startswith(b"pass", at)
            and folded[at - 1 : at].isspace()
            and _VERB_BEFORE.search(folded, low, at)
        ):
            use |= _GIVEN
        if use:
            uses[at] = use
            accepted.append(at)
            if sign:
                signs[at] = sign
                sign_ends[at] = named_end
    scan.named_until = named_until
    return accepted


# What comes before `key` in detect-secrets' keywords (`api_key`, `db_key`…).
_KEY_PREFIXES = (b"api", b"auth", b"service", b"account", b"db", b"database", b"priv", b"private",
                 b"client", b"secret", b"access")  # fmt: skip


def _key_named(folded: bytes, at: int) -> bool:
    return folded[max(0, at - 9) : at].rstrip(b"_-").endswith(_KEY_PREFIXES)


# A value of 24 or more after the sign (`= "`, `: `, `=>`): what those rules need.
_LONG_AFTER_SIGN = re.compile(rb"[=:>\s\"']{0,4}[a-z0-9_\-/+]{24}")
_LONG_RUN = re.compile(rb"[a-z0-9_\-/+]{24}")
# What each of those rules holds, in the lower-cased text: `aws`, or a credential's
# name, its sign (their own forms of it) and a value of 24 or more.
_NAMED_LONG_VALUE = re.compile(
    rb"aws|(?:key|pwd|pw|password|pass|token)[\"']?\]? *(?:=|:|:=|=>| +|::) *[\"']?[0-9a-z/+_\-]{24}"
)


def _near_long_values(*finders: Finder, gate: re.Pattern[str]) -> Finder:
    """Rules for `name = <long value>`, tried only around names with one just after,
    and only where `gate` (all their patterns as one) finds something: a line of
    `KEY=value` is asked once, not once a rule."""

    def find(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
        if _LONG_RUN.search(scan.folded, start, end) is None:
            return  # no value that long in the window: no name has one after it
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
            # Their patterns ignore case in Unicode (a Kelvin sign is a `k`): the
            # lower-cased bytes answer for an ASCII stretch, and faster.
            if scan.text[low:high].isascii():
                if _NAMED_LONG_VALUE.search(scan.folded, low, high) is None:
                    continue
            elif gate.search(scan.text, low, high) is None:
                continue
            for finder in finders:
                yield from finder(scan, low, high, hits)

    return find
