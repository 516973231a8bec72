"""Assemble what a session opened in a directory sees: the MEMFLOW rules.

`assemble()` is a pure function of a file source, a directory, the options,
the per-run `DSH_CONTEXT_*` values and the machine's names: the same inputs
give a byte-identical `Assembly`. It runs over the agent's disk in the CLI
and over stored documents on the server. Nothing in it raises for a bad
declaration or a missing file: those become warnings and notes, and the
assembly goes on as the rules say.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contexts.declarations.config import ContextConfig
from contexts.declarations.parser import DeclarationError, ParsedDeclaration, parse_declaration
from contexts.declarations.sources import FileSource, Unreadable, normalize_path

ENV_IGNORE = "DSH_CONTEXT_IGNORE"
ENV_FILE = "DSH_CONTEXT_FILE"
ENV_SYSTEM_PROMPT = "DSH_CONTEXT_SYSTEM_PROMPT"
ENV_PRELOAD = "DSH_CONTEXT_PRELOAD"
ENV_PARAMS = "DSH_CONTEXT_PARAMS"
ENV_NAMES = (ENV_IGNORE, ENV_FILE, ENV_SYSTEM_PROMPT, ENV_PRELOAD, ENV_PARAMS)
ENV_PREFIX = "DSH_CONTEXT_"

DEVICE_FILE = ".device"
DEVICE_MAX_LEVELS = 64  # directories examined: the declaring one and 63 above it
MEMORY_DIR = "memory"
# Extra paths in one variable: one a line, or separated like $PATH.
PATH_LIST_SEPARATORS = ("\n", os.pathsep)

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_TRUTHY = {"1", "true", "yes", "on"}

ASSEMBLY_VERSION = 1


def sha256_text(text: str) -> str:
    return hashlib.sha256(_utf8(text)).hexdigest()


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def short_hostname(name: str | None) -> str | None:
    """A host name without a trailing `.local` (what macOS appends); None if empty."""
    if name is None:
        return None
    name = name.strip()
    if name.endswith(".local"):
        name = name[: -len(".local")]
    return name or None


@dataclass(frozen=True)
class DeclarationRef:
    path: str  # the declaration file
    directory: str  # the declaring directory: its paths are relative to it
    sha256: str
    inherit: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "directory": self.directory,
            "sha256": self.sha256,
            "inherit": self.inherit,
        }


@dataclass(frozen=True)
class Section:
    """One system-prompt section. Identity sections are whole files, never cut."""

    name: str
    order: int
    kind: str  # "identity" or "params"
    text: str
    source: str | None  # the absolute path read; None for DSH_CONTEXT_PARAMS
    display: str  # the path as declared (variables substituted), or the variable
    origin: str  # "declaration", "config" or "env"
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "order": self.order,
            "kind": self.kind,
            "text": self.text,
            "source": self.source,
            "display": self.display,
            "origin": self.origin,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class PreloadFile:
    path: str
    display: str
    origin: str  # "declaration", "legacy", "config" or "env"
    sha256: str  # of the whole file, even when only a part was sent
    bytes: int
    sent_bytes: int
    limited: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "display": self.display,
            "origin": self.origin,
            "sha256": self.sha256,
            "bytes": self.bytes,
            "sent_bytes": self.sent_bytes,
            "limited": self.limited,
        }


@dataclass(frozen=True)
class Preload:
    """The one first user message a session is given, once."""

    text: str
    sha256: str
    files: tuple[PreloadFile, ...]
    left_out: tuple[str, ...]  # files not loaded because of totalBytes

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "sha256": self.sha256,
            "files": [f.to_json() for f in self.files],
            "left_out": list(self.left_out),
        }


@dataclass(frozen=True)
class Assembly:
    directory: str
    declarations: tuple[DeclarationRef, ...] = ()
    sections: tuple[Section, ...] = ()  # identity sections in order, then params
    preload: Preload | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    suppressed: bool = False
    # What `${device}` is for the session's directory (its `.device`, else the
    # host name): the client sends it as the session's device.
    device: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": ASSEMBLY_VERSION,
            "directory": self.directory,
            "device": self.device,
            "declarations": [d.to_json() for d in self.declarations],
            "sections": [s.to_json() for s in self.sections],
            "preload": self.preload.to_json() if self.preload else None,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "suppressed": self.suppressed,
        }

    @classmethod
    def from_json(cls, data: Any) -> Assembly:
        """Read an assembly a client resolved (`to_json` output), checking its hashes.

        Raises `ValueError` naming the first thing wrong.
        """
        return _assembly_from_json(data)


# --- the resolver --------------------------------------------------------------


def assemble(
    *,
    source: FileSource,
    directory: str,
    config: ContextConfig | None = None,
    env: Mapping[str, str] | None = None,
    device: str | None = None,
    hostname: str | None = None,
    delegation_depth: int = 0,
) -> Assembly:
    """What a session opened in `directory` (absolute) is given.

    `device`, when given, is the value of `${device}` (what the agent's
    machine found); otherwise `.device` files are looked up in `source`.
    `hostname` is the machine's host name; without one, `${hostname}` (and a
    `${device}` that falls back to it) stays as written.
    """
    if not directory.startswith("/"):
        raise ValueError(f"the directory must be an absolute path, not {directory!r}")
    return _Run(
        source=source,
        cwd=normalize_path(directory),
        config=config or ContextConfig(),
        device=(device or "").strip() or None,
        hostname=short_hostname(hostname),
    ).assemble(env or {}, delegation_depth)


@dataclass
class _Loaded:
    ref: DeclarationRef
    parsed: ParsedDeclaration


@dataclass(frozen=True)
class _Wanted:
    raw: str
    base: str  # relative paths are resolved against this directory
    origin: str


@dataclass
class _Run:
    source: FileSource
    cwd: str
    config: ContextConfig
    device: str | None
    hostname: str | None
    notes: dict[str, None] = field(default_factory=dict)  # ordered, without repeats
    warnings: dict[str, None] = field(default_factory=dict)

    def note(self, text: str) -> None:
        self.notes.setdefault(text)

    def warn(self, text: str) -> None:
        self.warnings.setdefault(text)

    def assemble(self, env: Mapping[str, str], delegation_depth: int) -> Assembly:
        config = self.config
        values = self._env_channel(env)
        if config.suppress_roots:
            root = self._project_root()
            if root is not None and root in config.suppress_roots:
                self.note(f"the project root {root} is in suppressRoots: nothing is injected")
                return self._result((), (), None, suppressed=True)

        ignore = config.ignore_declaration or values.get(ENV_IGNORE, "").strip().lower() in _TRUTHY
        declarations: list[_Loaded] = []
        if ignore:
            why = "ignoreDeclaration" if config.ignore_declaration else ENV_IGNORE
            self.note(f"{why}: declarations and legacy memory/ are not loaded")
        elif values.get(ENV_FILE, "").strip():
            declarations = self._from_env_file(values[ENV_FILE].strip())
        else:
            declarations = self._discover()

        identity = [
            _Wanted(raw, loaded.ref.directory, "declaration")
            for loaded in declarations
            for raw in loaded.parsed.system_prompt
        ]
        identity += [_Wanted(raw, self.cwd, "config") for raw in config.system_prompt]
        identity += [
            _Wanted(raw, self.cwd, "env") for raw in _path_list(values.get(ENV_SYSTEM_PROMPT))
        ]
        sections = self._identity_sections(identity)
        params = values.get(ENV_PARAMS, "")
        if params.strip():
            sections.append(
                Section(
                    name="params",
                    order=config.section_order_base + config.max_sections,
                    kind="params",
                    text=params,
                    source=None,
                    display=ENV_PARAMS,
                    origin="env",
                    sha256=sha256_text(params),
                )
            )

        preload: Preload | None = None
        if delegation_depth > 0 and config.skip_delegated:
            self.note(f"skipDelegated: no preload at delegation depth {delegation_depth}")
        elif not config.memory_bootstrap:
            self.note("memoryBootstrap is off: no preload")
        else:
            wanted: list[tuple[str, str, str]] = []  # (display, path, origin)
            if not declarations and not ignore and config.legacy_memory_fallback:
                wanted += self._legacy_memory()
            for item in [
                *(
                    _Wanted(raw, loaded.ref.directory, "declaration")
                    for loaded in declarations
                    for raw in loaded.parsed.preload
                ),
                *(_Wanted(raw, self.cwd, "config") for raw in config.preload),
                *(_Wanted(raw, self.cwd, "env") for raw in _path_list(values.get(ENV_PRELOAD))),
            ]:
                resolved = self._resolve(item)
                if resolved is not None:
                    wanted.append((resolved[0], resolved[1], item.origin))
            preload = self._preload(wanted)
        return self._result(tuple(d.ref for d in declarations), tuple(sections), preload)

    def _result(
        self,
        declarations: tuple[DeclarationRef, ...],
        sections: tuple[Section, ...],
        preload: Preload | None,
        *,
        suppressed: bool = False,
    ) -> Assembly:
        return Assembly(
            directory=self.cwd,
            declarations=declarations,
            sections=sections,
            preload=preload,
            notes=tuple(self.notes),
            warnings=tuple(self.warnings),
            suppressed=suppressed,
            device=self._device(self.cwd),
        )

    # --- the per-run environment channel ---

    def _env_channel(self, env: Mapping[str, str]) -> dict[str, str]:
        present = sorted(name for name in env if name.startswith(ENV_PREFIX))
        if not present:
            return {}
        if not self.config.allow_env_override:
            self.note(f"allowEnvOverride is off: {', '.join(present)} ignored")
            return {}
        unknown = [name for name in present if name not in ENV_NAMES]
        if unknown:
            self.note(f"unknown variables ignored: {', '.join(unknown)}")
        return {name: str(env[name]) for name in ENV_NAMES if name in env}

    # --- declarations ---

    def _discover(self) -> list[_Loaded]:
        return self._inherit_chain(self._find(self.cwd, only_here=self.config.discover == "cwd"))

    def _inherit_chain(self, loaded: _Loaded | None) -> list[_Loaded]:
        """`loaded` and, while a declaration says `inherit: true`, the nearest
        usable one above it; outer declarations first."""
        chain: list[_Loaded] = []
        while loaded is not None:
            chain.append(loaded)
            parent = _parent(loaded.ref.directory)
            if not loaded.parsed.inherit or parent is None:
                break
            loaded = self._find(parent, only_here=False)
        chain.reverse()
        return chain

    def _find(self, start: str, *, only_here: bool) -> _Loaded | None:
        for directory in _ancestors(start):
            path = posixpath.join(directory, self.config.declaration_file)
            if self.source.is_file(path):
                loaded = self._load(path, directory)
                if loaded is not None:
                    return loaded
            if only_here:
                break
        return None

    def _load(self, path: str, directory: str) -> _Loaded | None:
        """A parsed declaration, or None (with a warning) when it cannot be used."""
        try:
            text = self.source.read_text(path)
            parsed = parse_declaration(text, path=path)
        except Unreadable as exc:
            self.warn(f"{path}: {exc.reason}; ignored, as if there were no declaration")
            return None
        except DeclarationError as exc:
            self.warn(f"{exc}; ignored, as if there were no declaration")
            return None
        for key, line in parsed.unknown_keys:
            self.note(f"{path}:{line}: unknown key {key!r} ignored")
        ref = DeclarationRef(
            path=path, directory=directory, sha256=sha256_text(text), inherit=parsed.inherit
        )
        return _Loaded(ref=ref, parsed=parsed)

    def _from_env_file(self, raw: str) -> list[_Loaded]:
        resolved = self._resolve(_Wanted(raw, self.cwd, "env"))
        if resolved is None:
            return []
        path = resolved[1]
        directory = declaring_directory(path, self.config.declaration_file)
        if not self.source.is_file(path):
            self.warn(
                f"{ENV_FILE} names {path}, which is not a file; proceeding without a declaration"
            )
            return []
        return self._inherit_chain(self._load(path, directory))

    def _legacy_memory(self) -> list[tuple[str, str, str]]:
        """memory/*.md of the directory: priority names first, then the rest A-Z."""
        memory = posixpath.join(self.cwd, MEMORY_DIR)
        names = [name[:-3] for name in self.source.list_files(memory) if name.endswith(".md")]
        if not names:
            return []
        present = set(names)
        ordered = list(dict.fromkeys(n for n in self.config.memory_priority if n in present))
        ordered += sorted(present.difference(ordered))
        self.note(f"no declaration: loading {MEMORY_DIR}/*.md (legacy fallback)")
        return [
            (f"{MEMORY_DIR}/{name}.md", posixpath.join(memory, f"{name}.md"), "legacy")
            for name in ordered
        ]

    # --- paths and variables: the one place paths are resolved ---

    def _resolve(self, wanted: _Wanted) -> tuple[str, str] | None:
        """(the path as declared with variables substituted, the absolute path).

        `${device}` looks for `.device` from the path's base directory — the
        declaring directory, or the session's directory for extra paths.
        """
        raw = wanted.raw.strip()
        if not raw:
            return None

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "device":
                value = self._device(wanted.base)
            elif name == "hostname":
                value = self.hostname
            else:
                self.note(f"unknown variable ${{{name}}} in {raw!r} is left as written")
                return match.group(0)
            if value is None:
                self.note(f"${{{name}}} in {raw!r} is left as written: no host name is known")
                return match.group(0)
            return value

        display = _VARIABLE.sub(substitute, raw)
        joined = display if display.startswith("/") else posixpath.join(wanted.base, display)
        return display, normalize_path(joined)

    def _device(self, base: str) -> str | None:
        if self.device is not None:
            return self.device
        for level, directory in enumerate(_ancestors(base)):
            if level == DEVICE_MAX_LEVELS:
                break
            path = posixpath.join(directory, DEVICE_FILE)
            if self.source.is_file(path):
                try:
                    text = self.source.read_text(path)
                except Unreadable as exc:
                    self.note(f"{path}: {exc.reason}; ${{device}} falls back to the host name")
                    return self.hostname
                for line in text.replace("\r", "\n").split("\n"):
                    if line.strip():
                        return line.strip()
                return self.hostname  # an empty .device means "use the host name"
        return self.hostname

    def _project_root(self) -> str | None:
        for directory in _ancestors(self.cwd):
            if self.source.exists(posixpath.join(directory, ".git")):
                return directory
        return None

    # --- what is read ---

    def _identity_sections(self, wanted: list[_Wanted]) -> list[Section]:
        config = self.config
        sections: list[Section] = []
        seen: set[str] = set()
        for item in wanted:
            resolved = self._resolve(item)
            if resolved is None:
                continue
            display, path = resolved
            if path in seen:
                self.note(f"{path} is listed more than once; it is injected once")
                continue
            seen.add(path)
            try:
                text = self.source.read_text(path)
            except Unreadable as exc:
                self.note(f"cannot read {path} ({display}): {exc.reason}")
                continue
            if len(sections) >= config.max_sections:
                self.note(f"{path} left out: maxSections is {config.max_sections}")
                continue
            index = len(sections)
            sections.append(
                Section(
                    name=f"identity:{index}",
                    order=config.section_order_base + index,
                    kind="identity",
                    text=text,
                    source=path,
                    display=display,
                    origin=item.origin,
                    sha256=sha256_text(text),
                )
            )
        return sections

    def _preload(self, wanted: Sequence[tuple[str, str, str]]) -> Preload | None:
        per_file = self.config.per_file_bytes
        total = self.config.total_bytes
        parts: list[str] = []
        files: list[PreloadFile] = []
        left_out: list[str] = []
        seen: set[str] = set()
        used = 0
        for display, path, origin in wanted:
            if path in seen:
                self.note(f"{path} is listed more than once; it is preloaded once")
                continue
            seen.add(path)
            if total is not None and used >= total:
                left_out.append(path)
                continue
            try:
                text = self.source.read_text(path)
            except Unreadable as exc:
                self.note(f"cannot read {path} ({display}): {exc.reason}")
                parts.append(f"=== {display} ===\n(cannot read {path}: {exc.reason})")
                continue
            data = _utf8(text)
            cap = len(data)
            if per_file is not None:
                cap = min(cap, per_file)
            if total is not None:
                cap = min(cap, total - used)
            sent = text
            limited = cap < len(data)
            if limited:
                sent = _cut(data, cap)
            sent_bytes = len(_utf8(sent))
            # A file cut by the total spends what is left of it, even when the
            # cut fell short on a character boundary: the next file is left out.
            total_spent = limited and total is not None and cap == total - used
            used = total if total_spent and total is not None else used + sent_bytes
            part = f"=== {display} ===\n{sent}"
            if limited:
                part += (
                    f"\n… (limited snapshot: {sent_bytes} of {len(data)} bytes;"
                    f" the full file is {path})"
                )
                self.note(f"{path} is a limited snapshot ({sent_bytes} of {len(data)} bytes)")
            parts.append(part)
            files.append(
                PreloadFile(
                    path=path,
                    display=display,
                    origin=origin,
                    sha256=sha256_text(text),
                    bytes=len(data),
                    sent_bytes=sent_bytes,
                    limited=limited,
                )
            )
        if left_out:
            self.note(f"left out by totalBytes ({total}): {', '.join(left_out)}")
            parts.append(
                f"(left out by the {total}-byte total limit; read them yourself: "
                f"{', '.join(left_out)})"
            )
        if not parts:
            return None
        text = (
            f"Context files for {self.cwd} (a fixed snapshot taken once, "
            f"at the start of this session):"
        )
        for part in parts:
            # One blank line between files, whether or not a file ends in a newline.
            text += ("\n" if text.endswith("\n") else "\n\n") + part
        return Preload(
            text=text, sha256=sha256_text(text), files=tuple(files), left_out=tuple(left_out)
        )


def _parent(directory: str) -> str | None:
    parent = posixpath.dirname(directory)
    return None if parent == directory else parent


def _ancestors(directory: str) -> Iterator[str]:
    """`directory`, its parent, … up to and including `/`."""
    current: str | None = directory
    while current is not None:
        yield current
        current = _parent(current)


def declaring_directory(path: str, declaration_file: str) -> str:
    """The directory a declaration file speaks for: the parent of `.dsh`.

    A file that is not at `<dir>/<declaration_file>` speaks for its own folder.
    """
    suffix = "/" + declaration_file
    if path.endswith(suffix):
        return path[: -len(suffix)] or "/"
    return posixpath.dirname(path)


def _cut(data: bytes, cap: int) -> str:
    """The longest prefix of `data` of at most `cap` bytes ending on a character."""
    cut = cap
    while 0 < cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut].decode("utf-8", "surrogatepass")


def _path_list(value: str | None) -> list[str]:
    if not value:
        return []
    items = [value]
    for separator in PATH_LIST_SEPARATORS:
        items = [piece for item in items for piece in item.split(separator)]
    return [item.strip() for item in items if item.strip()]


# --- reading an assembly a client resolved ---------------------------------------


def _assembly_from_json(data: Any) -> Assembly:
    obj = _dict(data, "assembly")
    directory = _str(obj.get("directory"), "directory")
    if not directory.startswith("/"):
        raise ValueError("directory: must be an absolute path")
    declarations = tuple(
        DeclarationRef(
            path=_str(d.get("path"), f"declarations[{i}].path"),
            directory=_str(d.get("directory"), f"declarations[{i}].directory"),
            sha256=_sha(d.get("sha256"), f"declarations[{i}].sha256"),
            inherit=bool(d.get("inherit", False)),
        )
        for i, d in enumerate(_dicts(obj.get("declarations", []), "declarations"))
    )
    sections = tuple(
        _section_from_json(s, f"sections[{i}]")
        for i, s in enumerate(_dicts(obj.get("sections", []), "sections"))
    )
    preload = None
    if obj.get("preload") is not None:
        preload = _preload_from_json(_dict(obj["preload"], "preload"))
    return Assembly(
        directory=normalize_path(directory),
        declarations=declarations,
        sections=sections,
        preload=preload,
        notes=tuple(_str(n, "notes[]", empty=True) for n in _list(obj.get("notes", []), "notes")),
        warnings=tuple(
            _str(w, "warnings[]", empty=True) for w in _list(obj.get("warnings", []), "warnings")
        ),
        suppressed=bool(obj.get("suppressed", False)),
        device=obj["device"] if isinstance(obj.get("device"), str) else None,
    )


def _section_from_json(s: dict[str, Any], where: str) -> Section:
    text = _str(s.get("text"), f"{where}.text", empty=True)
    sha = _sha(s.get("sha256"), f"{where}.sha256")
    if sha != sha256_text(text):
        raise ValueError(f"{where}.sha256: does not match the section's text")
    order = s.get("order")
    if isinstance(order, bool) or not isinstance(order, int):
        raise ValueError(f"{where}.order: must be a whole number")
    kind = s.get("kind", "identity")
    if kind not in ("identity", "params"):
        raise ValueError(f"{where}.kind: must be 'identity' or 'params'")
    source = s.get("source")
    return Section(
        name=_str(s.get("name"), f"{where}.name"),
        order=order,
        kind=kind,
        text=text,
        source=None if source is None else _str(source, f"{where}.source"),
        display=_str(s.get("display", source or ""), f"{where}.display", empty=True),
        origin=_str(s.get("origin", "declaration"), f"{where}.origin"),
        sha256=sha,
    )


def _preload_from_json(p: dict[str, Any]) -> Preload:
    text = _str(p.get("text"), "preload.text")
    sha = _sha(p.get("sha256"), "preload.sha256")
    if sha != sha256_text(text):
        raise ValueError("preload.sha256: does not match the preload text")
    files = tuple(
        _preload_file_from_json(f, f"preload.files[{i}]")
        for i, f in enumerate(_dicts(p.get("files", []), "preload.files"))
    )
    left_out = tuple(
        _str(item, f"preload.left_out[{i}]")
        for i, item in enumerate(_list(p.get("left_out", []), "preload.left_out"))
    )
    return Preload(text=text, sha256=sha, files=files, left_out=left_out)


def _preload_file_from_json(f: dict[str, Any], where: str) -> PreloadFile:
    file_sha = _sha(f.get("sha256"), f"{where}.sha256")
    content = f.get("content")
    if (
        content is not None
        and sha256_text(_str(content, f"{where}.content", empty=True)) != file_sha
    ):
        raise ValueError(f"{where}.sha256: does not match the file's content")
    size = f.get("bytes", 0)
    sent = f.get("sent_bytes", size)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (size, sent)):
        raise ValueError(f"{where}: bytes and sent_bytes are whole numbers")
    return PreloadFile(
        path=_str(f.get("path"), f"{where}.path"),
        display=_str(f.get("display", f.get("path")), f"{where}.display"),
        origin=_str(f.get("origin", "declaration"), f"{where}.origin"),
        sha256=file_sha,
        bytes=size,
        sent_bytes=sent,
        limited=bool(f.get("limited", False)),
    )


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: must be a list")
    return value


def _dicts(value: Any, where: str) -> list[dict[str, Any]]:
    return [_dict(item, f"{where}[{i}]") for i, item in enumerate(_list(value, where))]


def _str(value: Any, where: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise ValueError(f"{where}: must be a{'' if empty else ' non-empty'} string")
    return value


def _sha(value: Any, where: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ValueError(f"{where}: must be a lower-case hex SHA-256")
    return value
