"""`memflow ledger`: injection → use rates and the hottest memory ids, as
FlyMemory's `ledger` command gives them; hottest is used most, as the
dashboard's ledger page ranks them (the server's `rank=uses`).

Asks the server's `GET …/ledger/` with the hook client's own settings
(`hook_client.load_config`), so it reports on the workspace the hooks write
to. The workspace is `--workspace`, else the client's, else the only one the
key can use. Standard library only, like the hook client.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any
from urllib.parse import quote, urlencode

from memflow_site.client import hook as hook_client

TIMEOUT = 10.0
KINDS = ("expanded", "recalled", "superseded", "cited")


class LedgerError(Exception):
    """What to tell the person at the terminal; exit status 1."""


def _get(config: dict[str, Any], path: str) -> tuple[int, Any]:
    try:
        status, data = hook_client.exchange(
            config,
            "GET",
            path,
            None,
            deadline=time.monotonic() + TIMEOUT,
            connect_timeout=TIMEOUT,
        )
    except ValueError as exc:  # a URL that is not http(s)
        raise LedgerError(str(exc)) from None
    except TimeoutError:
        raise LedgerError(f"{config['url']} did not answer within {TIMEOUT:g} s.") from None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise LedgerError(
            f"Nothing answers at {config['url']} ({reason}); `memflow status` says more."
        ) from None
    try:
        return status, json.loads(data)
    except ValueError:
        return status, None


def _refusal(status: int, body: Any, what: str) -> LedgerError:
    detail = body.get("detail") if isinstance(body, dict) else None
    if status in (401, 403):
        return LedgerError(
            f"The server refuses the API key ({detail or status}); `memflow status` says more."
        )
    return LedgerError(f"{what} answered {status}: {detail or 'not like memflow'}")


def _workspace(config: dict[str, Any], given: str) -> str:
    slug = given or str(config.get("workspace") or "")
    if slug:
        return slug
    status, body = _get(config, "/api/v1/workspaces/?limit=200")
    rows = body.get("results") if isinstance(body, dict) else None  # a page of the list
    if status != 200 or not isinstance(rows, list):
        raise _refusal(status, body, "Listing workspaces")
    slugs = sorted(str(w.get("slug")) for w in rows if isinstance(w, dict))
    if len(slugs) != 1:
        raise LedgerError(
            "Say which workspace: --workspace or MEMFLOW_WORKSPACE (this key can use: "
            f"{', '.join(slugs) or 'none'})."
        )
    return slugs[0]


def ledger_fetch(
    *, workspace: str = "", session: str = "", top: int = 10
) -> tuple[str, dict[str, Any]]:
    """The workspace asked about and the server's ledger summary of it."""
    config = hook_client.load_config()
    slug = _workspace(config, workspace)
    query = {"top": str(top), **({"session": session} if session else {})}
    status, body = _get(config, f"/api/v1/workspaces/{quote(slug)}/ledger/?{urlencode(query)}")
    if status != 200 or not isinstance(body, dict):
        if status == 404:
            raise LedgerError(f"No workspace {slug!r} that this key can use.")
        raise _refusal(status, body, "The ledger")
    return slug, body


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def ledger_text(slug: str, summary: dict[str, Any], *, session: str = "") -> list[str]:
    where = f"{slug}, session {session}" if session else slug
    injected, used = int(summary.get("injected", 0)), int(summary.get("used", 0))
    if not injected:
        return [f"{where}: no memory has been injected yet, so there is no use rate."]
    by_kind, rates = summary.get("by_kind", {}), summary.get("rates", {})
    lines = [
        f"{where}: {injected} injected (session, id) pairs, {used} then used "
        f"({_percent(float(summary.get('use_rate', 0)))})",
        "  "
        + "  ".join(
            f"{kind} {by_kind.get(kind, 0)} ({_percent(float(rates.get(kind, 0)))})"
            for kind in KINDS
        ),
    ]
    hottest = summary.get("hottest") or []
    if hottest:
        lines.append("most used ids (uses, of all ledger events):")
        lines += [f"  #{h['memory_id']}  {h['uses']}  {h['events']}" for h in hottest]
    return lines


def main(*, workspace: str = "", session: str = "", top: int = 10, as_json: bool = False) -> int:
    try:
        slug, summary = ledger_fetch(workspace=workspace, session=session, top=top)
    except LedgerError as exc:
        print(f"memflow: {exc}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"workspace": slug, "session": session or None, **summary}, indent=2))
    else:  # for people, on stderr, as `memflow status` prints
        print("\n".join(ledger_text(slug, summary, session=session)), file=sys.stderr)
    return 0
