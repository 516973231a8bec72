"""A wider labelled set: the credential shapes review #33 found kept (Azure SAS and
client secrets, Discord tokens, Docker's `auth`, kubeconfig's `client-key-data`,
`curl -u user:pass`, `mysql -p…`), more vendor formats (gitleaks' rule list names
them), key pairs whose secret only its id gives away, and look-alikes: ordinary
text shaped like a credential, which must pass (the README's own `DATABASE_URL`
example among them).

Every value is fake and put together at run time, as in `secret_shapes.py`.
`python tests/reliability/data/secret_shapes_wider.py shapes|lookalikes` prints them.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from secret_shapes import (
    ALNUM,
    LOWER_DIGITS,
    URLSAFE,
    Shape,
    _Fake,
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def wider_shapes(seed: int = 33) -> list[Shape]:
    """Texts each holding one fake credential, of the formats review #33 found missed and more."""
    f = _Fake(seed)
    return [*_cloud(f), *_chat_and_vendors(f), *_command_lines(f), *_pairs(f)]


def _cloud(f: _Fake) -> list[Shape]:
    sig = f.b64(43).replace("+", "%2B").replace("/", "%2F") + "%3D"
    sas = f"sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupiytfx&se=2026-12-31T00:00:00Z&spr=https&sig={sig}"
    client_secret = f.chars(URLSAFE, 3) + "8Q~" + f.chars(ALNUM + "_~.-", 34, "FAKE")
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + f.b64(64) + "\n-----END RSA PRIVATE KEY-----\n"
    docker = _b64(f"fakeuser:{f.alnum(20)}")
    return [
        Shape("azure sas", f"https://fakeacct.blob.core.windows.net/backups?{sas}"),
        Shape("azure sas", f"AZURE_STORAGE_SAS_TOKEN='?{sas}'"),
        Shape(
            "azure service bus",
            "Endpoint=sb://fake-ns.servicebus.windows.net/;SharedAccessKeyName="
            f"RootManageSharedAccessKey;SharedAccessKey={f.b64(43)}=",
        ),
        Shape("azure client secret", f"AZURE_CLIENT_SECRET={client_secret}"),
        Shape("azure client secret", f'{{"clientSecret": "{client_secret}"}}'),
        Shape("azure client secret", f"the app's secret value is {client_secret} (expires 2027)"),
        Shape(
            "docker auth", json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": docker}}})
        ),
        Shape("docker auth", f'"auth": "{docker}"'),
        Shape(
            "kubeconfig client key",
            f"users:\n- name: fake-admin\n  user:\n    client-certificate-data: {f.b64(60)}\n"
            f"    client-key-data: {_b64(pem)}\n",
        ),
        Shape("kubeconfig client key", f"client-key-data: {_b64(pem)}"),
        Shape(
            "gcp service account",
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "fake-project",
                    "private_key_id": f.hex(40),
                    "private_key": pem,
                    "client_email": "fake@fake-project.iam.gserviceaccount.com",
                }
            ),
        ),
    ]


