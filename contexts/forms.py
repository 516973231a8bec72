from __future__ import annotations

from typing import Any

from django import forms

from contexts.dashboard_services import Knob
from contexts.declarations import ENV_PREFIX
from contexts.models import ApiKey, Membership


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


_TRI_STATE = [("", "default"), ("on", "on"), ("off", "off")]


class WorkspaceSettingsForm(forms.Form):
    """One field per editable knob; a blank field means "use the default"."""

    def __init__(self, *args: Any, knobs: list[Knob], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.knobs = [k for k in knobs if k.editable]
        for knob in self.knobs:
            default = (
                ("on" if knob.default else "off") if knob.kind == "bool" else f"{knob.default:.4g}"
            )
            help_text = f"{knob.help} Default: {default}.".strip()
            field: forms.Field
            if knob.kind == "bool":
                field = forms.ChoiceField(choices=_TRI_STATE, required=False)
            elif knob.kind == "int":
                field = forms.IntegerField(
                    required=False,
                    min_value=int(knob.minimum) if knob.minimum is not None else None,
                    max_value=int(knob.maximum) if knob.maximum is not None else None,
                )
            else:
                field = forms.FloatField(
                    required=False, min_value=knob.minimum, max_value=knob.maximum
                )
                field.widget.attrs["step"] = "any"
            field.label = knob.name
            field.help_text = help_text
            self.fields[knob.name] = field

    @staticmethod
    def initial_for(knobs: list[Knob], settings: dict[str, Any]) -> dict[str, Any]:
        initial: dict[str, Any] = {}
        for knob in knobs:
            value = (settings or {}).get(knob.name)
            if value is None:
                continue
            initial[knob.name] = ("on" if value else "off") if knob.kind == "bool" else value
        return initial

    def values(self) -> dict[str, Any]:
        """Knob name -> typed value, None for "back to the default"."""
        values: dict[str, Any] = {}
        for knob in self.knobs:
            raw = self.cleaned_data.get(knob.name)
            if knob.kind == "bool":
                values[knob.name] = {"on": True, "off": False}.get(raw or "")
            else:
                values[knob.name] = raw
        return values
