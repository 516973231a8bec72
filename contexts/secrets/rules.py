"""The rule groups, in the order a text's first credential is named by, and the gate
that says whether any of their anchors occurs at all."""

from __future__ import annotations

import bisect
import functools
import importlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from contexts.secrets.finders import (
    _AUTH_NAME,
    _AUTHORIZATION,
    _KEY,
    _PASS,
    _PWD,
    _SECRET,
    _TOKEN,
    _URL_PASSWORD,
    _assignment_finder,
    _auth_finder,
    _jwt_finder,
    _keyword_finder,
    _named_here,
    _near_long_values,
    _regex_finder,
    _told_finder,
    _url_password_valid,
    _vendor_finders,
)
from contexts.secrets.scan import Finder, Span, _anchor, _Group, _Scan
from contexts.secrets.shapes import _azure_finder, _base64_finder, _command_finder
from contexts.secrets.values import _heuristic

_PEM_HEADER = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# A PEM block's header names it; its body runs to the matching footer.
_PEM_END = re.compile(r"-----END [A-Z0-9 ]+-----")


def _private_key_finder(headers: list[re.Pattern[str]]) -> Finder:
    """PEM headers (`-----BEGIN … PRIVATE KEY-----`), and detect-secrets' headers
    outside them (`BEGIN RSA PRIVATE KEY` alone, PuTTY's). Its headers are literals
    that cannot overlap, so one scan finds them all; one inside a PEM header is
    that header again, its block the same (`mask._pem_blocks`): a page of headers
    is not masked twice over."""
    theirs = _one_of(headers)

    def find(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
        text = scan.text
        starts, ends = [], []
        for match in _PEM_HEADER.finditer(text, start, end):
            starts.append(match.start())
            ends.append(match.end())
            yield match.start(), match.end(), "private key"
        for match in theirs.finditer(text, start, end):
            s, e = match.span()
            at = bisect.bisect_left(ends, e)  # the PEM header that ends first at or after it
            if at == len(ends) or starts[at] > s:
                yield s, e, "private key"

    return find


@functools.cache
def _groups() -> tuple[_Group, ...]:
    """The rules, in the order a text's first credential is named by (vendors first).

    Built on first use: detect-secrets pulls in `requests`, 0.15 s of imports
    that a CLI which never scans text should not pay.
    """
    return (*_vendor_groups(), *_shape_groups(), *_named_groups())


def _plugin(name: str) -> Any:
    """A detect-secrets plugin class by `module.Class`, imported when first asked for."""
    module, _, cls = name.partition(".")
    return getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)


def _rule(kind: str, plugin: str, *, group: int = 0, **options: Any) -> Finder:
    """A rule made of the plugin's own patterns (its denylist)."""
    return _regex_finder(kind, _plugin(plugin).denylist, group=group, **options)


# Where the fixed-prefix vendor formats start (detect-secrets' and memflow's own).
_VENDOR_STARTS = [
    rb"gh[pousr]_", rb"github_pat_", rb"gl[a-z]{2,7}-", rb"gr1348941", rb"pypi-", rb"sk-",
    rb"k_live_", rb"sq0csp-", rb"sg\.", rb"xox", rb"hooks\.slack\.com", rb"accountkey=",
    rb"aiza", rb"mf_",
    # gitleaks' (finders._VENDOR_FORMATS)
    rb"hf_", rb"do[por]_v1_", rb"shp(?:at|ss|ca|pa)_", rb"atatt3", rb"hv[sbr]\.", rb"dp\.",
    rb"dapi", rb"lin_api_", rb"pmak-", rb"nrak-", rb"age-secret-key-1", rb"whsec_", rb"xapp-",
    rb"sntry[su]_", rb"gl(?:sa|c)_", rb"sbp_", rb"figd_", rb"discord(?:app)?\.com/api/webhooks/",
]  # fmt: skip


