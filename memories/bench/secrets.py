"""`memflow bench secrets`: how much the credential filter catches, how often it
refuses ordinary text, and what a megabyte of text costs it.

- catch rate: the labelled credential shapes of
  `tests/reliability/data/secret_shapes.py` (fake values, one format each,
  put together at run time);
- false positives, per corpus, counted per document: Debian's package
  descriptions (the quality bench's corpus, fetched the same way), the curl
  commit messages of `../shared/data/commits-curl` (skipped, and said so,
  when that folder is absent), and generated test logs (pytest, jest, npm,
  pip, go, cargo, docker, CI);
- cost: `find_secret` and `redact_secrets` over each corpus joined into one
  text, in ms per MB (the best of three runs);
- the wider labelled set of `tests/reliability/data/secret_shapes_wider.py`
  (review #33's missed formats, more vendors, key pairs) and its look-alikes,
  which must pass: caught and refused counts;
- adversarial cost: `redact_secrets` over a megabyte of each near-matching
  text review #33 named (repeated `password=`, PEM headers, `eyJ` prefixes,
  `KEY=value` lines, …), in ms per MB with no budget (the best of three runs),
  and the worst of them against ordinary prose (the curl commits, else the test logs).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from contexts import secrets

REPO = Path(__file__).resolve().parents[2]
SHAPES = REPO / "tests" / "reliability" / "data" / "secret_shapes.py"
WIDER = REPO / "tests" / "reliability" / "data" / "secret_shapes_wider.py"
# CI has a read-only copy of the shared folder beside the clone.
COMMITS_IN = Path("data") / "commits-curl" / "corpus.jsonl"
COMMITS = REPO.parent / "shared" / COMMITS_IN


def shapes_module(path: Path = SHAPES) -> ModuleType:
    """The generator of shapes and logs, read from the source tree (tests are not installed)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the bench runs from a source checkout")
    name = f"memflow_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def debian_descriptions(data_dir: Path, *, fetch: bool = True) -> list[str] | None:
    """One text per package (`name: description`), or None when the index is not
    there and `fetch` is false. Not the quality bench's docs: those leave out
    what the filter refuses."""
    from memories.bench import corpus

    lists = corpus.lists_dir(data_dir.resolve())
    if not fetch and not corpus._translation_files(lists, "en"):
        return None
    return [f"{p.name}: {' '.join(p.paragraphs)}" for p in corpus.load_packages(data_dir)]


def commit_messages(path: Path = COMMITS) -> list[str] | None:
    """The curl commits' subject and body, or None when the shared folder is absent."""
    if not path.exists():
        return None
    texts = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            texts.append(f"{record['subject']}\n\n{record['text']}")
    return texts


def catch_rate() -> dict[str, Any]:
    shapes = shapes_module().credential_shapes()
    missed = [shape for shape in shapes if not secrets.find_secret(shape.text)]
    return {
        "shapes": len(shapes),
        "formats": len({shape.kind for shape in shapes}),
        "caught": len(shapes) - len(missed),
        "catch_rate": round(1 - len(missed) / len(shapes), 4),
        "missed_formats": sorted({shape.kind for shape in missed}),
    }


def false_positives(texts: list[str], *, examples: int = 5) -> dict[str, Any]:
    flagged = []
    for text in texts:
        for start, end, kind in secrets._spans(text):
            flagged.append((kind, text[max(0, start - 40) : end + 20]))
            break
    return {
        "documents": len(texts),
        "flagged": len(flagged),
        "rate": round(len(flagged) / len(texts), 6) if texts else None,
        "examples": [f"{kind}: {excerpt!r}" for kind, excerpt in flagged[:examples]],
    }


def cost(texts: list[str], runs: int = 3) -> dict[str, float]:
    """ms per MB of `find_secret` and `redact_secrets` on the corpus as one text."""
    whole = "\n\n".join(texts)
    megabytes = len(whole.encode()) / 1e6
    secrets.find_secret("warm up: the rules are built on first use")

    def best(fn: Callable[[str], object]) -> float:
        times = []
        for _ in range(runs):
            started = time.process_time()
            fn(whole)
            times.append(time.process_time() - started)
        return round(min(times) * 1000 / megabytes, 1)

    return {
        "megabytes": round(megabytes, 2),
        "find_secret_ms_per_mb": best(secrets.find_secret),
        "redact_secrets_ms_per_mb": best(secrets.redact_secrets),
    }


