from __future__ import annotations

import pytest
from django.db import connection

from memories import selectors, services
from memories.models import DedupeEvent, Memory
from memories.services import RememberInput


def remember(workspace, text, **kw):
    return services.memory_remember(workspace=workspace, item=RememberInput(text=text, **kw))


def test_a_new_fact_is_created(acme):
    result = remember(acme, "The staging database runs on db-staging-2.internal port 5433.")
    assert result.outcome == "created"
    memory = Memory.objects.get(pk=result.memory.pk)
    assert memory.embedding is not None and len(memory.embedding) == 384
    assert memory.lex["db-staging-2.internal"] == 1
    assert memory.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"


def test_the_same_fact_resent_strengthens_it(acme):
    first = remember(acme, "Use pnpm, not npm, in this repository.")
    again = remember(acme, "  use PNPM, not npm in this repository  ")
    assert again.outcome == "strengthened"
    assert again.memory.pk == first.memory.pk
    assert Memory.objects.filter(workspace=acme).count() == 1
    assert Memory.objects.get(pk=first.memory.pk).strength == 2
    event = DedupeEvent.objects.get(memory=first.memory)
    assert event.incoming_text == "use PNPM, not npm in this repository"


def test_an_extension_merges_and_keeps_the_old_text_as_a_tombstone(acme):
    first = remember(acme, "The deploy script lives in tools/deploy.sh")
    extended = remember(
        acme, "The deploy script lives in tools/deploy.sh and needs AWS_PROFILE=prod set first."
    )
    assert extended.outcome == "merged"
    assert extended.memory.pk == first.memory.pk
    current = Memory.objects.get(pk=first.memory.pk)
    assert current.text.endswith("set first.")
    tombstone = Memory.objects.get(superseded_by=current)
    assert tombstone.text == "The deploy script lives in tools/deploy.sh"
    assert tombstone.valid_to is not None and tombstone.valid_to >= tombstone.valid_from


def test_distinct_facts_that_look_alike_are_both_kept(acme):
    a = remember(acme, "The API server listens on port 8080 in development.")
    b = remember(acme, "The API server listens on port 8081 in development.")
    assert (a.outcome, b.outcome) == ("created", "created")
    assert Memory.objects.filter(workspace=acme, valid_to__isnull=True).count() == 2


def test_a_fragment_of_an_existing_entry_strengthens_it(acme):
    long = remember(
        acme, "Integration tests need the fake S3 server started with make s3-up before running."
    )
    short = remember(acme, "Integration tests need the fake S3 server started with make s3-up")
    assert short.outcome == "strengthened"
    assert short.memory.pk == long.memory.pk


def test_compartments_are_separate_partitions(acme):
    remember(acme, "Always run the linter before pushing.")
    other = remember(acme, "Always run the linter before pushing.", compartment="lessons")
    assert other.outcome == "created"


@pytest.mark.parametrize(
    "secret",
    [
        "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
        "pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LTEyMzQ",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "aws key AKIAIOSFODNN7EXAMPLE in config",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow",
        "slack xoxb-123456789012-abcdefghijkl",
        "xoxp-123456789012-abcdefghijkl",
        "API_KEY=f9A8s7D6f5G4h3J2k1L0qWeRtY",
        'token: "a8F3kL9qZx2Vb7Nm4Pw6Rt1Y"',
    ],
)
def test_credentials_are_refused_and_never_stored(acme, secret):
    with pytest.raises(services.SecretDetected):
        remember(acme, f"Note: {secret}")
    assert not Memory.objects.filter(workspace=acme).exists()


def test_ordinary_text_about_tokens_is_not_a_secret(acme):
    result = remember(
        acme, "The token bucket refills 10 tokens per second; password reset emails use SES."
    )
    assert result.outcome == "created"