def _vendor_groups() -> tuple[_Group, ...]:
    """Vendor keys led by a prefix, and the AWS / Artifactory / Twilio ids led by capitals."""
    aws_id = _plugin("aws.AWSKeyDetector").denylist[0]
    return (
        _Group(
            finders=(
                _rule("GitHub token", "github_token.GitHubTokenDetector"),
                _rule("GitLab token", "gitlab_token.GitLabTokenDetector"),
                _rule("PyPI token", "pypi_token.PypiTokenDetector"),
                _rule("OpenAI key", "openai.OpenAIDetector"),
                _rule("Stripe key", "stripe.StripeDetector"),
                _rule("Square OAuth secret", "square_oauth.SquareOAuthDetector"),
                _rule("SendGrid key", "sendgrid.SendGridDetector"),
                _rule("Slack token", "slack.SlackDetector"),
                _rule("Azure storage key", "azure_storage_key.AzureStorageKeyDetector"),
                *_vendor_finders(),
            ),
            anchors=tuple(_anchor(start) for start in _VENDOR_STARTS),
            before=16,
            after=512,
        ),
        _Group(
            finders=(
                _regex_finder("AWS access key id", [aws_id]),
                _rule("Artifactory credential", "artifactory.ArtifactoryDetector"),
                _rule("Twilio key", "twilio.TwilioKeyDetector"),
            ),
            anchors=(
                _anchor(rb"A(?:KIA|SIA|BIA|CCA|3T|KC|P[0-9A-F]|C[a-z0-9])", cased=True),
                _anchor(rb"SK[a-z0-9]", cased=True),
            ),
            before=2,
            after=128,
        ),
    )


