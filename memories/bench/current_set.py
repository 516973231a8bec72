"""The labelled set of `memflow bench current`: decisions that change.

Written, with its split, before the currency adjustment was tuned; the
held-out split is never looked at while tuning (the bench prints it only
with `--held-out`).

Rules (fixed):
- a subject is a thing a team decides once and may change later (its package
  manager, its database, its deploy target...), with a noun phrase, a list
  of values and the questions a person asks about it;
- each case takes one subject, an old value and a new value (the next value
  in the subject's list, so every value is both old and new once), one
  wording of the old decision, one wording of the change and one question,
  each chosen by the case's number (no randomness: the set is the same on
  every run);
- the change is worded in one of CHANGE_WORDINGS: some say the old value is
  gone, some only state the new one ("We use pnpm for packages." after "We use
  npm for packages."), as people write them;
- about half the old decisions are captured prompts (source `hook`: what the
  user typed), the rest are remembered by the model; every change is
  remembered by the model, or typed by the user in one in four cases;
- every other subject's decisions are in the same workspace (the
  distractors), so a subject's question competes with the whole library;
- the split: a subject is held out when the first hex digit of its name's
  sha256 is below 5 (about a third of them); its cases are never run while tuning.

A case is right ("current first") when the change ranks above the old
decision in the recall, or the old decision is absent and the change present.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Subject:
    name: str
    phrase: str  # "the package manager"
    values: tuple[str, ...]
    questions: tuple[str, ...]


SUBJECTS = (
    Subject(
        "package manager",
        "our package manager",
        ("npm", "pnpm", "yarn"),
        ("which package manager do we use?", "how do I install the dependencies?"),
    ),
    Subject(
        "database",
        "the main database",
        ("PostgreSQL", "MySQL", "SQLite"),
        ("what database does the app store its data in?", "which database do we run?"),
    ),
    Subject(
        "deploy target",
        "production deploys",
        ("Heroku", "Fly.io", "a Kubernetes cluster"),
        ("where do we deploy production?", "what do production deploys run on?"),
    ),
    Subject(
        "CI service",
        "continuous integration",
        ("GitHub Actions", "GitLab CI", "Jenkins"),
        ("which CI service runs our tests?", "where does CI run?"),
    ),
    Subject(
        "test runner",
        "the test runner",
        ("pytest", "unittest", "nose2"),
        ("how do we run the tests?", "which test runner do we use?"),
    ),
    Subject(
        "formatter",
        "code formatting",
        ("black", "ruff format", "yapf"),
        ("which formatter do we use?", "how is the code formatted?"),
    ),
    Subject(
        "branch",
        "the release branch",
        ("main", "release", "stable"),
        ("which branch do releases come from?", "what is the release branch?"),
    ),
    Subject(
        "python version",
        "the Python version",
        ("Python 3.10", "Python 3.11", "Python 3.12"),
        ("which Python version do we target?", "what Python do we run on?"),
    ),
    Subject(
        "node version",
        "the Node.js version",
        ("Node 18", "Node 20", "Node 22"),
        ("which Node version do we use?", "what Node.js version is required?"),
    ),
    Subject(
        "queue",
        "background jobs",
        ("Celery", "RQ", "django-q2"),
        ("what runs our background jobs?", "which task queue do we use?"),
    ),
    Subject(
        "cache",
        "the cache",
        ("Redis", "Memcached", "the database cache"),
        ("what do we use for caching?", "which cache backend is configured?"),
    ),
    Subject(
        "logging service",
        "log shipping",
        ("Datadog", "Loki", "Papertrail"),
        ("where do our logs go?", "which logging service do we use?"),
    ),
    Subject(
        "error tracker",
        "error tracking",
        ("Sentry", "Rollbar", "Bugsnag"),
        ("which error tracker do we use?", "where are exceptions reported?"),
    ),
    Subject(
        "frontend framework",
        "the frontend",
        ("React", "Vue", "Svelte"),
        ("what is the frontend written in?", "which frontend framework do we use?"),
    ),
    Subject(
        "css framework",
        "styling",
        ("Tailwind", "Bootstrap", "plain CSS modules"),
        ("how do we style the pages?", "which CSS framework do we use?"),
    ),
    Subject(
        "auth provider",
        "login",
        ("Auth0", "Keycloak", "our own session login"),
        ("how do users log in?", "which auth provider do we use?"),
    ),
    Subject(
        "object storage",
        "file uploads",
        ("S3", "Google Cloud Storage", "MinIO"),
        ("where are uploaded files stored?", "which object storage do we use?"),
    ),
    Subject(
        "linter",
        "linting",
        ("flake8", "ruff", "pylint"),
        ("which linter do we run?", "how is the code linted?"),
    ),
    Subject(
        "container runtime",
        "local containers",
        ("Docker", "Podman", "nerdctl"),
        ("what do we run containers with locally?", "docker or something else?"),
    ),
    Subject(
        "code host",
        "the repository",
        ("GitHub", "GitLab", "Gitea"),
        ("where is the repository hosted?", "which code host do we use?"),
    ),
    Subject(
        "on-call tool",
        "paging",
        ("PagerDuty", "Opsgenie", "Grafana OnCall"),
        ("who pages on-call?", "which paging tool do we use?"),
    ),
    Subject(
        "docs site",
        "the documentation",
        ("Sphinx", "MkDocs", "Docusaurus"),
        ("what builds the docs?", "which docs generator do we use?"),
    ),
    Subject(
        "orm",
        "database access",
        ("SQLAlchemy", "the Django ORM", "raw SQL with psycopg"),
        ("how does the code talk to the database?", "which ORM do we use?"),
    ),
    Subject(
        "review rule",
        "code review",
        ("one approval", "two approvals", "an approval from a code owner"),
        ("how many approvals does a pull request need?", "what does code review require?"),
    ),
)

OLD_WORDINGS = (
    "We use {old} for {phrase}.",
    "{phrase_cap} is {old}.",
    "Decision: {phrase} stays on {old}.",
    "For {phrase} we went with {old}.",
)
CHANGE_WORDINGS = (
    "We switched {phrase} to {new}; {old} is gone.",
    "We use {new} for {phrase} now, not {old}.",
    "{phrase_cap} moved from {old} to {new}.",
    "Decision changed: {phrase} is {new} from now on.",
    "We use {new} for {phrase}.",
    "{phrase_cap} is {new}.",
)


@dataclass(frozen=True)
class Case:
    subject: str
    old: str  # the old decision's text
    new: str  # the change's text
    query: str
    old_typed: bool  # the old decision is a captured prompt
    new_typed: bool
    held_out: bool


def held_out(subject: Subject) -> bool:
    return hashlib.sha256(subject.name.encode()).hexdigest()[0] < "5"


def _fill(template: str, subject: Subject, old: str, new: str) -> str:
    phrase_cap = subject.phrase[:1].upper() + subject.phrase[1:]
    return template.format(phrase=subject.phrase, phrase_cap=phrase_cap, old=old, new=new)


def cases() -> list[Case]:
    """Every case of the set, in a fixed order (see the module's rules)."""
    out: list[Case] = []
    n = 0
    for subject in SUBJECTS:
        values = subject.values
        for i, old in enumerate(values):
            new = values[(i + 1) % len(values)]
            out.append(
                Case(
                    subject=subject.name,
                    old=_fill(OLD_WORDINGS[n % len(OLD_WORDINGS)], subject, old, new),
                    new=_fill(CHANGE_WORDINGS[n % len(CHANGE_WORDINGS)], subject, old, new),
                    query=subject.questions[n % len(subject.questions)],
                    old_typed=n % 2 == 0,
                    new_typed=n % 4 == 1,
                    held_out=held_out(subject),
                )
            )
            n += 1
    return out
