"""memflow's own portable archive: `memflow export` writes it, `memflow import archive` reads it.

A tar.gz with

    manifest.json        format, version, memflow version, counts, core limits, context options
    memories.jsonl       one memory a line, by (created_at, id); ids are export ids 1..n
    core/MEMORY.md       the workspace's core document, as an HME file
    core/USER.md         with `--user`: that user's USER document
    declarations.jsonl   {"directory", "source_text"}, by directory
    documents.jsonl      {"path", "content"}, by path
    skills/<name>/SKILL.md
    compression.jsonl    with `--with-compression-refs`: {"sha256", "content_type", …}
    compression/<sha256> the original, byte for byte

Links inside `memories.jsonl` (`superseded_by`, `evidence`, and the
`tombstone_of` / `evidence_ids` keys of metadata) name export ids. The
archive has no dates of its own and fixed tar and gzip headers, so the same
workspace content always gives the same bytes: export → import into an
empty workspace → export gives the archive back byte for byte.

Importing keeps every stored field — text, compartment, state key and
value, validity interval, source, app, strength, access count, last access,
pinned, expiry, metadata, creation time, owner and session — and re-embeds
the texts with the running model. Rows are inserted unfolded (an archive
holds distinct rows, tombstones included), through the engine's own insert,
which keeps the lexical statistics exact. A row counts as already present
when the workspace has one with the same text, creation time, compartment
and state key, so a second import adds nothing and an interrupted one
resumes.

A package: the container (`tarball`), writing (`export`), taking back
(`importing`, with the memory rows and their links in `rows`).
"""

from __future__ import annotations

from memflow_site.porting.archive.export import workspace_export
from memflow_site.porting.archive.importing import archive_import

__all__ = ["archive_import", "workspace_export"]