def _shape_groups() -> tuple[_Group, ...]:
    """Tokens known by their shape: bot tokens, npm's `_authToken`, PEM keys, JWTs."""
    return (
        _Group(
            finders=(
                _rule("Discord bot token", "discord.DiscordBotTokenDetector"),
                _rule("Telegram bot token", "telegram_token.TelegramBotTokenDetector"),
                _rule("Mailchimp key", "mailchimp.MailchimpDetector"),
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
            finders=(_rule("npm token", "npm.NpmDetector", group=1),),
            # npm's `_authToken`: the look behind is asked inside the scan, not once a `token`.
            anchors=(_anchor(rb"token(?<=_authtoken)"),),
            before=256,
            after=256,
        ),
        _Group(
            finders=(_private_key_finder(_plugin("private_key.PrivateKeyDetector").denylist),),
            anchors=(_anchor(rb"key(?:(?<=private key)|(?<=putty-user-key))"),),
            before=32,
            after=64,
        ),
        # Review #33's shapes (shapes.py), each rule on its own anchors' hits.
        _Group(
            finders=(_azure_finder,),
            anchors=(
                _anchor(rb"sig=", after=b"?&;"),
                _anchor(rb"sharedaccesskey="),
                _anchor(rb"Q~", cased=True),
            ),
            before=8,
            after=640,
        ),
        _Group(
            finders=(_base64_finder,),
            anchors=(_anchor(rb"LS0tLS1CRUdJTi", cased=True), _anchor(rb'"auth"')),
            before=0,
            after=640,
        ),
        _Group(
            finders=(_command_finder,),
            anchors=(
                _anchor(rb"-u", after=b" \t-"),
                *(_anchor(name) for name in _COMMAND_NAMES),
            ),
            before=8,
            after=640,
        ),
        _Group(
            finders=(_jwt_finder,),
            anchors=(_anchor(rb"eyJ", cased=True),),
            before=0,
            after=8192,
        ),
    )


def _named_groups() -> tuple[_Group, ...]:
    """Credentials known by what names them: a URL's userinfo, an `Authorization`
    header, a `password = …` or "the password is …" near its name."""
    aws_secret = _plugin("aws.AWSKeyDetector").denylist[1]
    cloudant = _plugin("cloudant.CloudantDetector").denylist
    softlayer = _plugin("softlayer.SoftlayerDetector").denylist
    ibm_iam = _plugin("ibm_cloud_iam.IbmCloudIamDetector").denylist
    ibm_cos = _plugin("ibm_cos_hmac.IbmCosHmacDetector").denylist
    long_values = [aws_secret, *ibm_iam, *ibm_cos, *cloudant[:2], *softlayer[:1]]
    return (
        _Group(
            finders=(
                _only_with_quote_or_bracket(
                    _rule(
                        "password in a URL",
                        "basic_auth.BasicAuthDetector",
                        group=1,
                        valid=_url_password_valid,
                    )
                ),
                _regex_finder(
                    "password in a URL", [_URL_PASSWORD], group=1, valid=_url_password_valid
                ),
                # Their URL forms; the `key = …` ones are with the long values below.
                _regex_finder("Cloudant credential", cloudant[2:], group=1),
                _regex_finder("SoftLayer key", softlayer[1:], group=1),
            ),
            # A userinfo with an `@`, or SoftLayer's key in its path.
            anchors=(_anchor(rb"://[^\s/?#@]{1,256}@"), _anchor(rb"api\.softlayer\.com/")),
            before=64,
            after=512,
        ),
        _Group(
            finders=(_auth_finder,),
            anchors=(_AUTHORIZATION, _anchor(rb"bearer")),
            before=0,
            after=8192,
        ),
        # Named credentials (`password = …`, "the password is …", `API_TOKEN=…`,
        # `ibm_cloud_iam_api_key = "<44>"`): one window pass for four kinds of rule.
        _Group(
            finders=(
                _near_long_values(
                    _regex_finder("AWS secret access key", [aws_secret], group=1),
                    _rule("IBM Cloud IAM key", "ibm_cloud_iam.IbmCloudIamDetector", group=1),
                    _rule("IBM COS HMAC key", "ibm_cos_hmac.IbmCosHmacDetector", group=1),
                    _regex_finder("Cloudant credential", cloudant[:2], group=1),
                    _regex_finder("SoftLayer key", softlayer[:1], group=1),
                    gate=_one_of(long_values),
                ),
                _keyword_finder(),
                _told_finder,
                _assignment_finder,
            ),
            anchors=(_PASS, _PWD, _SECRET, _KEY, _TOKEN, _AUTH_NAME, _anchor(rb"contrase")),
            before=160,
            after=256,
            select=_named_here,
        ),
    )


def _one_of(patterns: list[re.Pattern[str]]) -> re.Pattern[str]:
    """A pattern that finds something wherever one of `patterns` would (same flags)."""
    assert len({p.flags for p in patterns}) == 1
    return re.compile("|".join(f"(?:{p.pattern})" for p in patterns), patterns[0].flags)


# What detect-secrets' URL pattern takes in a userinfo and memflow's (`finders._URL_PASSWORD`) not.
_QUOTE_OR_BRACKET = re.compile(r"[\"<>]")


def _only_with_quote_or_bracket(finder: Finder) -> Finder:
    """detect-secrets' URL rule, where it can find what memflow's misses. Its userinfo
    leaves out every character memflow's does but `"`, `<` and `>`: without one of
    those in the window, each of its passwords is one memflow's finds, with the
    same span, and a page of URLs would be read and judged twice."""

    def find(scan: _Scan, start: int, end: int, hits: Sequence[int]) -> Iterator[Span]:
        if _QUOTE_OR_BRACKET.search(scan.text, start, end) is not None:
            yield from finder(scan, start, end, hits)

    return find


# The commands that take a password as an argument (shapes._COMMANDS).
_COMMAND_NAMES = (rb"mysql", rb"mariadb", rb"sshpass", rb"redis-cli", rb"htpasswd")


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


def warm() -> None:
    """Build the rules and import what they use, once: not inside a request's scan budget."""
    _gate()
    _heuristic()