def bench_secrets(data_dir: Path, *, fetch: bool = True) -> dict[str, Any]:
    corpora: dict[str, list[str] | None] = {
        "debian_descriptions": debian_descriptions(data_dir, fetch=fetch),
        "curl_commits": commit_messages(),
        "test_logs": shapes_module().ordinary_logs(),
    }
    result: dict[str, Any] = {
        "bench": "secrets",
        **catch_rate(),
        "wider_set": wider_set(),
        "corpora": {},
    }
    for name, texts in corpora.items():
        if texts is None:
            where = COMMITS if name == "curl_commits" else data_dir
            result["corpora"][name] = {"skipped": f"not found under {where}"}
            continue
        result["corpora"][name] = {**false_positives(texts), **cost(texts)}
    prose = corpora["curl_commits"] or corpora["test_logs"] or []
    result["adversarial"] = adversarial_cost(prose)
    return result


def wider_set() -> dict[str, Any]:
    """Review #33's wider labelled set: credentials caught, look-alikes refused."""
    module = shapes_module(WIDER)
    shapes = module.wider_shapes()
    missed = [shape for shape in shapes if not secrets.find_secret(shape.text)]
    looks = module.look_alikes()
    refused = [(text, kind) for text in looks if (kind := secrets.find_secret(text))]
    return {
        "shapes": len(shapes),
        "formats": len({shape.kind for shape in shapes}),
        "caught": len(shapes) - len(missed),
        "missed_formats": sorted({shape.kind for shape in missed}),
        "look_alikes": len(looks),
        "false_positives": len(refused),
        "refused": [f"{kind}: {text[:80]!r}" for text, kind in refused],
    }


def adversarial_texts(size: int = 1_000_000) -> dict[str, str]:
    """A megabyte of each near-matching text: review #33's, and one per newer rule's anchor."""
    import random

    rng = random.Random(33)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    lines = [
        f"KEY_{i}={''.join(rng.choice(alphabet) for _ in range(24))}" for i in range(size // 30)
    ]
    units = {
        "password=": "password=",
        "token=": "token=",
        "pem_headers": "-----BEGIN RSA PRIVATE KEY-----\n",
        "pem_headers_one_line": "-----BEGIN RSA PRIVATE KEY-----",
        "eyJ_run": "eyJ",
        "eyJ_dot": "eyJhbGciOi.",
        "url_userinfo": "://a:b@",
        "authorization": "Authorization: Bearer ",
        "curl_u": " -u a:b",
        "mysql_p": "mysql -p",
        "docker_auth": '"auth": "',
        "azure_sig": "&sig=",
        "aws_ids": "AKIAIOSFODNN7EXAMPLE ",
    }
    texts = {name: unit * (size // len(unit)) for name, unit in units.items()}
    texts["key_value_lines"] = "\n".join(lines)
    return texts


def _ms_per_mb(text: str) -> float:
    megabytes = len(text.encode()) / 1e6
    started = time.process_time()
    with secrets.scan_budget(ms=10**9):  # measured whole: no budget cuts it short
        secrets.redact_secrets(text)
    return round((time.process_time() - started) * 1000 / megabytes, 1)


def adversarial_cost(prose: list[str]) -> dict[str, Any]:
    """ms per MB of `redact_secrets` on each adversarial text, and the worst against prose."""
    secrets.find_secret("warm up: the rules are built on first use")
    # The best of three, as for prose: one run on a busy machine says more about the machine.
    costs = {
        name: min(_ms_per_mb(text) for _ in range(3)) for name, text in adversarial_texts().items()
    }
    whole = "\n\n".join(prose)
    baseline = min(_ms_per_mb(whole) for _ in range(3)) if whole else None
    worst = max(costs, key=lambda name: costs[name])
    return {
        "ms_per_mb": costs,
        "worst": worst,
        "worst_ms_per_mb": costs[worst],
        "prose_ms_per_mb": baseline,
        "worst_over_prose": round(costs[worst] / baseline, 2) if baseline else None,
        "budget_ms_per_request": secrets.budget_ms(),
    }
