"""Property: any tree assembles byte-identically from the disk and from the
same files held as stored documents, whatever the options and variables."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contexts.declarations import ContextConfig, DiskSource, StoredSource, assemble

DIRS = ["", "a", "a/b", "a/b/c", "x"]
NAMES = ["A.md", "B.md", "memory/status.md", "memory/history.md", "memory/zz.md", "中文.md"]
REFERENCES = [
    "A.md",
    "../A.md",
    "../../B.md",
    "memory/status.md",
    "memory/${device}/s.md",
    "${hostname}.md",
    "${nope}.md",
    "./memory/../B.md",
    "missing.md",
]
texts = st.text(alphabet="ab 记忆\n#:-", max_size=40)


def _quote(item: str) -> str:
    return "'" + item.replace("'", "''") + "'"


@st.composite
def trees(draw: st.DrawFn) -> dict[str, str]:
    files: dict[str, str] = {}
    for directory in DIRS:
        prefix = f"{directory}/" if directory else ""
        for name in draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True)):
            files[prefix + name] = draw(texts)
        if draw(st.booleans()):
            files[prefix + "memory/dev1/s.md"] = draw(texts)
        if draw(st.integers(0, 4)) == 0:
            files[prefix + ".device"] = draw(st.sampled_from(["dev1\n", "  \n", "dev2"]))
        if draw(st.integers(0, 5)) == 0:
            files[prefix + ".git/HEAD"] = "ref: refs/heads/main\n"
        if draw(st.booleans()):
            system = draw(st.lists(st.sampled_from(REFERENCES), max_size=3))
            preload = draw(st.lists(st.sampled_from(REFERENCES), max_size=3))
            inherit = draw(st.booleans())
            files[prefix + ".dsh/context.yaml"] = (
                f"systemPrompt: [{', '.join(map(_quote, system))}]\n"
                f"preload:\n{''.join(f'  - {_quote(p)}' + chr(10) for p in preload)}"
                f"inherit: {'true' if inherit else 'false'}\n"
            )
    return files


options = st.builds(
    ContextConfig,
    discover=st.sampled_from(["nearest", "cwd"]),
    per_file_bytes=st.none() | st.integers(0, 30),
    total_bytes=st.none() | st.integers(0, 60),
    legacy_memory_fallback=st.booleans(),
    skip_delegated=st.booleans(),
    max_sections=st.integers(0, 4),
    preload=st.lists(st.sampled_from(REFERENCES), max_size=2).map(tuple),
)
envs = st.fixed_dictionaries(
    {},
    optional={
        "DSH_CONTEXT_IGNORE": st.sampled_from(["1", "0"]),
        "DSH_CONTEXT_SYSTEM_PROMPT": st.sampled_from(["A.md", "A.md:../B.md", "y\n${device}.md"]),
        "DSH_CONTEXT_PRELOAD": st.sampled_from(["memory/status.md", "${nope}.md"]),
        "DSH_CONTEXT_PARAMS": texts,
        "DSH_CONTEXT_FILE": st.sampled_from(["a/.dsh/context.yaml", "x/A.md", "nope.yaml"]),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    trees(),
    st.sampled_from(DIRS),
    options,
    envs,
    st.none() | st.sampled_from(["dev1", "dev2"]),
    st.integers(0, 2),
    st.booleans(),
)
def test_disk_and_stored_documents_assemble_identically(
    files, cwd, config, env, device, depth, suppress
):
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        # Directories to stand in. No reference names a bare directory: an empty
        # one has no stored counterpart (a stored directory is a path prefix).
        for directory in DIRS:
            (root / directory).mkdir(parents=True, exist_ok=True)
        if suppress:
            config = ContextConfig(**{**config.__dict__, "suppress_roots": (str(root / "a"),)})
        stored = {str(root / relative): text for relative, text in files.items()}
        arguments = {
            "directory": os.path.join(str(root), cwd) if cwd else str(root),
            "config": config,
            "env": env,
            "device": device,
            "hostname": "devbox.local",
            "delegation_depth": depth,
        }
        from_disk = assemble(source=DiskSource(), **arguments).to_json()
        from_store = assemble(source=StoredSource(stored), **arguments).to_json()
    assert json.dumps(from_store, ensure_ascii=False) == json.dumps(from_disk, ensure_ascii=False)
