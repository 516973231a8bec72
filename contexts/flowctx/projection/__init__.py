"""Reversible tool-result projection (flowctx capability 3, "可逆工具结果投影").

A tool result over the budget reaches the model as a projection: a shorter
text shaped by what the result is (a test run, a diff, JSON, a log…), while
the original is stored under its hash and can be fetched back byte for byte.
The caller stores the original and appends the marker naming the hash; this
package only decides what the reader sees.

A projection may drop anything the reader can fetch back, but never what the
reader needs next. It always keeps failing test ids, assertion and error lines
with their file:line, the final summary line, warnings and errors in logs,
changed file names in diffs, the distinct paths of search hits, and the
top-level keys and a few values of JSON. Those lines are kept even when they
alone pass the budget: the budget bounds everything else.

Pure Python and no Django: the hook runs this on every large tool result, so
it must cost milliseconds per megabyte and must never raise.

A package: `projector` picks a projector by what `detect` says the text is;
one module per content type (`testrun`, `cli`, `log`, `search`, `diff`,
`code`, `json_value`, `prose`) over the shared pieces in `lines`.
"""

from __future__ import annotations

from contexts.flowctx.projection.projector import KINDS, Projection, detect_kind, project
from memflow_site.runtime.tokens import estimate_tokens

__all__ = ["KINDS", "Projection", "detect_kind", "estimate_tokens", "project"]