def test_a_bulk_batch_folds_repeats_inside_itself(acme):
    results = services.memory_remember_bulk(
        workspace=acme,
        items=[
            RememberInput(text="Redis is only used as a cache here."),
            RememberInput(text="redis is only used as a cache here"),
            RememberInput(text="The frontend builds with Vite 8."),
        ],
    )
    assert [r.outcome for r in results] == ["created", "strengthened", "created"]
    assert Memory.objects.filter(workspace=acme).count() == 2
    assert results[1].memory.pk == results[0].memory.pk


def test_one_bad_item_refuses_the_whole_bulk(acme):
    with pytest.raises(services.SecretDetected):
        services.memory_remember_bulk(
            workspace=acme,
            items=[RememberInput(text="fine"), RememberInput(text="AKIAIOSFODNN7EXAMPLE")],
        )
    assert not Memory.objects.exists()


def test_term_statistics_stay_exact(acme):
    remember(acme, "alpha beta beta")
    remember(acme, "alpha gamma")
    stats = selectors.lexical_stats(workspace=acme, terms=["alpha", "beta", "gamma"])
    assert stats.docs == 2
    assert stats.df == {"alpha": 2, "beta": 1, "gamma": 1}
    assert stats.avg_length == 2.5


def test_undoing_a_merge_restores_both_texts(acme):
    first = remember(acme, "The cache TTL is configured in settings.py")
    remember(acme, "The cache TTL is configured in settings.py under CACHE_TTL_SECONDS.")
    event = DedupeEvent.objects.get(memory=first.memory, kind="merge")
    restored = services.dedupe_undo(workspace=acme, event=event)
    texts = set(
        Memory.objects.filter(workspace=acme, valid_to__isnull=True).values_list("text", flat=True)
    )
    assert texts == {
        "The cache TTL is configured in settings.py",
        "The cache TTL is configured in settings.py under CACHE_TTL_SECONDS.",
    }
    assert restored.pk != first.memory.pk


def test_containment_counts_whole_words_only(acme):
    remember(acme, "foo: parses configuration files quickly")
    other = remember(acme, "libfoo: parses configuration files quickly and safely")
    assert other.outcome == "created"


def test_a_stream_remembers_in_order_across_batches(acme):
    texts = [f"Service {i} listens on port {8000 + i} in staging." for i in range(10)]
    batches = list(
        services.memory_remember_stream(
            workspace=acme, items=(RememberInput(text=t) for t in texts), batch=4
        )
    )
    assert [len(b) for b in batches] == [4, 4, 2]
    assert [r.memory.text for b in batches for r in b] == texts
    assert Memory.objects.filter(workspace=acme).count() == 10


def test_a_bad_item_stops_the_stream_with_its_error(acme):
    items = [RememberInput(text="fine one"), RememberInput(text="AKIAIOSFODNN7EXAMPLE leaked")]
    with pytest.raises(services.SecretDetected):
        list(services.memory_remember_stream(workspace=acme, items=iter(items), batch=1))


def _pending_list_limit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW gin_pending_list_limit")
        return str(cursor.fetchone()[0])


def test_an_import_batches_index_writes_and_leaves_lookups_a_short_pending_list(acme):
    # Interactive writes (hooks, the API) keep the lexical index's pending list short…
    assert _pending_list_limit() == "64kB"
    stream = services.memory_remember_stream(
        workspace=acme,
        items=[RememberInput(text=f"widget {i} ships with firmware {i}.{i}") for i in range(70)],
        batch=64,
    )
    first = next(stream)
    # …an import batches its index writes in a long one…
    assert len(first) == 64 and _pending_list_limit() == "4MB"
    rest = [r for batch in stream for r in batch]
    # …and leaves the connection as it found it, with every entry findable.
    assert len(rest) == 6 and _pending_list_limit() == "64kB"
    hits = selectors.memory_recall(workspace=acme, query="firmware 69.69", k=3).hits
    assert hits[0].memory.text == "widget 69 ships with firmware 69.69"
