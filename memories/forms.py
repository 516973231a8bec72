from __future__ import annotations

from django import forms

from memories.core import ARCHIVE_CATEGORIES
from memories.models import Memory


class MemorySearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=500, label="Search")
    compartment = forms.CharField(required=False, max_length=64)
    source = forms.ChoiceField(required=False, choices=[("", "any source"), *Memory.Source.choices])
    app = forms.CharField(required=False, max_length=64)
    status = forms.ChoiceField(
        required=False,
        choices=[("current", "current"), ("superseded", "superseded"), ("all", "all")],
    )
    page = forms.IntegerField(required=False, min_value=1)


class MemoryEditForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), max_length=20000)
    compartment = forms.CharField(required=False, max_length=64)


class SupersedeForm(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=20000, label="Replace with"
    )


class CoreEditForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("add", "add"), ("replace", "replace"), ("remove", "remove")]
    )
    content = forms.CharField(required=False, max_length=20000)
    old_text = forms.CharField(required=False, max_length=20000)


class CoreMoveForm(forms.Form):
    old_text = forms.CharField(max_length=20000)
    category = forms.ChoiceField(choices=[(c, c) for c in ARCHIVE_CATEGORIES])
