"""`memflow status`: what the hook client resolved, and whether it works.

A hook says nothing when something is wrong (it must never break a turn),
so this is where a person finds out: the URL, key and workspace the client
uses and where each came from, whether the server answers and takes the
key, where Claude Code's settings run memflow's hooks, and whether hooks
are skipping the server after a timeout. Exits 1 naming what is wrong.

Standard library only, like the hook client it describes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memflow_site.client import hook as hook_client
from memflow_site.client import install as install_hooks

KEY_PREFIX_CHARS = 11  # "mf_" and 8 more: what the server lists a key by
HEALTH_TIMEOUT = 5.0


@dataclass
class Report:
    lines: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def line(self, label: str, text: str) -> None:
        self.lines.append((label, text))


def _sources() -> dict[str, str]:
    """Where each setting came from: the environment, the config file, or the default."""
    try:
        in_file = json.loads(hook_client.config_path().read_text())
    except (OSError, ValueError):
        in_file = {}
    sources = {}
    for key, env in (
        ("url", "MEMFLOW_URL"),
        ("api_key", "MEMFLOW_API_KEY"),
        ("workspace", "MEMFLOW_WORKSPACE"),
        ("timeout", "MEMFLOW_HOOK_TIMEOUT"),
    ):
        if os.environ.get(env):
            sources[key] = env
        elif isinstance(in_file, dict) and in_file.get(key):
            sources[key] = str(hook_client.config_path())
        else:
            sources[key] = "default" if key in ("url", "timeout") else "unset"
    return sources


def _get(config: dict[str, Any], path: str) -> tuple[int, Any]:
    status, data = hook_client.exchange(
        config,
        "GET",
        path,
        None,
        deadline=time.monotonic() + HEALTH_TIMEOUT,
        connect_timeout=HEALTH_TIMEOUT,
    )
    try:
        return status, json.loads(data)
    except ValueError:
        return status, None


def _detail(body: Any) -> str:
    return str(body.get("detail")) if isinstance(body, dict) and body.get("detail") else ""


def gather(project_dir: Path | None = None) -> Report:
    report = Report()
    config = hook_client.load_config()
    sources = _sources()
    url = str(config["url"])
    report.facts.update(url=url, sources=sources)
    report.line("url", f"{url}  ({sources['url']})")

    reachable = _check_server(report, config, url)
    if reachable:
        try:
            _check_key(report, config, sources)
        except Exception as exc:  # it answered health a moment ago
            report.problems.append(f"Checking the key against {url} failed: {exc}")
    _check_skip(report, url, reachable)
    _check_hooks(report, project_dir or Path.cwd())
    budget = hook_client.hook_budget(config)
    report.facts["hook_budget_seconds"] = budget
    report.line("budget", f"{budget:g} s per hook ({sources['timeout']})")
    return report


def _check_server(report: Report, config: dict[str, Any], url: str) -> bool:
    try:
        status, body = _get(config, "/api/v1/health")
    except ValueError as exc:
        report.problems.append(str(exc))
        report.line("server", "not a usable URL")
        return False
    except TimeoutError:
        report.problems.append(f"{url} did not answer within {HEALTH_TIMEOUT:g} s.")
        report.line("server", "no answer")
        return False
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        report.problems.append(
            f"Nothing memflow answers at {url} ({reason}). Is `memflow serve` running there, "
            "and is MEMFLOW_URL right?"
        )
        report.line("server", f"unreachable ({reason})")
        return False
    except Exception as exc:  # a broken HTTP answer: not a memflow server
        report.problems.append(f"{url} does not answer like memflow ({exc}).")
        report.line("server", "not memflow")
        return False
    if status not in (200, 503) or not isinstance(body, dict) or "embeddings" not in body:
        report.problems.append(
            f"{url} answers, but not like memflow (GET /api/v1/health: {status}); check MEMFLOW_URL."
        )
        report.line("server", f"answers {status}, not memflow")
        return False
    report.facts["server"] = body
    state = f"memflow {body.get('version', '?')}, database {body.get('database')}, "
    state += f"embeddings {body.get('embeddings')}"
    if status == 503:
        report.warnings.append(f"The server says it is degraded: {state}.")
    report.line("server", f"reachable: {state}")
    return True


def _check_key(report: Report, config: dict[str, Any], sources: dict[str, str]) -> None:
    raw = str(config.get("api_key") or "")
    if not raw:
        report.problems.append(
            "No API key: set MEMFLOW_API_KEY (or `api_key` in the config file) to a key from "
            "`memflow createkey`."
        )
        report.line("api key", "not set")
        return
    shown = f"{raw[:KEY_PREFIX_CHARS]}…"
    status, body = _get(config, "/api/v1/workspaces/?limit=200")
    if status in (401, 403):
        report.problems.append(
            f"The server refuses the API key {shown} ({status}: {_detail(body) or 'not valid'}); "
            "it may be mistyped, revoked, or from another memflow."
        )
        report.line("api key", f"{shown}  ({sources['api_key']}): refused")
        return
    rows = body.get("results") if isinstance(body, dict) else None  # a page of the list
    if status != 200 or not isinstance(rows, list):
        report.problems.append(f"Listing workspaces answered {status}: {_detail(body)}")
        report.line("api key", f"{shown}  ({sources['api_key']}): unknown")
        return
    workspaces = {str(w.get("slug")): w for w in rows if isinstance(w, dict)}
    key = _this_key(config, raw)
    scope = key.get("scope") if key else None
    restricted = key.get("workspace") if key else None
    about = ", ".join(
        part
        for part in (
            f"scope {scope}" if scope else "",
            f"restricted to {restricted}" if restricted else "",
        )
        if part
    )
    report.line(
        "api key", f"{shown}  ({sources['api_key']}): valid" + (f", {about}" if about else "")
    )
    report.facts["key"] = {
        "prefix": raw[:KEY_PREFIX_CHARS],
        "scope": scope,
        "workspace": restricted,
    }
    if scope == "read":
        report.problems.append(
            f"The key {shown} is read-only; hooks record every event and need a write key."
        )

    slug = str(config.get("workspace") or "")
    if not slug and restricted:
        slug, where = restricted, "the key's"
    elif slug:
        where = sources["workspace"]
    else:
        report.line(
            "workspace",
            "not set: the one mapped to the project root in a workspace's settings "
            "(project_roots), else none",
        )
        report.warnings.append(
            "No workspace is set and the key is not restricted to one: hooks only work in "
            "project roots a workspace maps (or set MEMFLOW_WORKSPACE)."
        )
        return
    found = workspaces.get(slug)
    if found is None:
        report.problems.append(
            f"Workspace {slug!r} ({where}) is not one this key can use; it can use: "
            f"{', '.join(sorted(workspaces)) or 'none'}."
        )
        report.line("workspace", f"{slug}  ({where}): not accessible")
        return
    role = found.get("role")
    report.facts["workspace"] = {"slug": slug, "role": role}
    report.line("workspace", f"{slug}  ({where}): your role is {role}")
    if role not in ("owner", "editor"):
        report.problems.append(
            f"Your role in {slug} is {role}; hooks record events and need editor or owner."
        )


def _this_key(config: dict[str, Any], raw: str) -> dict[str, Any] | None:
    try:
        status, body = _get(config, "/api/v1/keys/?limit=200")
    except Exception:
        return None
    keys = body.get("results") if isinstance(body, dict) else None
    if status != 200 or not isinstance(keys, list):
        return None
    return next(
        (k for k in keys if isinstance(k, dict) and k.get("prefix") == raw[:KEY_PREFIX_CHARS]),
        None,
    )


def _check_skip(report: Report, url: str, reachable: bool) -> None:
    skip = hook_client.skipping(url)
    if skip is None:
        return
    until = time.strftime("%H:%M:%S", time.localtime(skip["until"]))
    if reachable:
        # It answers now: the next hook need not wait for the skip to run out.
        hook_client.clear_skip(url)
        report.line("skip", f"hooks were skipping it ({skip.get('reason')}); cleared, it answers")
    else:
        report.line("skip", f"hooks skip it until {until} ({skip.get('reason')})")
        report.warnings.append(
            f"Hooks skip {url} until {until} after a timeout ({hook_client.state_path()})."
        )
    report.facts["skip"] = skip


def _runs(command: str) -> bool:
    """Whether a hook command's memflow would be found when Claude Code runs it
    (an http hook, listed as `POST url`, starts no program)."""
    if command.startswith("POST "):
        return True
    if command.startswith(install_hooks.SHARED_COMMAND):
        return shutil.which("memflow") is not None
    program = command.split()[0] if command.split() else ""
    return os.access(program, os.X_OK) if os.path.isabs(program) else bool(shutil.which(program))


def _check_hooks(report: Report, project_dir: Path) -> None:
    places = []
    for path in install_hooks.claude_settings_paths(project_dir):
        try:
            found = install_hooks.installed(install_hooks.read_json(path))
        except (OSError, ValueError) as exc:
            report.warnings.append(f"{path} cannot be read: {exc}")
            continue
        if not found:
            continue
        missing = [name for name in install_hooks.MATCHERS if name not in found]
        broken = sorted({c for c in found.values() if not _runs(c)})
        text = f"{path}: {len(found)} events"
        if missing:
            text += f", missing {', '.join(missing)}"
            report.warnings.append(
                f"{path} lacks {', '.join(missing)}: run `memflow install-hooks` again."
            )
        for command in broken:
            report.warnings.append(
                f"{path} runs `{command}`, but no memflow is found there (PATH, or that path)."
            )
        _check_http_key(report, path, found)
        places.append({"path": str(path), "events": sorted(found), "missing": missing})
        report.line("hooks", text)
    report.facts["hooks"] = places
    if not places:
        report.line("hooks", "none for Claude Code here")
        report.warnings.append(
            "No Claude Code settings here run memflow's hooks: "
            "`memflow install-hooks --claude-code --project`."
        )


def _check_http_key(report: Report, path: Path, found: dict[str, str]) -> None:
    """A problem when Claude Code's http hooks in `path` would post without the key.

    Claude Code fills their `Authorization` header from its environment only;
    where this shell has no MEMFLOW_API_KEY (the key is in the config file,
    say), a Claude Code started from it gets 401 on each of them.
    """
    posted = sorted(name for name, target in found.items() if target.startswith("POST "))
    if not posted or os.environ.get(install_hooks.KEY_VARIABLE):
        return
    where = "--user" if path == Path.home() / ".claude" / "settings.json" else "--project"
    fix = f"`memflow install-hooks --claude-code {where}`"
    if install_hooks.key_in_config_file():
        fix += f" again: your key is in {hook_client.config_path()}, so it writes command hooks"
        fix += f" that read it (or export {install_hooks.KEY_VARIABLE} in your shell profile)"
    else:
        fix = f"export {install_hooks.KEY_VARIABLE} in your shell profile, or run {fix} again"
    report.problems.append(
        f"{path}: Claude Code's http hooks ({', '.join(posted)}) send the key from "
        f"${install_hooks.KEY_VARIABLE}, which is not set here: a Claude Code started from "
        f"this shell gets 401 on each, so nothing is recalled or recorded. Fix: {fix}."
    )


def main(*, as_json: bool = False) -> int:
    report = gather()
    if as_json:
        print(
            json.dumps(
                {**report.facts, "problems": report.problems, "warnings": report.warnings},
                indent=2,
                default=str,
            )
        )
    else:
        width = max(len(label) for label, _ in report.lines)
        for label, text in report.lines:
            print(f"{label:<{width}}  {text}", file=sys.stderr)
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        for problem in report.problems:
            print(f"problem: {problem}", file=sys.stderr)
        print("all good" if not report.problems else "not working", file=sys.stderr)
    return 1 if report.problems else 0
