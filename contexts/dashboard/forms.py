from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from contexts.declarations import ENV_PREFIX
from contexts.errors import Invalid
from contexts.models import ApiKey, AuditEvent, Membership
from contexts.tenancy.knobs import Knob, human


class SessionFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Session id or directory")
    app = forms.CharField(required=False, max_length=64)
    state = forms.ChoiceField(
        required=False, choices=[("", "open or ended"), ("open", "open"), ("ended", "ended")]
    )


class WorkspaceForm(forms.Form):
    slug = forms.SlugField(max_length=64, help_text="Lower-case letters, digits, '-' and '_'.")
    name = forms.CharField(max_length=200, required=False)


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False)
    scope = forms.ChoiceField(choices=ApiKey.Scope.choices, initial=ApiKey.Scope.WRITE)
    workspace = forms.ChoiceField(required=False, help_text="Restrict the key to one workspace.")

    def __init__(self, *args: object, workspace_choices: list[tuple[str, str]], **kwargs: object):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["workspace"].choices = [("", "All my workspaces"), *workspace_choices]  # type: ignore[attr-defined]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.EDITOR)


class MemberRemoveForm(forms.Form):
    username = forms.CharField(max_length=150)


class DeclarationForm(forms.Form):
    directory = forms.CharField(
        max_length=4096,
        strip=False,
        help_text="The declaring directory on the agents' machines, absolute (the parent of .dsh).",
    )
    source_text = forms.CharField(
        required=False,
        strip=False,
        label="Declaration (YAML)",
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "code"}),
    )


class DocumentForm(forms.Form):
    path = forms.CharField(max_length=4096, strip=False, help_text="Absolute path of the file.")
    content = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "class": "code"}),
    )


class AssemblyPreviewForm(forms.Form):
    directory = forms.CharField(
        max_length=4096, strip=False, help_text="Where the session would open, absolute."
    )
    device = forms.CharField(
        max_length=200, required=False, help_text="The value of ${device}, if the agent has one."
    )
    hostname = forms.CharField(max_length=200, required=False)
    env = forms.CharField(
        required=False,
        label="Environment",
        help_text=f"One {ENV_PREFIX}NAME=value per line.",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "code"}),
    )

    def clean_directory(self) -> str:
        directory: str = self.cleaned_data["directory"]
        if not directory.startswith("/"):
            raise forms.ValidationError("Give an absolute path, starting with /.")
        return directory

    def clean_env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        for number, line in enumerate(self.cleaned_data["env"].splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            name = name.strip()
            if not sep or not name:
                raise forms.ValidationError(f"Line {number}: write NAME=value.")
            if not name.startswith(ENV_PREFIX):
                raise forms.ValidationError(
                    f"Line {number}: only {ENV_PREFIX}* variables are read, not {name}."
                )
            env[name] = value
        return env


def _number(knob: Knob, raw: str) -> float | int:
    """What a person typed, read as a number: "20,000", "20 000" and "2e4" all work."""
    text = raw.strip().replace(",", "").replace("_", "").replace(" ", "").replace("\u202f", "")
    try:
        return int(text) if text.lstrip("+-").isdigit() else float(text)
    except ValueError:
        raise forms.ValidationError(
            f"{knob.label} takes {knob.expected()}; “{raw.strip()}” is not a number."
        ) from None


class KnobField(forms.Field):
    """One knob as a form field; refusals carry the registry's words."""

    def __init__(self, knob: Knob, **kwargs: Any) -> None:
        self.knob = knob
        widget: forms.Widget
        if knob.kind in ("bool", "choice"):
            shown = dict(knob.choices).get(knob.default, human(knob.default))
            options = knob.choices or (("on", "on"), ("off", "off"))
            widget = forms.Select(choices=[("", f"default ({shown})"), *options])
        else:
            widget = forms.TextInput(
                attrs={
                    "inputmode": "numeric" if knob.kind == "int" else "decimal",
                    "placeholder": f"default: {human(knob.default)}",
                    "size": 12,
                    "autocomplete": "off",
                }
            )
        super().__init__(required=False, widget=widget, label=knob.label, **kwargs)

    def to_python(self, value: Any) -> Any:
        raw = "" if value is None else str(value).strip()
        if not raw:
            return None
        if self.knob.kind == "bool":
            typed: Any = {"on": True, "off": False}.get(raw, raw)
        elif self.knob.kind in ("choice", "text"):
            typed = raw
        else:
            typed = _number(self.knob, raw)
        try:
            return self.knob.clean(typed)
        except Invalid as exc:
            raise forms.ValidationError(exc.detail) from None


class WorkspaceSettingsForm(forms.Form):
    """One field per editable knob; a blank field means "use the default"."""

    def __init__(self, *args: Any, knobs: list[Knob], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.knobs = [k for k in knobs if k.editable]
        for knob in self.knobs:
            self.fields[knob.name] = KnobField(knob)

    @staticmethod
    def initial_for(knobs: list[Knob], settings: dict[str, Any] | None) -> dict[str, str]:
        """The stored values as a person reads them in the fields (20,000; on)."""
        initial: dict[str, str] = {}
        for knob in knobs:
            value = knob.stored_in(settings)
            if value is not None:
                initial[knob.name] = value if knob.kind in ("choice", "text") else human(value)
        return initial

    def values(self) -> dict[str, Any]:
        """Knob name -> typed value, None for "back to the default"."""
        return {knob.name: self.cleaned_data.get(knob.name) for knob in self.knobs}


class ActivityFilterForm(forms.Form):
    """The Activity page's filters: the values that occur, not free text."""

    user = forms.ChoiceField(required=False, label="Who")
    action = forms.ChoiceField(required=False, label="What")
    origin = forms.ChoiceField(
        required=False,
        label="From",
        choices=[("", "anywhere"), *AuditEvent.Origin.choices],
    )

    def __init__(
        self, *args: Any, actions: Sequence[str] = (), members: Sequence[str] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        families = sorted({a.split(".")[0] for a in actions})
        self.fields["action"].choices = [  # type: ignore[attr-defined]
            ("", "any change"),
            *((f, f"{f}.*") for f in families),
            *((a, a) for a in actions),
        ]
        self.fields["user"].choices = [("", "anyone"), *((m, m) for m in members)]  # type: ignore[attr-defined]
