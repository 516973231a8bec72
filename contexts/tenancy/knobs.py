"""Per-workspace knobs (`Workspace.settings`): one registry, one reader, one writer.

Every knob any code reads is declared once, by the app that reads it (its
`conf` module registers on import; `AppConfig.ready()` imports it), with its
type, bounds or choices, unit, default and the words a person reads. The
settings page, the REST API (`PATCH workspaces/{slug}/` with `settings`) and
the code all go through this module, so a knob's reader and its help text
cannot disagree: `knob(workspace, "hook_recall_k")` is the only way to read
one, and asking for a name nobody registered is an error.

Other keys of `Workspace.settings` are state with services of their own
(`context` resolver options, mutes, `project_roots`); they are not knobs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction

from contexts.errors import Invalid
from contexts.models import Workspace
from contexts.tenancy.audit import Actor, audit_record

Kind = Literal["bool", "int", "float", "choice", "text"]


class UnknownKnob(LookupError):
    """Code asked for a knob no app registered: a programming error, not bad input."""


@dataclass(frozen=True)
class KnobGroup:
    key: str
    title: str
    description: str
    order: int


@dataclass(frozen=True)
class Knob:
    name: str
    group: str
    kind: Kind
    default: Any
    label: str
    help: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    # (value, what a person reads) for kind "choice".
    choices: tuple[tuple[str, str], ...] = ()
    # Knobs with side effects (the embedder re-embeds) are changed on a page of
    # their own; `changed_at` says where, in words.
    changed_at: str = ""
    # What 0 means, for numbers where it turns something off ("off", "kept for good").
    zero_means: str = ""
    # For a knob with side effects, the app that owns them makes the change
    # (`apply(workspace=, value=, actor=)`, refusing with `Invalid`/`Conflict`)
    # and says how far it has got (`progress(workspace=)`, a JSON object):
    # the REST API changes it through them (`knob_apply`).
    apply: Callable[..., None] | None = None
    progress: Callable[..., dict[str, Any]] | None = None

    @property
    def editable(self) -> bool:
        return not self.changed_at

    def stored_in(self, settings: Mapping[str, Any] | None) -> Any:
        """The usable value `settings` holds for this knob, or None (unset or unusable)."""
        stored = (settings or {}).get(self.name)
        if stored is None:
            return None
        try:
            return self.clean(stored)
        except Invalid:  # written by hand or by an older version; the default holds
            return None

    def value_in(self, workspace: Workspace | None) -> Any:
        """The value in force: the workspace's own if usable, else the default."""
        stored = self.stored_in(workspace.settings) if workspace is not None else None
        return self.default if stored is None else stored

    def is_set_in(self, workspace: Workspace) -> bool:
        return self.stored_in(workspace.settings) is not None

    def clean(self, value: Any) -> Any:
        """The typed value, or `Invalid` (code `invalid_setting`) saying why in words."""
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise self._refusal("takes on or off (true or false)")
            return value
        if self.kind in ("choice", "text"):
            if not isinstance(value, str):
                raise self._refusal("takes text")
            if self.choices and value not in dict(self.choices):
                listed = ", ".join(v for v, _ in self.choices)
                raise self._refusal(f"takes one of {listed}")
            return value
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise self._refusal(f"takes {self.expected()}")
        if self.kind == "int" and not float(value).is_integer():
            raise self._refusal(f"takes {self.expected()}; {human(value)} is not whole")
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise self._refusal(f"takes {self.expected()}; {human(value)} is out of bounds")
        return int(value) if self.kind == "int" else float(value)

    def shown(self, value: Any) -> str:
        """A value of this knob as a person reads it: "20,000 characters", "on", "English"."""
        if self.choices:
            return dict(self.choices).get(value, str(value))
        if self.zero_means and value == 0 and self.kind in ("int", "float"):
            return self.zero_means
        text = human(value)
        if not self.unit or self.kind not in ("int", "float"):
            return text
        return f"{text} {_singular(self.unit) if value == 1 else self.unit}"

    def bounds(self) -> str:
        """The range a number may take, in words ("" for other kinds)."""
        if self.kind not in ("int", "float"):
            return ""
        low = "" if self.minimum is None else human(self.minimum)
        high = "" if self.maximum is None else human(self.maximum)
        if low and high:
            return f"{low} to {high}"
        return f"at least {low}" if low else (f"at most {high}" if high else "")

    def expected(self) -> str:
        """What a usable number is, in words: "a whole number of characters from 100 to 20,000"."""
        what = "a whole number" if self.kind == "int" else "a number"
        if self.unit:
            what += f" of {self.unit}"
        if self.minimum is not None and self.maximum is not None:
            return f"{what} from {human(self.minimum)} to {human(self.maximum)}"
        if self.minimum is not None:
            return f"{what}, at least {human(self.minimum)}"
        if self.maximum is not None:
            return f"{what}, at most {human(self.maximum)}"
        return what

    def _refusal(self, why: str) -> Invalid:
        return Invalid(
            f"{self.label} ({self.name}) {why}.",
            code="invalid_setting",
            extra={"setting": self.name},
        )


