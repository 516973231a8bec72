"""Values: does this look like a credential, or like ordinary text?"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Any

_PLACEHOLDERS = frozenset([
    "none", "null", "nil", "true", "false", "undefined", "required", "optional", "empty", "unset",
    "default", "yes", "no", "on", "off", "missing", "invalid", "incorrect", "wrong", "expired",
    "reset", "hidden", "masked", "redacted", "removed", "omitted", "example", "sample", "dummy",
    "test", "testing", "string", "str", "bool", "int", "number", "value", "values", "password",
    "passwords", "passwd", "pass", "pwd", "secret", "secrets", "token", "tokens", "key", "keys",
    "apikey", "credential", "credentials", "your_password", "yourpassword", "mypassword", "foo",
    "bar", "baz", "qux", "xxx", "xxxx", "xxxxx", "changeit", "stdin", "prompt", "ask", "env",
])  # fmt: skip
# What documentation writes where a password goes, in a URL or a command (`postgres://user:password@host`,
# README.md's own `DATABASE_URL` example): the word itself, not a password.
_URL_PLACEHOLDERS = frozenset([
    "password", "passwd", "pwd", "your_password", "yourpassword", "your-password",
    "mypassword", "my_password", "secret", "your_secret", "db_password", "dbpassword",
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
