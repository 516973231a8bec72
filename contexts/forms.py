from __future__ import annotations

from django import forms

from contexts.models import ApiKey


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
