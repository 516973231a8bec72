from __future__ import annotations

from django import forms

from memories.core import ARCHIVE_CATEGORIES
from memories.embeddings import BACKENDS
from memories.models import Memory

# Ages offered by the list's "created within" / "older than" filters, in days.
AGES = [("", "any time"), ("1", "a day"), ("7", "a week"), ("30", "30 days"), ("90", "90 days"), ("365", "a year")]  # fmt: skip

SORTS = [
    ("", "relevance (when searching), else newest"),
    ("newest", "newest first"),
    ("oldest", "oldest first"),
    ("updated", "recently updated"),
    ("accessed", "most accessed"),
    ("retention", "retention, fading first"),
]


_REFILTER = forms.Select(attrs={"class": "refilter"})


class MemorySearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=500, label="Search")
    # The REST list's `contains` filter. Not named so here: a form control
    # named "contains" shadows the form element's Node.contains() in the DOM.
    substring = forms.CharField(required=False, max_length=200, label="Text contains")
    compartment = forms.CharField(required=False, max_length=64)
    source = forms.ChoiceField(required=False, choices=[("", "any source"), *Memory.Source.choices])
    app = forms.CharField(required=False, max_length=64)
    state_key = forms.CharField(required=False, max_length=200, label="State key")
    status = forms.ChoiceField(
        required=False,
        choices=[
            ("current", "current"),
            ("superseded", "superseded"),
            ("all", "all"),
            ("forgotten", "forgotten"),  # the trash: restorable until the cleanup purges them
        ],
    )
    # `refilter`: a change re-runs the list (see memory_list.html).
    within = forms.ChoiceField(
        required=False, choices=AGES, label="Created within", widget=_REFILTER
    )
    older = forms.ChoiceField(required=False, choices=AGES, label="Older than", widget=_REFILTER)
    sort = forms.ChoiceField(required=False, choices=SORTS, widget=_REFILTER)
    page = forms.IntegerField(required=False, min_value=1)


class ConsolidateForm(forms.Form):
    """A conclusion resting on the memories ticked in the list (`ids`, any number)."""

    conclusion = forms.CharField(
        required=False, max_length=20000, widget=forms.Textarea(attrs={"rows": 3})
    )
    compartment = forms.CharField(required=False, max_length=64)

    def ids(self) -> list[int]:
        """The ticked ids; anything that is not a number is dropped (the service checks the rest)."""
        values = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        return [int(v) for v in values if str(v).isdigit()]


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


class EmbedderForm(forms.Form):
    backend = forms.ChoiceField(choices=[(b, b) for b in BACKENDS])


class SessionEventFilterForm(forms.Form):
    """The session page's filters: events of one kind, of one turn, naming one memory."""

    kind = forms.ChoiceField(required=False, label="Event type")
    turn = forms.IntegerField(required=False, min_value=1, max_value=10_000_000, label="Turn")
    memory = forms.IntegerField(required=False, min_value=1, label="Memory #")

    def __init__(self, *args: object, kinds: list[str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["kind"].choices = [("", "every type"), *((k, k) for k in kinds)]  # type: ignore[attr-defined]


class ForgetForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        required=False,
        label="Why",
        help_text="Kept with the tombstone and in the audit trail.",
    )


class ConflictResolveForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[
            ("consolidate", "Consolidated"),
            ("supersede", "Superseded"),
            ("keep_both", "Kept both"),
            ("dismiss", "Dismissed"),
        ],
        widget=forms.RadioSelect,
    )
    conclusion = forms.CharField(required=False, max_length=20_000, widget=forms.Textarea)
    keep = forms.IntegerField(required=False)

    def ids(self) -> list[int]:
        raw = (self.data.get("ids") or "").replace(",", " ").split()
        return [int(x) for x in raw if x.isdigit()][:50]


class FadingResolveForm(forms.Form):
    id = forms.IntegerField(min_value=1)
    decision = forms.ChoiceField(
        choices=[("keep", "Keep (pin)"), ("let_fade", "Let it fade"), ("forget", "Forget")]
    )
