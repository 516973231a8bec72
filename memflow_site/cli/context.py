"""`memflow context`: a directory's context, resolved on this machine's disk.

`memflow context [DIR]` prints what a session opened in DIR is given;
`memflow context push DIR` uploads DIR's declarations and the files they
name to a memflow server. Neither needs Django or a database: the resolver
(`contexts.declarations`) is plain Python, and the push speaks HTTP.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import posixpath
import socket
import sys
from typing import Any

from contexts.declarations import (
    DEVICE_FILE,
    ENV_PREFIX,
    Assembly,
    ConfigError,
    ContextConfig,
    DiskSource,
    assemble,
)

# A push request stays under Django's default 2.5 MB request body limit.
PUSH_BATCH_BYTES = 2_000_000
PUSH_BATCH_DOCUMENTS = 1000


class ContextCommandError(Exception):
    """A plain sentence for the person at the terminal."""


def run(args: argparse.Namespace) -> int:
    target: list[str] = list(args.target)
    if target and target[0] == "push":
        if len(target) != 2:
            raise ContextCommandError("Usage: memflow context push DIR")
        return push(args, _directory(target[1]))
    if len(target) > 1:
        raise ContextCommandError("Give one directory (or `push DIR`).")
    assembly = resolve(args, _directory(target[0] if target else os.getcwd()))
    if args.json:
        sys.stdout.write(json.dumps(assembly.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(render(assembly))
    sys.stdout.flush()
    return 0


def _directory(raw: str) -> str:
    path = os.path.abspath(raw)
    if not os.path.isdir(path):
        raise ContextCommandError(f"{raw} is not a directory.")
    return path


def load_config(args: argparse.Namespace) -> ContextConfig:
    options: dict[str, Any] = {}
    if args.config:
        import yaml

        try:
            with open(args.config, encoding="utf-8") as handle:
                loaded = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise ContextCommandError(f"Cannot read the options in {args.config}: {exc}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ContextCommandError(f"{args.config} must hold a mapping of options.")
        options = dict(loaded or {})
    if args.discover:
        options["discover"] = args.discover
    try:
        return ContextConfig.from_mapping(options)
    except ConfigError as exc:
        raise ContextCommandError(f"Context options: {exc}.") from None


def resolve(
    args: argparse.Namespace,
    directory: str,
    *,
    source: Any = None,
    config: ContextConfig | None = None,
    env: dict[str, str] | None = None,
) -> Assembly:
    return assemble(
        source=source or DiskSource(),
        directory=directory,
        config=config or load_config(args),
        env={k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX)}
        if env is None
        else env,
        device=args.device,
        hostname=args.hostname or socket.gethostname(),
        delegation_depth=args.delegation_depth,
    )


def render(assembly: Assembly) -> str:
    """The assembly for a person: sections in order, the preload, the notes."""
    lines = [f"Context for {assembly.directory}"]
    if assembly.suppressed:
        lines.append("Suppressed: nothing is injected.")
    if assembly.declarations:
        lines.append("Declarations (outer first):")
        lines += [
            f"  {d.path}{'  (inherit: true)' if d.inherit else ''}" for d in assembly.declarations
        ]
    else:
        lines.append("No declaration.")
    for section in assembly.sections:
        where = f"{section.display} -> {section.source}" if section.source else section.display
        lines += [
            "",
            f"=== {section.name} (order {section.order}): {where}  sha256 {section.sha256[:12]}",
            section.text.rstrip("\n"),
        ]
    if assembly.preload is not None:
        lines += [
            "",
            f"=== preload: the first user message, once per session "
            f"({len(assembly.preload.files)} files)  sha256 {assembly.preload.sha256[:12]}",
            assembly.preload.text.rstrip("\n"),
        ]
    else:
        lines += ["", "=== no preload"]
    for title, items in (("Notes", assembly.notes), ("Warnings", assembly.warnings)):
        if items:
            lines += ["", f"{title}:"] + [f"  - {item}" for item in items]
    return "\n".join(lines) + "\n"


# --- push ----------------------------------------------------------------------


class _RecordingSource(DiskSource):
    """The disk, remembering every file read (what a push uploads)."""

    def __init__(self) -> None:
        self.read: dict[str, str] = {}

    def read_text(self, path: str) -> str:
        text = super().read_text(path)
        self.read[path] = text
        return text


def push(args: argparse.Namespace, directory: str) -> int:
    url = os.environ.get("MEMFLOW_URL", "").rstrip("/")
    key = os.environ.get("MEMFLOW_API_KEY", "")
    workspace = os.environ.get("MEMFLOW_WORKSPACE", "")
    missing = [
        name
        for name, value in (
            ("MEMFLOW_URL", url),
            ("MEMFLOW_API_KEY", key),
            ("MEMFLOW_WORKSPACE", workspace),
        )
        if not value
    ]
    if missing:
        raise ContextCommandError(f"Set {', '.join(missing)} to push to a memflow server.")

    # Resolve as a session would, but read everything a session could be
    # given: no limits, no per-run environment, no suppression.
    config = dataclasses.replace(
        load_config(args),
        per_file_bytes=None,
        total_bytes=None,
        memory_bootstrap=True,
        skip_delegated=False,
        suppress_roots=(),
        ignore_declaration=False,
    )
    source = _RecordingSource()
    assembly = resolve(args, directory, source=source, config=config, env={})
    for warning in assembly.warnings:
        _say(f"warning: {warning}")
    declared = {d.path: d for d in assembly.declarations}
    documents = sorted(
        (path, text)
        for path, text in source.read.items()
        if path not in declared and posixpath.basename(path) != DEVICE_FILE
    )
    if not declared and not documents:
        raise ContextCommandError(f"{directory} declares nothing and has no memory/*.md to push.")

    import httpx

    base = f"{url}/api/v1/workspaces/{workspace}"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    try:
        with httpx.Client(headers=headers, timeout=60) as client:
            for batch in _batches(documents):
                _post(client, f"{base}/documents/", {"documents": batch})
            for ref in assembly.declarations:
                text = source.read[ref.path]
                _post(
                    client,
                    f"{base}/declarations/",
                    {"directory": ref.directory, "source_text": text},
                )
    except httpx.HTTPError as exc:
        raise ContextCommandError(f"Cannot reach {url}: {exc}") from None
    _say(
        f"Pushed {len(declared)} declaration{'s' if len(declared) != 1 else ''} and "
        f"{len(documents)} document{'s' if len(documents) != 1 else ''} to workspace "
        f"{workspace} at {url}."
    )
    for path in [*declared, *(path for path, _ in documents)]:
        print(path)
    return 0


def _batches(documents: list[tuple[str, str]]) -> list[list[dict[str, str]]]:
    batches: list[list[dict[str, str]]] = []
    size = 0
    for path, content in documents:
        item = {"path": path, "content": content}
        item_size = len(json.dumps(item, ensure_ascii=False).encode("utf-8"))
        if (
            not batches
            or len(batches[-1]) >= PUSH_BATCH_DOCUMENTS
            or size + item_size > PUSH_BATCH_BYTES
        ):
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += item_size
    return batches


def _post(client: Any, url: str, body: dict[str, Any]) -> None:
    response = client.post(url, content=json.dumps(body, ensure_ascii=False).encode("utf-8"))
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        raise ContextCommandError(f"The server refused the push ({response.status_code}): {detail}")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