def _chat_and_vendors(f: _Fake) -> list[Shape]:
    discord_new = "MTE" + f.urlsafe(23) + "." + f.urlsafe(6) + "." + f.urlsafe(38)
    discord_old = "ODk" + f.urlsafe(21) + "." + f.urlsafe(6) + "." + f.urlsafe(27)
    vendors = [
        ("hugging face", "hf_" + f.chars(ALNUM, 34, "FAKE")),
        ("digitalocean", "dop_v1_" + f.hex(64)),
        ("shopify", "shpat_" + f.hex(32)),
        ("atlassian", "ATATT3xFfGF0" + f.urlsafe(180)),
        ("hashicorp vault", "hvs." + f.urlsafe(90)),
        ("doppler", "dp.st.prd." + f.alnum(43)),
        ("databricks", "dapi" + f.hex(32)),
        ("linear", "lin_api_" + f.alnum(40)),
        ("postman", "PMAK-" + f.hex(24) + "-" + f.hex(34)),
        ("new relic", "NRAK-" + f.upper(27)),
        ("age", "AGE-SECRET-KEY-1" + f.chars("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        ("stripe webhook", "whsec_" + f.alnum(32)),
        ("slack app token", "xapp-1-A" + f.upper(10) + "-" + f.digits(13) + "-" + f.hex(64)),
        ("sentry", "sntrys_" + f.urlsafe(60)),
        ("grafana", "glsa_" + f.alnum(32) + "_" + f.hex(8)),
        ("supabase", "sbp_" + f.hex(40)),
        ("figma", "figd_" + f.urlsafe(40)),
    ]
    return [
        Shape("discord token", f"DISCORD_TOKEN={discord_new}"),
        Shape("discord token", f"client.run('{discord_old}')"),
        Shape("discord token", f"my bot token: {discord_new}"),
        Shape(
            "discord webhook",
            f"https://discord.com/api/webhooks/{f.digits(18)}/{f.urlsafe(68)}",
        ),
        *(
            Shape(kind, f"{kind.upper().replace(' ', '_')}_TOKEN_VALUE {value}")
            for kind, value in vendors
        ),
    ]


def _command_lines(f: _Fake) -> list[Shape]:
    word = f.pick(["S3cret!x", "Tr0ub4dor", "hunter2x9", "fake-Pa55w0rd", "Winter2024"])
    return [
        Shape("curl -u", f"curl -u fakeuser:{word} https://api.example.com/v1/me"),
        Shape("curl -u", f"curl -sS --user 'deploy:{word}' -X POST https://ci.example.com/job"),
        Shape("curl -u", f'curl -u "admin:{f.alnum(16)}" http://localhost:9200/_cat/indices'),
        Shape("curl -u", f"wget --user=fakeuser --password={word} https://files.example.com/a.tgz"),
        Shape("mysql -p", f"mysql -u root -p{word} shop < dump.sql"),
        Shape("mysql -p", f"mysqldump -ufakeuser -p'{word}' --all-databases > all.sql"),
        Shape("mysql -p", f"mariadb -h db.internal -u app -p{word}"),
        Shape("sshpass", f"sshpass -p '{word}' ssh deploy@10.0.0.7"),
        Shape("redis-cli -a", f"redis-cli -h cache.internal -a {word} ping"),
        Shape("htpasswd", f"htpasswd -b -c /etc/nginx/.htpasswd fakeuser {word}"),
    ]


def _pairs(f: _Fake) -> list[Shape]:
    """Secrets no rule knows alone: only the id beside them gives them away."""
    aws_id = "AKIA" + f.upper(16, "EXAMPLE")
    secret = f.chars(ALNUM + "+/", 40, "FAKE")
    return [
        Shape("aws key pair", f"{aws_id} {secret}"),
        Shape("aws key pair", f"key: {aws_id}\nsecret: {secret}"),
        Shape("aws key pair", f"[default]\naws_access_key_id = {aws_id}\nsecret = {secret}\n"),
    ]


def look_alikes(seed: int = 34) -> list[str]:
    """Ordinary text shaped like a credential: none should be refused."""
    f = _Fake(seed)
    sha = f.hex(40)
    return [
        # README.md's own example, and other documented placeholders
        "`DATABASE_URL=postgres://user:password@host:5432/dbname` — no embedded server",
        "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/NAME",
        "redis://:${REDIS_PASSWORD}@cache:6379/0",
        "postgres://app:$(cat /run/secrets/db)@db/app",
        "mysql://root:<password>@localhost/test",
        # hashes, ids and versions that look random
        f"commit {sha}",
        f"sha256:{f.hex(64)}",
        f"Successfully built {f.hex(12)}",
        f"integrity sha512-{f.b64(86)}==",
        f"request-id: {f.hex(8)}-{f.hex(4)}-{f.hex(4)}-{f.hex(4)}-{f.hex(12)}",
        f"docker pull ghcr.io/example/app@sha256:{f.hex(64)}",
        f"git checkout -b fix/{f.chars(LOWER_DIGITS, 8)}",
        'ETag: W/"5e15153d-120f"',
        # commands that look like credential flags
        'curl -u "$USER:$TOKEN" https://api.example.com',
        "curl -u ${GITHUB_USER}:${GITHUB_TOKEN} https://api.github.com/user",
        "curl -u user: https://example.com/public",
        "mysql -u root -p shop   # prompts for the password",
        "mysql -p -u root",
        "pip install -U requests",
        "git push -u origin main",
        "sort -u names.txt | wc -l",
        "ssh -p 2222 deploy@example.com",
        "docker run -p 8080:80 nginx",
        "tar -xzf backup.tgz -C /tmp",
        # words around credentials, no value
        "password: ********",
        "Set the password with `memflow passwd`; it is never stored in plain text.",
        "token = os.environ['API_TOKEN']",
        "secret_key = settings.SECRET_KEY",
        "the auth header is missing",
        '"auth": "oauth2"',
        '"auth": {"type": "bearer"}',
        "client-key-data: REDACTED",
        "AZURE_CLIENT_SECRET=${{ secrets.AZURE_CLIENT_SECRET }}",
        "sig=verified signature of the release",
        "?page=2&sort=desc&sig=abc",
        # code and logs
        "assert response.status_code == 401  # wrong password",
        "for key, value in os.environ.items():",
        "KEY_COUNT=42",
        "MAX_TOKENS=4096",
        "CACHE_KEY=user-profile-v2",
        "LOG_LEVEL=debug\nPORT=8000\nWORKERS=4",
        f"build {f.urlsafe(6)}.{f.urlsafe(6)}.{f.urlsafe(6)} done",
        "version 1.2.3.4567890",
        "AKIA is how AWS access key ids start",
        "-----BEGIN CERTIFICATE-----",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC fake@laptop",
        "hf_hub_download(repo_id='org/model')",
        f"eyJhbGciOiJIUzI1NiJ9 is only a header ({f.alnum(8)})",
    ]


if __name__ == "__main__":
    if sys.argv[1:] == ["lookalikes"]:
        print("\n---\n".join(look_alikes()))
    else:
        for shape in wider_shapes():
            print(f"{shape.kind}: {shape.text}")