def human(value: Any) -> str:
    """A value as a person reads it: 20,000 (not 2e+04), 0.0333, on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        rounded = float(f"{value:.4g}")
        if rounded.is_integer():
            return f"{int(rounded):,}"
        return f"{rounded:,f}".rstrip("0").rstrip(".")
    return str(value)


def _singular(unit: str) -> str:
    """The unit of one: "1 memory", "1 level" (units are declared in the plural)."""
    if unit.endswith("ies"):
        return unit[:-3] + "y"
    return unit[:-1] if unit.endswith("s") else unit


_groups: dict[str, KnobGroup] = {}
_knobs: dict[str, Knob] = {}


def register_group(key: str, *, title: str, description: str, order: int) -> None:
    """Declare a capability the settings page shows as one section; `order` sorts them."""
    _groups[key] = KnobGroup(key=key, title=title, description=description, order=order)


def register_knobs(knobs: Iterable[Knob]) -> None:
    """Declare knobs; re-registering the same declaration (a re-import) is harmless."""
    for declared in knobs:
        if declared.group not in _groups:
            raise ValueError(f"knob {declared.name}: register group {declared.group!r} first")
        if declared.name in _knobs and _knobs[declared.name] != declared:
            raise ValueError(f"knob {declared.name} is registered twice, differently")
        declared.clean(declared.default)  # a default outside its own bounds is a typo
        _knobs[declared.name] = declared


def knob_spec(name: str) -> Knob:
    try:
        return _knobs[name]
    except KeyError:
        raise UnknownKnob(f"no app registered the knob {name!r}") from None


def knob(workspace: Workspace | None, name: str) -> Any:
    """The value of knob `name` in force in `workspace` (its default with no workspace)."""
    return knob_spec(name).value_in(workspace)


def knobs_grouped() -> list[tuple[KnobGroup, list[Knob]]]:
    """Every group with its knobs, in registration order within a group."""
    ranked = sorted(_groups.values(), key=lambda g: (g.order, g.key))
    return [(g, [k for k in _knobs.values() if k.group == g.key]) for g in ranked]


def registered_knobs() -> list[Knob]:
    return [k for _, knobs in knobs_grouped() for k in knobs]


def workspace_settings_clean(values: Mapping[str, Any], *, applied: bool = False) -> dict[str, Any]:
    """Typed values by name (None: back to the default), or `Invalid` naming the first bad knob.

    `applied`: a knob with side effects is accepted when its owner registered
    how to change it (`Knob.apply`); the caller then changes it through
    `knob_apply`, not `workspace_settings_update`.
    """
    if not isinstance(values, Mapping):
        raise Invalid("settings is an object of knob names and values.", code="invalid_setting")
    cleaned: dict[str, Any] = {}
    for name, value in values.items():
        declared = _knobs.get(name)
        if declared is None:
            raise Invalid(
                f"There is no setting {name!r}.", code="unknown_setting", extra={"setting": name}
            )
        if not declared.editable and not (applied and declared.apply is not None):
            raise Invalid(
                f"{declared.label} ({name}) is changed {declared.changed_at}.",
                code="setting_not_editable",
                extra={"setting": name},
            )
        cleaned[name] = None if value is None else declared.clean(value)
    return cleaned


def knobs_applied(cleaned: Mapping[str, Any]) -> list[str]:
    """The names among `cleaned` whose change goes through their owner's `apply`."""
    return [name for name in cleaned if _knobs[name].apply is not None]


def knob_apply(*, workspace: Workspace, name: str, value: Any, actor: Actor | None) -> None:
    """Change a knob with side effects through its owner (the embedder: a re-embed)."""
    declared = _knobs[name]
    assert declared.apply is not None
    declared.apply(
        workspace=workspace, value=declared.default if value is None else value, actor=actor
    )


def knobs_progress(workspace: Workspace) -> dict[str, dict[str, Any]]:
    """How far each change with side effects has got, by knob name."""
    return {
        k.name: k.progress(workspace=workspace) for k in _knobs.values() if k.progress is not None
    }


def workspace_settings_update(
    *, workspace: Workspace, values: Mapping[str, Any], actor: Actor | None = None
) -> list[str]:
    """Set knobs by name; None resets one to its default. Returns the names that changed.

    All or nothing: one refused value and nothing is written. Keys of
    `Workspace.settings` that are not knobs are left as they are.
    """
    cleaned = workspace_settings_clean(values)
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        settings = dict(locked.settings or {})
        changed = []
        for name, value in cleaned.items():
            if settings.get(name) == value:
                continue
            if value is None:
                settings.pop(name, None)
            else:
                settings[name] = value
            changed.append(name)
        if changed:
            before = {name: (locked.settings or {}).get(name) for name in changed}
            locked.settings = settings
            locked.save(update_fields=["settings"])
            audit_record(
                actor=actor,
                workspace=locked,
                action="workspace.settings",
                target="workspace",
                before=json.dumps(before, sort_keys=True),
                after=json.dumps({name: settings.get(name) for name in changed}, sort_keys=True),
                detail={"changed": changed},
            )
    workspace.settings = locked.settings
    return changed
