"""One registry of knobs: everything the code reads is registered, with words
for a person, and everything registered is read somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contexts.errors import Invalid
from contexts.tenancy.knobs import UnknownKnob, human, knob, knob_spec, registered_knobs

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    p
    for app in ("contexts", "memories", "skills", "memflow_site")
    for p in (ROOT / app).rglob("*.py")
    if "migrations" not in p.parts
]
# A literal knob name handed to the reader: knob(ws, "name"), knob_spec("name").
READ = re.compile(r"\b(?:knob|knob_spec)\(\s*(?:[\w.]+,\s*)?\"(\w+)\"")
# Keys of `Workspace.settings` read by hand, bypassing the reader.
RAW = re.compile(r"\.settings or \{\}\)\.get\(\s*(?:[\w.]*KEY|\"(\w+)\")")
# Workspace state with services of its own (resolver options, mutes, project roots), and
# the embedder choice, which its service compares as stored, under its lock.
STATE = {"", "muted_until", "muted_users", "project_roots", "embedder"}
REGISTRY_FILES = {"knobs.py", "conf.py"}


def _code() -> dict[Path, str]:
    return {p: p.read_text() for p in SOURCES}


def test_every_knob_the_code_reads_is_registered():
    registered = {k.name for k in registered_knobs()}
    read = {
        (p.relative_to(ROOT), name) for p, text in _code().items() for name in READ.findall(text)
    }
    assert len(read) > 30  # the scan finds the readers (a broken pattern would find none)
    unregistered = sorted((str(p), name) for p, name in read if name not in registered)
    assert unregistered == []


def test_no_code_reads_a_knob_around_the_reader():
    found = [(p, name) for p, text in _code().items() for name in RAW.findall(text)]
    assert len(found) > 3  # the scan sees the state readers
    assert sorted((str(p.relative_to(ROOT)), n) for p, n in found if n not in STATE) == []


def test_every_registered_knob_is_read_somewhere():
    code = "\n".join(text for p, text in _code().items() if p.name not in REGISTRY_FILES)
    unread = [k.name for k in registered_knobs() if f'"{k.name}"' not in code]
    assert unread == []


def test_every_knob_speaks_to_a_person():
    for k in registered_knobs():
        assert k.label and k.label != k.name and "_" not in k.label, k.name
        assert len(k.help) > 25 and "Default" not in k.help, k.name
        k.clean(k.default)  # the default fits its own bounds
        if k.kind in ("int", "float"):
            assert k.minimum is not None and k.maximum is not None, k.name
        if k.kind == "choice":
            assert k.default in dict(k.choices), k.name


def test_asking_for_an_unregistered_knob_is_an_error(acme):
    with pytest.raises(UnknownKnob):
        knob(acme, "hook_recall_kk")


def test_the_reader_gives_the_typed_value_in_force(acme):
    assert knob(acme, "hook_recall_k") == 12 and knob(None, "skills_generation") == "auto"
    acme.settings = {"hook_recall_k": 3, "max_text_chars": "lots", "skills_generation": "confirm"}
    assert knob(acme, "hook_recall_k") == 3
    assert knob(acme, "max_text_chars") == 20_000  # an unusable stored value: the default holds
    assert knob(acme, "skills_generation") == "confirm"


def test_values_are_written_for_people():
    assert human(20_000) == "20,000" and human(20_000.0) == "20,000"
    assert human(0.1 / 3) == "0.03333" and human(0.9) == "0.9" and human(True) == "on"
    assert knob_spec("max_text_chars").shown(20_000) == "20,000 characters"
    assert knob_spec("max_text_chars").bounds() == "100 to 1,000,000"
    assert knob_spec("skills_generation").shown("off") == "never draft one"


def test_refusals_name_the_knob_in_words():
    with pytest.raises(Invalid) as refused:
        knob_spec("cleanup_threshold").clean(2)
    assert refused.value.code == "invalid_setting"
    assert refused.value.extra == {"setting": "cleanup_threshold"}
    assert refused.value.detail == (
        "Cleanup threshold (cleanup_threshold) takes a number from 0 to 1; 2 is out of bounds."
    )
    with pytest.raises(Invalid, match="whole number of memories from 1 to 100"):
        knob_spec("hook_recall_k").clean(2.5)
    with pytest.raises(Invalid, match="on or off"):
        knob_spec("projection").clean(1)
    with pytest.raises(Invalid, match="one of auto, confirm, off"):
        knob_spec("skills_generation").clean("sometimes")


def test_a_zero_that_turns_something_off_says_so():
    assert knob_spec("archive_ttl_preferences_days").shown(0) == "kept for good"
    assert knob_spec("archive_ttl_facts_days").shown(90) == "90 days"
    assert knob_spec("skills_trigger_seconds").shown(0) == "off"
    assert knob_spec("skills_max").shown(0) == "no cap"


def test_one_of_a_unit_is_said_in_the_singular():
    assert knob_spec("hook_recall_k").shown(1) == "1 memory"
    assert knob_spec("summary_max_depth").shown(1) == "1 level"
    assert knob_spec("skills_trigger_tool_calls").shown(1) == "1 tool call"
