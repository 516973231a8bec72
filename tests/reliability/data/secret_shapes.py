"""Labelled credential shapes and ordinary test logs, for measuring the secret filter.

The shapes follow the formats the filter's rule set documents (detect-secrets'
plugins, plus memflow's own vendor list and the four shapes of review finding
5: URLs with a password, `Authorization` headers, `password=` assignments and
sentences that tell a password). Every value is fake: FAKE or EXAMPLE marks it
wherever the format's alphabet allows, the rest comes from a fixed seed, and it
is put together at run time, so no file in the repository holds a whole key and
push protection has nothing to block.

The logs are what a test run prints (pytest, jest, npm, pip, go, cargo, docker,
CI runners), with the words that make a naive filter fire (password, token,
secret, keys, hashes, URLs) used the ordinary way.

`python tests/reliability/data/secret_shapes.py shapes|logs` prints them.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


@dataclass(frozen=True)
class Shape:
    kind: str  # the format, e.g. "github", "basic auth url", "natural language"
    text: str


class _Fake:
    """Fake values: random from one seed, marked as fake where the alphabet allows."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def chars(self, alphabet: str, n: int, mark: str = "") -> str:
        body = "".join(self.rng.choice(alphabet) for _ in range(n - len(mark)))
        cut = self.rng.randrange(len(body) + 1) if mark else 0
        return body[:cut] + mark + body[cut:]

    def alnum(self, n: int, mark: str = "FAKE") -> str:
        return self.chars(ALNUM, n, mark)

    def upper(self, n: int, mark: str = "FAKE") -> str:
        return self.chars(UPPER_DIGITS, n, mark)

    def lower(self, n: int, mark: str = "fake") -> str:
        return self.chars(LOWER_DIGITS, n, mark)

    def hex(self, n: int) -> str:
        return self.chars(HEX, n, "0000")

    def b64(self, n: int) -> str:
        return self.chars(B64, n, "FAKE")

    def urlsafe(self, n: int) -> str:
        return self.chars(URLSAFE, n, "FAKE")

    def digits(self, n: int) -> str:
        return str(self.rng.randrange(1, 10)) + self.chars(string.digits, n - 1)

    def pick(self, options: list[str]) -> str:
        return self.rng.choice(options)


