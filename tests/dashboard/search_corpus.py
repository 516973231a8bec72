"""A workspace's worth of everyday engineering notes, for the search tests: four
mention partitions, and a few answer questions worded differently from them."""

from __future__ import annotations

PARTITION_NOTES = [
    "The events table is partitioned by month; create next month's partition before the 1st",
    "Kafka topic orders has 12 partitions; consumers must not exceed the partition count",
    "Disk partition /dev/sda2 holds the Postgres data directory",
    "Dropping an old partition is instant, unlike DELETE on the parent table",
]

# (question worded differently, the note that answers it)
PARAPHRASES = [
    ("where are the nightly database dumps stored", "Backups of the database go to s3://acme-backups/nightly/ every night at 02:00"),
    ("how do I keep secret keys out of git", "Secrets come from Vault, never from environment files in the repo"),
    ("who should I ask about billing problems", "Invoices and payment issues are owned by Dana on the finance team"),
    ("when do we eat together as a team", "Team lunch is on Fridays at noon"),
]  # fmt: skip

OTHER_NOTES = [
    "The CI pipeline runs on GitHub Actions with a matrix of Python 3.11 and 3.12",
    "Staging deploys happen automatically when main is green",
    "Feature flags live in LaunchDarkly; clean them up after rollout",
    "The API rate limit is 100 requests per minute per key",
    "Use UTC everywhere; the frontend converts to local time",
    "Redis is only a cache here; never store sessions in it",
    "The mobile app talks to the v2 API only",
    "Error tracking goes to Sentry, project acme-web",
    "Alembic migrations were replaced by Django migrations in 2024",
    "The search index is rebuilt every Sunday night",
    "The design system's colours are defined in tokens.json",
    "Load tests use k6 scripts under perf/",
    "The on-call rotation changes every Monday at 10:00",
    "Logs are shipped to Loki and kept for 30 days",
    "Prefer small pull requests; one reviewer is enough for docs",
    "The Docker base image is python:3.12-slim",
    "Celery was removed; background jobs run in django-q2",
    "Timeouts for outbound HTTP calls are 5 seconds by default",
    "The marketing site is a separate Next.js repository",
    "Customer data exports are zipped CSV files, emailed as a link",
    "The tenant id is carried in every table as workspace_id",
    "Screenshots in bug reports help the triage a lot",
    "The release notes are written in CHANGELOG.md by the release captain",
    "GraphQL was evaluated and rejected in favour of REST",
    "The payment provider is Stripe, in test mode on staging",
    "Email is sent through Postmark with a shared template layout",
    "Image uploads are resized by a Lambda function",
    "Two-factor authentication is required for all admin users",
    "The data warehouse is BigQuery, loaded nightly by Airbyte",
    "Frontend tests run with Vitest and Playwright",
    "Database connections go through PgBouncer in transaction mode",
    "Cron jobs are defined in deploy/cron.yaml",
    "The public status page is hosted on Statuspage",
    "Dependency updates are batched weekly by Renovate",
    "Translations are managed in Crowdin",
    "Read replicas serve the reporting endpoints",
    "Max upload size is 25 MB",
    "Old feature branches are deleted after merge",
    "The analytics events schema is versioned in schemas/events/",
    "Onboarding docs live in the wiki under Engineering/Start",
]


def all_notes() -> list[str]:
    return [*PARTITION_NOTES, *(answer for _, answer in PARAPHRASES), *OTHER_NOTES]
