"""Moving memory in and out of memflow: importers for the seed systems' formats,
and memflow's own portable archive.

Each importer is `<format>_import(path=…, workspace=…, user=…, progress=…)`
and returns an `ImportReport`; `workspace_export` writes the archive that
`archive_import` takes back. They write only through the services of the
apps they fill. `memflow import` / `memflow export` (memflow_site.cli.main) parse
arguments and print the reports.
"""

from __future__ import annotations

from memflow_site.porting.archive import archive_import, workspace_export
from memflow_site.porting.flymemory import UnsafePickle, flymemory_import
from memflow_site.porting.hme import hme_import
from memflow_site.porting.mem0 import mem0_import
from memflow_site.porting.memflow_dir import memflow_dir_import
from memflow_site.porting.report import ExportReport, ImportReport, Skipped
from memflow_site.porting.skills_folder import skills_import

IMPORTERS = {
    "flymemory": flymemory_import,
    "hme": hme_import,
    "memflow-dir": memflow_dir_import,
    "skills": skills_import,
    "mem0": mem0_import,
    "archive": archive_import,
}

__all__ = [
    "IMPORTERS",
    "ExportReport",
    "ImportReport",
    "Skipped",
    "UnsafePickle",
    "archive_import",
    "flymemory_import",
    "hme_import",
    "mem0_import",
    "memflow_dir_import",
    "skills_import",
    "workspace_export",
]
