"""Real directory trees for the declaration tests, and the same trees stored
in a workspace, so every rule is checked on disk and on the server alike."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from contexts.declarations import Assembly, ContextConfig, DiskSource, assemble
from contexts.models import ContextDocument, Declaration, Workspace
from contexts.tenancy import services
from contexts.tenancy.selectors import context_source_for

HOSTNAME = "devbox.local"  # always given, so no test depends on the machine


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def store_tree(
    workspace: Workspace, root: Path, declaration_file: str = ".dsh/context.yaml"
) -> None:
    """Every file under `root` as the server holds it: declaration files as
    declarations, everything else as documents (`.device` and `.git/` too)."""
    Declaration.objects.filter(workspace=workspace).delete()
    ContextDocument.objects.filter(workspace=workspace).delete()
    documents = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            text = Path(path).read_text(encoding="utf-8")
            if path.endswith("/" + declaration_file):
                services.declaration_store(
                    workspace=workspace,
                    directory=path[: -len(declaration_file) - 1],
                    source_text=text,
                )
            else:
                documents.append((path, text))
    services.context_documents_store(workspace=workspace, documents=documents)


def canonical(assembly: Assembly) -> str:
    return json.dumps(assembly.to_json(), ensure_ascii=False, sort_keys=True)


def assemble_both(
    workspace: Workspace, root: Path, directory: Path | str, **options: Any
) -> Assembly:
    """Assemble from disk and from the stored copy; they must be byte-identical."""
    options.setdefault("hostname", HOSTNAME)
    config = options.get("config") or ContextConfig()
    disk = assemble(source=DiskSource(), directory=str(directory), **options)
    services.context_config_set(workspace=workspace, options=config.to_mapping())
    store_tree(workspace, root, config.declaration_file)
    stored = assemble(
        source=context_source_for(workspace=workspace, config=config),
        directory=str(directory),
        **options,
    )
    assert canonical(stored) == canonical(disk)
    assert canonical(assemble(source=DiskSource(), directory=str(directory), **options)) == (
        canonical(disk)
    ), "the same inputs must give the same output"
    return disk
