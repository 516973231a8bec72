"""The same texts, sent in one batch or one at a time, are folded the same way."""

from __future__ import annotations

from memories import services
from memories.models import Memory
from memories.services import RememberInput

# Repeats, extensions, fragments, and distinct texts that only look contained.
TEXTS = [
    "htmlmin: htmlmin is an HTML minifier that just works.",
    "python3-htmlmin: htmlmin is an HTML minifier that just works.",
    "The deploy script lives in tools/deploy.sh",
    "The deploy script lives in tools/deploy.sh and needs AWS_PROFILE=prod set first.",
    "  THE DEPLOY SCRIPT LIVES IN TOOLS/DEPLOY.SH  ",
    "Use pnpm, not npm, in this repository.",
    "use PNPM, not npm in this repository",
    "Integration tests need the fake S3 server started with make s3-up before running.",
    "Integration tests need the fake S3 server started with make s3-up",
    "The API server listens on port 8080 in development.",
    "The API server listens on port 8081 in development.",
    "php: This package is a dependency package, which depends on the latest PHP.",
    "libapache2-mod-php: This package is a dependency package, which depends on the latest PHP.",
    "foo: parses configuration files quickly",
    "libfoo: parses configuration files quickly and safely",
    "Redis is only used as a cache here.",
    "redis is only used as a cache here",
    "The frontend builds with Vite 8.",
]


def decisions(results: list[services.RememberResult]) -> list[tuple[str, int]]:
    """Each text's outcome and the index of the first text that made its entry."""
    first: dict[int, int] = {}
    out: list[tuple[str, int]] = []
    for n, result in enumerate(results):
        origin = first.setdefault(result.memory.pk, n)
        out.append((result.outcome, origin))
    return out


def test_a_batch_and_single_remembers_fold_the_same_texts(acme, evil):
    bulk = services.memory_remember_bulk(
        workspace=acme, items=[RememberInput(text=t) for t in TEXTS]
    )
    single = [services.memory_remember(workspace=evil, item=RememberInput(text=t)) for t in TEXTS]
    assert decisions(bulk) == decisions(single)
    # Only the true repeats, extensions and fragments folded.
    folded = {TEXTS[n] for n, (outcome, _) in enumerate(decisions(single)) if outcome != "created"}
    assert folded == {
        "The deploy script lives in tools/deploy.sh and needs AWS_PROFILE=prod set first.",
        "  THE DEPLOY SCRIPT LIVES IN TOOLS/DEPLOY.SH  ",
        "use PNPM, not npm in this repository",
        "Integration tests need the fake S3 server started with make s3-up",
        "redis is only used as a cache here",
    }
    for workspace in (acme, evil):
        assert Memory.objects.filter(workspace=workspace, valid_to__isnull=True).count() == 13


def test_a_joined_name_is_not_split_to_find_a_containment(acme):
    short = services.memory_remember(
        workspace=acme, item=RememberInput(text="tempest: a set of integration tests for a cloud")
    )
    longer = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="puppet-module-tempest: a set of integration tests for a cloud"),
    )
    assert (short.outcome, longer.outcome) == ("created", "created")
