"""Credentials detect-secrets has no plugin for, found by review #33: Azure SAS
signatures and client secrets, Docker's registry `auth`, a kubeconfig's
base64 private key, and passwords given on a command line (`curl -u user:pass`,
`mysql -p…`, `sshpass -p …`, `redis-cli -a …`, `htpasswd -b …`).

Each is read from its anchor, possessively and at most `_REACH` past it, and a
stretch already read is not read again from inside: linear, as the rest.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Sequence

from contexts.secrets.scan import Span, _near, _Scan
from contexts.secrets.values import _URL_PLACEHOLDERS, _entropy

# --- Azure ------------------------------------------------------------------------------------

# A SAS token's signature (`…&sig=<url-encoded base64>`), and a connection string's key.
_SAS_SIG = re.compile(r"(?i)(?<=[?&;])sig=((?:[A-Za-z0-9+/=]|%[0-9A-Fa-f]{2}){30,}+)")
_SHARED_KEY = re.compile(r"(?i)SharedAccessKey=([A-Za-z0-9+/]{30,}+={0,2})")
# Entra ID (Azure AD) client secrets: three characters, a digit, `Q~`, then 31 to 34.
_CLIENT_SECRET = re.compile(
    r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"
)


# What each of those holds: a run of 30 characters of a signature or a key, or 31 of a secret.
_AZURE_RUN = re.compile(r"[A-Za-z0-9+/=%]{30}|[A-Za-z0-9_~.\-]{31}")


def _azure_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text = scan.text
    if _AZURE_RUN.search(text, start, end) is None:
        return  # no run that long in the window (`&sig=&sig=…`): nothing to try
    for hit in hits:
        stop = _near(hit, end)
        for pattern, kind in ((_SAS_SIG, "Azure SAS signature"), (_SHARED_KEY, "Azure shared key")):
            match = pattern.match(text, hit, stop)
            if match is not None and _entropy(match.group(1)) >= 3.5:
                yield match.start(1), match.end(1), kind
        if text.startswith("Q~", hit):
            match = _CLIENT_SECRET.match(text, max(start, hit - 4), stop)
            if match is not None:
                yield match.start(), match.end(), "Azure client secret"


# --- base64 that hides a credential ---------------------------------------------------------------

_B64_RUN = re.compile(r"[A-Za-z0-9+/]*+={0,2}")


def _decoded_start(value: str, n: int = 120) -> bytes:
    head = value[:n]
    head = head[: len(head) - len(head) % 4]
    try:
        return base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return b""


def basic_userinfo(value: str) -> bool:
    """Is `value` base64 of `user:password` (Docker's `auth`, HTTP Basic)?"""
    if not 8 <= len(value) <= 512:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password.isprintable() and len(password) >= 4)


_DOCKER_AUTH = re.compile(r"\"auth\"\s*+:\s*+\"([A-Za-z0-9+/]{8,512}+={0,2})\"")


def _base64_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    """A PEM private key in base64 (kubeconfig's `client-key-data`), Docker's `"auth"`."""
    text = scan.text
    read_until = start
    for hit in hits:
        if hit < read_until:
            continue
        if text.startswith("LS0tLS1CRUdJTi", hit):  # "-----BEGIN" in base64
            run = _B64_RUN.match(text, hit)  # to its end: a key runs past any window
            assert run is not None  # it matches the empty string at least
            read_until = run.end()
            if b"PRIVATE KEY" in _decoded_start(run.group()):
                yield hit, run.end(), "private key"
        elif (match := _DOCKER_AUTH.match(text, hit, _near(hit, end))) is not None and (
            basic_userinfo(match.group(1))
        ):
            yield match.start(1), match.end(1), "registry auth"


# --- command lines ----------------------------------------------------------------------------------

_QUOTED = r"(?P<q>['\"]?)(?P<value>[^\s'\"]++)(?P=q)"
_COMMANDS = (
    # curl -u user:pass, --user user:pass; wget --user=… is the keyword rules' `--password=`
    re.compile(r"(?:-u|--user)(?:\s*+|=)(?P<q>['\"]?)[^\s:'\"]++:(?P<value>[^\s'\"]++)(?P=q)"),
    # mysql -u root -pS3cret (the password follows -p with no space)
    re.compile(r"(?:mysql|mariadb)[\w-]*+[^\n|;&]{0,200}?\s-p" + _QUOTED),
    re.compile(r"sshpass\s++-p\s*+" + _QUOTED),
    re.compile(r"redis-cli[^\n|;&]{0,200}?\s(?:-a|--pass)\s++" + _QUOTED),
    # htpasswd -b [-c…] FILE USER PASSWORD
    re.compile(
        r"htpasswd(?:\s++-\w++)*?\s++-\w*b\w*+(?:\s++-\w++)*+\s++\S++\s++\S++\s++" + _QUOTED
    ),
)


_WORD = re.compile(r"[A-Za-z_\-]*")


def _command_finder(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
    text = scan.text
    read_until = start
    for hit in hits:
        if hit < read_until:
            continue
        at = hit - 1 if hit > 0 and text[hit - 1] == "-" else hit  # `--user` at its `-u`
        stop = _near(hit, end, 320)
        # Each form starts with its own literal: `-u`/`--user`, or the command's name.
        for pattern in _USER_OPTION if text[at] == "-" else _COMMANDS[1:]:
            match = pattern.match(text, at, stop)
            if match is None:
                continue
            read_until = match.end()
            value, quoted = match.group("value", "q")
            if scan.valid(_placeholder, value):
                break  # `--user <user:password>`, `-u 'user:password;auth=NTLM'`: documentation
            # `-u 1000:1000`, `-u user:group`: ids, not passwords (strict wants a typed one).
            if scan.credible(value, quoted=bool(quoted), strict=pattern is _COMMANDS[0]):
                yield match.start("value"), match.end("value"), "password on a command line"
            break


_USER_OPTION = _COMMANDS[:1]


def _placeholder(value: str) -> bool:
    """`user:password`, `<password>`: what documentation writes where one goes."""
    return _WORD.match(value).group().lower() in _URL_PLACEHOLDERS  # type: ignore[union-attr]
