"""Directory declarations (`.dsh/context.yaml`) and context assembly.

Pure Python with no Django import, so that `memflow context` runs on an
agent's machine without a server or a database. The server runs the same
resolver over stored documents (`contexts.tenancy.selectors.context_source_for`).
"""

from __future__ import annotations

from contexts.declarations.config import ConfigError, ContextConfig
from contexts.declarations.parser import (
    MAX_DECLARATION_BYTES,
    DeclarationError,
    ParsedDeclaration,
    parse_declaration,
)
from contexts.declarations.resolver import (
    DEVICE_FILE,
    DEVICE_MAX_LEVELS,
    ENV_FILE,
    ENV_IGNORE,
    ENV_NAMES,
    ENV_PARAMS,
    ENV_PREFIX,
    ENV_PRELOAD,
    ENV_SYSTEM_PROMPT,
    Assembly,
    DeclarationRef,
    Preload,
    PreloadFile,
    Section,
    assemble,
    sha256_text,
    short_hostname,
)
from contexts.declarations.sources import (
    MAX_FILE_BYTES,
    DiskSource,
    FileSource,
    StoredSource,
    Unreadable,
    normalize_path,
)

__all__ = [
    "DEVICE_FILE",
    "DEVICE_MAX_LEVELS",
    "ENV_FILE",
    "ENV_IGNORE",
    "ENV_NAMES",
    "ENV_PARAMS",
    "ENV_PREFIX",
    "ENV_PRELOAD",
    "ENV_SYSTEM_PROMPT",
    "MAX_DECLARATION_BYTES",
    "MAX_FILE_BYTES",
    "Assembly",
    "ConfigError",
    "ContextConfig",
    "DeclarationError",
    "DeclarationRef",
    "DiskSource",
    "FileSource",
    "ParsedDeclaration",
    "Preload",
    "PreloadFile",
    "Section",
    "StoredSource",
    "Unreadable",
    "assemble",
    "normalize_path",
    "parse_declaration",
    "sha256_text",
    "short_hostname",
]