def _jwt(fake: _Fake, claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return ".".join([part({"alg": "HS256", "typ": "JWT"}), part(claims), fake.urlsafe(43)])


# Passwords a person types: short, not random, known examples of weak ones.
HUMAN_PASSWORDS = [
    "hunter2",
    "S3cret!",
    "Tr0ub4dor&3",
    "P@ssw0rd2024",
    "letmein99",
    "Winter2024!",
    "qwerty123",
    "dragon88",
    "Passw0rd!",
    "correct-h0rse",
    "Summer#2023",
    "fake-Pa55",
    "admin1234",
    "Zx9!fakepw",
]

# Where a value sits: `{v}` is the credential.
CONTEXTS = [
    "{v}",
    "For the deploy, use {v} when the pipeline asks.",
    "export DEPLOY_VALUE={v}",
    '{{"value": "{v}"}}',
    "value: {v}",
    "curl -sS -d @body.json https://api.example.com/v1/items -H 'X-Value: {v}'",
]


# Adds a credential in each of the given contexts (the first two of CONTEXTS by default).
_Add = Callable[..., None]


def credential_shapes(seed: int = 5) -> list[Shape]:
    """Over 200 texts, each holding one fake credential of a known format."""
    f = _Fake(seed)
    out: list[Shape] = []

    def add(kind: str, value: str, contexts: list[str] | None = None) -> None:
        for context in contexts or CONTEXTS[:2]:
            out.append(Shape(kind, context.format(v=value)))

    _vendor_tokens(f, add)
    _private_keys(f, out)
    _url_passwords(f, add)
    _auth_headers(f, add)
    _assignments(f, add)
    _told_in_a_sentence(f, add)
    return out


def _vendor_tokens(f: _Fake, add: _Add) -> None:
    """Fixed-prefix vendor tokens, and the other vendor formats."""
    for prefix in ("ghp", "gho", "ghu", "ghs", "ghr"):
        add("github", f"{prefix}_" + f.alnum(36))
    add("github fine-grained", "github_pat_" + f.alnum(22) + "_" + f.alnum(59), CONTEXTS[:3])
    for prefix, n in (("glpat-", 20), ("gldt-", 24), ("glft-", 20), ("glsoat-", 20), ("glrt-", 20)):
        add("gitlab", prefix + f.urlsafe(n), CONTEXTS[:1])
    add("gitlab", "GR1348941" + f.urlsafe(20), CONTEXTS[:1])
    add("gitlab", "glcbt-" + f.urlsafe(24), CONTEXTS[:1])
    add("gitlab", "glimt-" + f.urlsafe(25), CONTEXTS[:1])
    add("gitlab", "glptt-" + f.urlsafe(40), CONTEXTS[:1])
    add("gitlab", "glagent-" + f.urlsafe(50), CONTEXTS[:1])
    add("gitlab", "gloas-" + f.urlsafe(64), CONTEXTS[:1])
    for prefix in ("AKIA", "ASIA", "ABIA", "ACCA", "A3TX"):
        add("aws access key id", prefix + f.upper(16, "EXAMPLE"), CONTEXTS[:2])
    for template in (
        'aws_secret_access_key = "{v}"',
        "AWS_SECRET_ACCESS_KEY='{v}'",
        'aws:\n  secret_key: "{v}"',
        '{{"aws_secret_key": "{v}"}}',
    ):
        add("aws secret access key", f.b64(40), [template])
    add("artifactory", "AKC" + f.alnum(70), CONTEXTS[:2])
    add("artifactory", "AP" + f.pick(list("0123456789ABCDEF")) + f.alnum(30), CONTEXTS[:2])
    for template in (
        "DefaultEndpointsProtocol=https;AccountName=fakeacct;AccountKey={v};EndpointSuffix=core.windows.net",
        "AZURE_STORAGE_CONNECTION_STRING=AccountName=devstore;AccountKey={v}",
        "conn = 'AccountKey={v}'",
    ):
        add("azure storage key", f.b64(86) + "==", [template])
    add("cloudant", f"https://fakeacct:{f.hex(64)}@fakeacct.cloudant.com", CONTEXTS[:1])
    add("cloudant", f"https://fakeacct:{f.chars(string.ascii_lowercase, 24)}@fakeacct.cloudant.com")
    add("cloudant", f.hex(64), ['cloudant_password = "{v}"'])
    for _ in range(3):
        token = f.pick(list("MNO")) + f.urlsafe(23) + "." + f.urlsafe(6) + "." + f.urlsafe(27)
        add("discord bot token", token, CONTEXTS[:1])
    add("ibm cloud iam", f.urlsafe(44), ['ibm_cloud_iam_api_key = "{v}"', "IAM_APIKEY: {v}"])
    add("ibm cloud iam", f.urlsafe(44), ["cloud-iam-token='{v}'"])
    add("ibm cos hmac", f.hex(48), ['cos_hmac_secret_access_key = "{v}"', "secret_access_key: {v}"])
    add("mailchimp", f.lower(32) + "-us" + str(f.rng.randrange(1, 21)), CONTEXTS[:3])
    for token in (
        "npm_" + f.alnum(36),
        f.hex(8) + "-" + f.hex(4) + "-" + f.hex(4) + "-" + f.hex(4) + "-" + f.hex(12),
    ):
        add("npm", token, ["//registry.npmjs.org/:_authToken={v}"])
    add("npm", "npm_" + f.alnum(36), ["//npm.pkg.github.com/:_authToken= {v}"])
    add("openai", "sk-" + f.alnum(20) + "T3BlbkFJ" + f.alnum(20), CONTEXTS[:2])
    add("openai", "sk-proj-" + f.urlsafe(48), CONTEXTS[:2])
    add("openai", "sk-" + f.alnum(48), CONTEXTS[:1])
    add("anthropic", "sk-ant-api03-" + f.urlsafe(93) + "AA", CONTEXTS[:3])
    add("pypi", "pypi-AgEIcHlwaS5vcmc" + f.urlsafe(120), CONTEXTS[:2])
    add("pypi", "pypi-AgENdGVzdC5weXBpLm9yZw" + f.urlsafe(100), CONTEXTS[:1])
    add("pypi", "pypi-AgEI" + f.urlsafe(60), ["password = {v}"])
    add("sendgrid", "SG." + f.urlsafe(22) + "." + f.urlsafe(43), CONTEXTS[:3])
    for prefix in ("xoxb", "xoxp", "xoxa", "xoxo", "xoxs", "xoxr"):
        token = f"{prefix}-{f.digits(11)}-{f.digits(12)}-{f.lower(24)}"
        add("slack", token, CONTEXTS[:1])
    add("slack", "xoxb-" + f.alnum(40), CONTEXTS[:1])
    add(
        "slack webhook",
        f"https://hooks.slack.com/services/T{f.upper(8)}/B{f.upper(10)}/{f.alnum(24)}",
        CONTEXTS[:2],
    )
    add("softlayer", f.lower(64), ['softlayer_api_key = "{v}"', "SL_API_KEY: {v}"])
    add("softlayer", f"https://api.softlayer.com/soap/v3/{f.lower(64)}", CONTEXTS[:1])
    add("square", "sq0csp-" + f.urlsafe(43), CONTEXTS[:2])
    for prefix in ("sk_live_", "rk_live_"):
        add("stripe", prefix + f.alnum(24), CONTEXTS[:2])
    for _ in range(3):
        add("telegram", f.digits(10) + ":" + f.urlsafe(35), CONTEXTS[:1])
    for prefix in ("AC", "SK"):
        add("twilio", prefix + f.chars(LOWER_DIGITS, 32, "fake"), CONTEXTS[:2])
    add("memflow", "mf_" + f.urlsafe(43), CONTEXTS[:3])
    add("google api key", "AIza" + f.urlsafe(35), CONTEXTS[:3])


def _private_keys(f: _Fake, out: list[Shape]) -> None:
    """PEM and other private key blocks."""
    for header in (
        "RSA PRIVATE KEY",
        "DSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
        "SSH2 ENCRYPTED PRIVATE KEY",
    ):
        body = "\n".join(f.b64(64) for _ in range(3))
        out.append(
            Shape("private key", f"-----BEGIN {header}-----\n{body}\n-----END {header}-----")
        )
    out.append(Shape("private key", "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\n"))


def _url_passwords(f: _Fake, add: _Add) -> None:
    """URLs with a password (review finding 5)."""
    for scheme, host in (
        ("postgres", "db.internal:5432/app"),
        ("postgresql", "10.0.0.5/analytics"),
        ("mysql", "mysql.example.com:3306/shop"),
        ("mongodb+srv", "cluster0.example.mongodb.net/test"),
        ("redis", "cache.example.com:6379/0"),
        ("amqp", "rabbit.example.com:5672/vhost"),
        ("https", "git.example.com/org/repo.git"),
        ("ftp", "files.example.com/pub"),
        ("smtp", "mail.example.com:587"),
        ("ldap", "ldap.example.com/dc=example,dc=com"),
    ):
        password = f.pick(HUMAN_PASSWORDS[:9]).replace("@", "%40").replace("#", "%23")
        add(
            "basic auth url",
            f"{scheme}://fakeuser:{password}@{host}",
            ["{v}", "DATABASE_URL={v}", "the staging db lives at {v} for now"][
                : 3 if scheme.startswith("postgres") else 1
            ],
        )
    add("basic auth url", "postgres://user:pass@host/db", ["{v}", "connect with {v}"])


def _auth_headers(f: _Fake, add: _Add) -> None:
    """Authorization headers (review finding 5)."""
    jwt = _jwt(f, {"sub": "fake-user-0001", "name": "Example Only", "iat": 1700000000})
    for template in (
        "Authorization: Bearer {v}",
        "curl -H 'Authorization: Bearer {v}' https://api.example.com/me",
        '{{"headers": {{"Authorization": "Bearer {v}"}}}}',
        "the session token is {v}",
        "{v}",
    ):
        add("jwt", jwt, [template])
    add(
        "jwt",
        _jwt(f, {"iss": "example.test", "exp": 1800000000, "scope": "read"}),
        ["Cookie: session={v}"],
    )
    for template in (
        "Authorization: Bearer {v}",
        'headers = {{"Authorization": "Bearer {v}"}}',
        '-H "authorization: bearer {v}"',
    ):
        add("bearer token", f.urlsafe(40), [template])
    basic = base64.b64encode(f"fakeuser:{f.pick(HUMAN_PASSWORDS)}".encode()).decode()
    add(
        "basic auth header",
        basic,
        ["Authorization: Basic {v}", "curl -H 'Authorization: Basic {v}' http://localhost:8080/"],
    )


def _assignments(f: _Fake, add: _Add) -> None:
    """Password and secret assignments (review finding 5)."""
    assignments = [
        "password={v}",
        "PASSWORD: {v}",
        'password = "{v}"',
        '{{"password": "{v}"}}',
        "db_password={v}",
        "DATABASE_PASSWORD='{v}'",
        "passwd: {v}",
        "pwd={v}",
        "mysql -u root --password={v} shop",
        'admin_password := "{v}"',
        "config.password = '{v}'",
        '  password: "{v}"',
        "secret={v}",
        "CLIENT_SECRET={v}",
        "contraseña: {v}",
        "db_pass={v}",
        "key_pass: '{v}'",
    ]
    for template in assignments:
        add("password assignment", f.pick(HUMAN_PASSWORDS), [template])
    for name in (
        "api_key",
        "apikey",
        "auth_key",
        "service_key",
        "account_key",
        "db_key",
        "database_key",
        "priv_key",
        "private_key",
        "client_key",
        "secret_key",
        "client_secret",
    ):
        add("key assignment", f.alnum(32), [f'{name} = "{{v}}"', f"{name.upper()}={{v}}"])
    for name in ("GITHUB_TOKEN", "auth_token", "access_key", "X_API_TOKEN", "refresh-token"):
        add("token assignment", f.alnum(40), [f"{name}={{v}}"])


def _told_in_a_sentence(f: _Fake, add: _Add) -> None:
    """A password told in a sentence (review finding 5)."""
    sentences = [
        "the db password is {v}",
        "my password: {v}",
        "pwd is {v}",
        "The password for the staging database is {v}.",
        "FYI our admin password is {v}, please rotate it after the demo",
        "remember that the root password is {v}",
        "the wifi passphrase is {v}",
        "password for bob@example.com is {v}",
        "set the password to {v} for now",
        "the new password will be {v}",
        "login: admin / password: {v}",
        "Password = {v}",
        "db pwd: {v}",
        "the password is `{v}`",
        'the password is "{v}"',
        "log in with password {v} and change it",
        "Jenkins password was changed to {v} yesterday",
        "the vpn passcode is {v}",
        "his password is still {v}",
        "postgres password: {v} (user postgres)",
    ]
    for template in sentences:
        add("natural language", f.pick(HUMAN_PASSWORDS), [template])
    for template in (
        "the api key is {v}",
        "our client secret is {v}",
        "the deploy token is {v}",
        "secret key: {v}",
    ):
        add("natural language", f.alnum(32), [template])


# --- ordinary test logs ------------------------------------------------------------------------

_MODULES = ["auth", "api", "billing", "sessions", "tokens", "users", "search", "export", "secrets"]
_TESTS = [
    "test_login_with_wrong_password",
    "test_password_reset_sends_mail",
    "test_token_refresh_rotates_the_token",
    "test_expired_token_is_rejected",
    "test_api_key_is_stored_hashed",
    "test_secret_rotation_keeps_old_key_for_an_hour",
    "test_pagination_cursor",
    "test_private_key_is_never_logged",
    "test_export_csv",
    "test_password_is_required",
    "test_auth_header_missing",
    "test_search_ranks_exact_matches_first",
]


def _pytest_log(f: _Fake) -> list[str]:
    module = f.pick(_MODULES)
    items = f.rng.randrange(40, 900)
    lines = [
        "============================= test session starts ==============================",
        f"platform linux -- Python 3.11.{f.rng.randrange(2, 10)}, pytest-8.3.{f.rng.randrange(5)}, pluggy-1.5.0",
        f"cachedir: .pytest_cache\nrootdir: /home/runner/work/{module}/{module}",
        "configfile: pyproject.toml",
        f"plugins: django-4.9.0, hypothesis-6.112.{f.rng.randrange(9)}, anyio-4.4.0, cov-5.0.0",
        f"collected {items} items",
        "",
    ]
    percent = 0
    for test in f.rng.sample(_TESTS, 6):
        percent = min(100, percent + f.rng.randrange(5, 20))
        outcome = f.pick(["PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED (needs redis)"])
        lines.append(f"tests/{module}/test_{module}.py::{test} {outcome} [{percent:3d}%]")
    lines += [
        "",
        "=================================== FAILURES ===================================",
        "________________________ test_login_with_wrong_password ________________________",
        "",
        "client = <django.test.client.Client object at 0x7f" + f.hex(10) + ">",
        "",
        "    def test_login_with_wrong_password(client):",
        '        response = client.post("/login/", {"username": "alice", "password": password})',
        '        token = response.json().get("token")',
        ">       assert response.status_code == 401",
        "E       assert 403 == 401",
        "E        +  where 403 = <HttpResponseForbidden status_code=403>.status_code",
        "",
        f"tests/{module}/test_{module}.py:{f.rng.randrange(10, 400)}: AssertionError",
        "----------------------------- Captured log call ------------------------------",
        "WARNING  django.request:log.py:241 Forbidden: /login/",
        "INFO     auth.views:views.py:88 password check failed for user alice (attempt 3)",
        "DEBUG    auth.tokens:tokens.py:52 token expired at 2024-05-01T10:00:00Z; issuing a new one",
        'DEBUG    urllib3.connectionpool:connectionpool.py:546 https://api.example.com:443 "POST /oauth/token HTTP/1.1" 200 512',
        "=========================== short test summary info ============================",
        f"FAILED tests/{module}/test_{module}.py::test_login_with_wrong_password - assert 403 == 401",
        f"========== 1 failed, {items - 1} passed, 3 skipped, 2 warnings in {f.rng.uniform(2, 90):.2f}s ==========",
    ]
    if f.rng.random() < 0.5:
        lines += [
            'E   django.db.utils.OperationalError: connection to server at "localhost" (127.0.0.1), port 5432 failed: FATAL:  password authentication failed for user "ci"',
            "    password = getpass.getpass(prompt='Password: ')",
            '    SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]',
            "    api_key = settings.API_KEY",
            "    if not password:",
            '        raise ValueError("password is required")',
        ]
    return lines


def _npm_log(f: _Fake) -> list[str]:
    added = f.rng.randrange(200, 2000)
    lines = [
        "npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory.",
        "npm WARN deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported",
        f"added {added} packages, and audited {added + 1} packages in {f.rng.randrange(5, 90)}s",
        f"{f.rng.randrange(50, 300)} packages are looking for funding",
        "  run `npm fund` for details",
        f"{f.rng.randrange(0, 9)} moderate severity vulnerabilities",
        "npm notice New minor version of npm available! 10.2.4 -> 10.8.3",
        "npm notice Changelog: https://github.com/npm/cli/releases/tag/v10.8.3",
        "",
        "> web@1.4.0 test",
        "> jest --coverage --ci",
        "",
        f" PASS  src/auth/token.test.ts ({f.rng.uniform(1, 9):.3f} s)",
        "  Auth tokens",
        f"    ✓ rejects an expired token ({f.rng.randrange(1, 40)} ms)",
        f"    ✓ refreshes the token before it expires ({f.rng.randrange(1, 40)} ms)",
        "    ✓ never stores the password in localStorage (3 ms)",
        " FAIL  src/api/client.test.ts",
        "  ● api client › sends the auth header",  # noqa: RUF001 (jest prints it)
        "",
        "    expect(received).toBe(expected) // Object.is equality",
        "",
        '    Expected: "Bearer <token>"',
        "    Received: undefined",
        "",
        "      12 |   const headers = buildHeaders({ token: process.env.API_TOKEN });",
        "    > 13 |   expect(headers.Authorization).toBe(`Bearer ${token}`);",
        "         |                                 ^",
        f'  "integrity": "sha512-{f.b64(86)}=="',
        '  "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz"',
        "npm ERR! code E401",
        "npm ERR! Unable to authenticate, your authentication token seems to be invalid.",
        "npm ERR! To correct this please try logging in again with:",
        "npm ERR!     npm login",
        f"npm ERR! A complete log of this run can be found in: /home/runner/.npm/_logs/2024-06-0{f.rng.randrange(1, 9)}T10_{f.rng.randrange(10, 59)}_00_123Z-debug-0.log",
        f"Test Suites: 1 failed, {f.rng.randrange(5, 60)} passed",
        f"Tests:       1 failed, {f.rng.randrange(50, 600)} passed",
        f"Time:        {f.rng.uniform(3, 60):.3f} s",
    ]
    return lines


def _pip_log(f: _Fake) -> list[str]:
    return [
        "Collecting cryptography>=42 (from -r requirements.txt (line 4))",
        f"  Downloading cryptography-43.0.{f.rng.randrange(4)}-cp39-abi3-manylinux_2_28_x86_64.whl.metadata (5.4 kB)",
        "Collecting django-environ (from -r requirements.txt (line 7))",
        f"  Using cached https://files.pythonhosted.org/packages/{f.hex(2)}/{f.hex(2)}/{f.hex(60)}/django_environ-0.11.2-py2.py3-none-any.whl (19 kB)",
        f"    --hash=sha256:{f.hex(64)}",
        "Requirement already satisfied: keyring in ./.venv/lib/python3.11/site-packages (25.2.1)",
        "Successfully installed cryptography-43.0.1 django-environ-0.11.2 passlib-1.7.4 python-jose-3.3.0",
        "WARNING: pip is configured with locations that require TLS/SSL, however the ssl module is not available.",
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken",
        "Looking in indexes: https://pypi.org/simple, https://pkgs.example.com/simple",
        "User for pkgs.example.com: ",
        "WARNING: 401 Error, Credentials not correct for https://pkgs.example.com/simple/",
    ]


def _go_cargo_log(f: _Fake) -> list[str]:
    return [
        "=== RUN   TestPasswordHash",
        f"--- PASS: TestPasswordHash (0.{f.rng.randrange(10, 99)}s)",
        "=== RUN   TestTokenSigner/rejects_tampered_token",
        f'    signer_test.go:{f.rng.randrange(20, 200)}: got err = "signature is invalid", want nil',
        "--- FAIL: TestTokenSigner (0.00s)",
        f"FAIL	github.com/acme/auth/token	0.{f.rng.randrange(10, 99)}s",
        "ok  	github.com/acme/auth/session	(cached)",
        f"   Compiling serde v1.0.{f.rng.randrange(150, 215)}",
        "   Compiling ring v0.17.8",
        "   Compiling secrecy v0.8.0",
        "   Compiling argon2 v0.5.3",
        f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {f.rng.uniform(10, 90):.2f}s",
        f"     Running unittests src/lib.rs (target/debug/deps/vault_client-{f.hex(16)})",
        "test crypto::tests::derives_the_same_key_twice ... ok",
        "test config::tests::password_from_env_is_used ... ok",
        "test config::tests::missing_secret_is_an_error ... FAILED",
        "thread 'config::tests::missing_secret_is_an_error' panicked at src/config.rs:88:9:",
        "assertion `left == right` failed: secret must come from VAULT_TOKEN",
        f"test result: FAILED. {f.rng.randrange(10, 200)} passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
    ]


def _ci_log(f: _Fake) -> list[str]:
    sha = f.hex(40)
    return [
        f"2024-06-0{f.rng.randrange(1, 9)}T10:{f.rng.randrange(10, 59)}:03.1234567Z ##[group]Run actions/checkout@v4",
        "  with:",
        "    repository: acme/web",
        "    token: ***",
        "    ssh-strict: true",
        "    persist-credentials: true",
        "##[endgroup]",
        f"HEAD is now at {sha[:7]} Rotate the token signing key monthly",
        f"Syncing repository: acme/web ({sha})",
        "env:",
        "  PWD: /home/runner/work/web/web",
        "  HOME: /home/runner",
        "  GITHUB_TOKEN: ***",
        "  NODE_AUTH_TOKEN: XXXXX-XXXXX-XXXXX-XXXXX",
        "  DATABASE_URL: postgres://localhost:5432/test",
        "  DJANGO_SECRET_KEY: ${{ secrets.DJANGO_SECRET_KEY }}",
        f"Step {f.rng.randrange(1, 9)}/12 : RUN pip install --no-cache-dir -r requirements.txt",
        f" ---> Running in {f.hex(12)}",
        f" ---> {f.hex(12)}",
        f"Successfully built {f.hex(12)}",
        f"Successfully tagged registry.example.com/acme/web:{sha[:12]}",
        f"digest: sha256:{f.hex(64)} size: 2417",
        "Login Succeeded",
        "WARNING! Your password will be stored unencrypted in /home/runner/.docker/config.json.",
        "Configure a credential helper to remove this warning. See",
        "https://docs.docker.com/engine/reference/commandline/login/#credential-stores",
        f"request id {f.hex(8)}-{f.hex(4)}-{f.hex(4)}-{f.hex(4)}-{f.hex(12)} took {f.rng.randrange(3, 900)}ms",
        "ssh: Warning: Permanently added 'github.com' (ED25519) to the list of known hosts.",
        "password_validators: 4 configured (min length 12)",
        "Secret scanning: 0 secrets found in 3 files",
    ]


def ordinary_logs(count: int = 300, seed: int = 11) -> list[str]:
    """`count` logs of a test run each, as CI would keep them (none holds a credential)."""
    f = _Fake(seed)
    makers = [_pytest_log, _npm_log, _pip_log, _go_cargo_log, _ci_log]
    logs = []
    for _ in range(count):
        parts = f.rng.sample(makers, f.rng.randrange(1, 4))
        logs.append("\n".join(line for maker in parts for line in maker(f)))
    return logs


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "shapes"
    if what == "shapes":
        for shape in credential_shapes():
            print(f"{shape.kind}\t{json.dumps(shape.text)}")
    else:
        print("\n\n".join(ordinary_logs()))
