"""The YAML subset of `.dsh/context.yaml`: what it reads, what it refuses and
on which line, and — by property tests — that whatever it accepts means what
`yaml.safe_load` says it means."""

from __future__ import annotations

import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contexts.declarations import (
    MAX_DECLARATION_BYTES,
    DeclarationError,
    ParsedDeclaration,
    parse_declaration,
)


def test_it_reads_the_designs_example():
    parsed = parse_declaration(
        "# <dir>/.dsh/context.yaml\n"
        "systemPrompt: # identity\n"
        "- AGENT.md\n"
        "- ../shared/PROTOCOL.md\n"
        "preload: # perception\n"
        "  - memory/status.md\n"
        "  - memory/${device}/history.md\n"
        "inherit: false # the default\n"
    )
    assert parsed == ParsedDeclaration(
        system_prompt=("AGENT.md", "../shared/PROTOCOL.md"),
        preload=("memory/status.md", "memory/${device}/history.md"),
        inherit=False,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ParsedDeclaration()),
        ("---\n# only a comment\n...\n", ParsedDeclaration()),
        (
            "systemPrompt: [A.md, 'B c.md', \"D\\te.md\",]",
            ParsedDeclaration(("A.md", "B c.md", "D\te.md")),
        ),
        ("systemPrompt: []\npreload:\ninherit:", ParsedDeclaration()),
        ("preload: memory/status.md", ParsedDeclaration(preload=("memory/status.md",))),
        ("inherit: true", ParsedDeclaration(inherit=True)),
        ("inherit: Yes", ParsedDeclaration(inherit=True)),
        ("inherit: off", ParsedDeclaration(inherit=False)),
        (
            "\ufeffinherit: true\r\npreload:\r\n  - a #comment\r\n",
            ParsedDeclaration(preload=("a",), inherit=True),
        ),
        ("'preload': ['it''s.md']", ParsedDeclaration(preload=("it's.md",))),
        (
            "preload:\n- C:\\notes.md\n- a:b\n- '#hash.md'\n",
            ParsedDeclaration(preload=("C:\\notes.md", "a:b", "#hash.md")),
        ),
        ("preload:\n  - 中文/记忆.md\n", ParsedDeclaration(preload=("中文/记忆.md",))),
        (
            "other: 1\npreload: [a]\n",
            ParsedDeclaration(preload=("a",), unknown_keys=(("other", 1),)),
        ),
    ],
)
def test_it_reads_the_subset(text, expected):
    assert parse_declaration(text) == expected


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("systemPrompt:\n  - A.md\n preload: [x]\n", 3, "unexpected indentation"),
        ("  preload: [x]\ninherit: true\n", 2, "indented less than the keys"),
        ("preload:\n  - a\n    - b\n", 3, "same column"),
        ("preload:\n  - a\n   continued\n", 3, "unexpected indentation"),
        ("preload: [a, b\n", 1, "must close on the line it opens"),
        ("preload: ['a\n", 1, "quoted string must close"),
        ("a: &x [1]\nb: *x\n", 1, "anchors, aliases and tags"),
        ("preload:\n  - *x\n", 2, "anchors, aliases and tags"),
        ("preload: !!str a\n", 1, "anchors, aliases and tags"),
        ("preload: |\n  a\n", 1, "block scalars"),
        ("preload: {a: b}\n", 1, "flow mappings"),
        ("preload:\n  - a: b\n", 2, "nested mappings"),
        ("preload:\n  - - a\n", 2, "nested lists"),
        ("preload:\n  -\n", 2, "empty list item"),
        ("preload: [memory/${device}.md]\n", 1, "must be quoted inside [...]"),
        ("preload: [a]\npreload: [b]\n", 2, "appears twice (first on line 1)"),
        ("inherit: maybe\n", 1, "inherit must be true or false"),
        ("inherit: 'true'\n", 1, "inherit must be true or false"),
        ("inherit: [true]\n", 1, "not a list"),
        ("just some text\n", 1, "expected 'key: value'"),
        ("preload:value\n", 1, "put a space after ':'"),
        ("- a\n", 1, "must follow a 'key:' line"),
        ("\tpreload: [a]\n", 1, "tabs cannot indent"),
        ("preload: [a]\n\t\n", 2, "tabs cannot indent"),
        ("preload: a\tb\n", 1, "a tab outside quotes"),
        ("preload:\n-\ta\n", 2, "a tab outside quotes"),
        ("preload: [a]\t# c\n", 1, "a tab outside quotes"),
        ('preload: "\\q"\n', 1, "unknown escape"),
        ("preload: [a]\n---\ninherit: true\n", 2, "one YAML document"),
        ("preload: [a]\n...\ninherit: true\n", 3, "one YAML document"),
        ("%YAML 1.2\n---\n", 1, "directives"),
        ("preload: [a]\x00\n", 1, "control character U+0000"),
        ("a: 1\n\n\npreload: [a]\u2028\n", 4, "U+2028"),
        (": value\n", 1, "a key is missing"),
    ],
)
def test_it_refuses_what_it_does_not_read_naming_the_line(text, line, message):
    with pytest.raises(DeclarationError) as caught:
        parse_declaration(text, path="/p/.dsh/context.yaml")
    assert caught.value.line == line
    assert message in caught.value.message
    assert str(caught.value).startswith(f"/p/.dsh/context.yaml:{line}: ")


def test_a_yaml_bomb_is_refused_at_its_first_anchor():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    bomb = "\n".join(lines) + "\n"
    yaml.safe_load(bomb)  # PyYAML itself reads it (lazily); we refuse before anything expands
    with pytest.raises(DeclarationError) as caught:
        parse_declaration(bomb)
    assert caught.value.line == 1 and "anchors" in caught.value.message


def test_an_oversized_declaration_is_refused_before_parsing():
    text = "preload:\n" + "  - memory/file.md\n" * (MAX_DECLARATION_BYTES // 10)
    with pytest.raises(DeclarationError) as caught:
        parse_declaration(text)
    assert "at most 65536 bytes" in caught.value.message
    assert caught.value.line > 1  # the line where the limit is crossed


# --- properties ----------------------------------------------------------------

# Path-like items: what a declaration lists. Plain-scalar rendering is only
# used for items YAML would read back as the same string.
PATH_CHARS = string.ascii_letters + string.digits + "._-/ ${}()#:'\"\\中文记忆"
paths = st.text(alphabet=PATH_CHARS, min_size=1, max_size=30).filter(lambda p: p.strip())


def _plain_ok(item: str, *, flow: bool) -> bool:
    """Whether YAML reads `item`, unquoted, back as this very string."""
    if item != item.strip() or item[0] in "-?:" or "\\" in item or "'" in item or '"' in item:
        return False  # (a leading -?: is refused by the subset where YAML is lax)
    try:
        return yaml.safe_load(f"k: [{item}]" if flow else f"k:\n- {item}") == {"k": [item]}
    except yaml.YAMLError:
        return False


def _quote(item: str, style: str) -> str:
    if style == "single":
        return "'" + item.replace("'", "''") + "'"
    return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def declarations(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    keys = draw(st.permutations(["systemPrompt", "preload", "inherit"]))
    keys = keys[: draw(st.integers(0, 3))]
    lines = []
    if draw(st.booleans()):
        lines.append("---")
    expected: dict[str, object] = {}
    for key in keys:
        comment = draw(st.sampled_from(["", "  # note", " #x\t"]))
        if key == "inherit":
            value = draw(st.booleans())
            word = draw(
                st.sampled_from(["true", "True", "yes", "on"] if value else ["false", "No", "off"])
            )
            lines.append(f"{key}: {word}{comment}")
            expected[key] = value
            continue
        items = draw(st.lists(paths, max_size=5))
        expected[key] = items
        style = draw(st.sampled_from(["block", "flow"]))
        rendered = []
        for item in items:
            quoting = draw(st.sampled_from(["plain", "single", "double"]))
            if quoting == "plain" and not _plain_ok(item, flow=style == "flow"):
                quoting = "single"
            rendered.append(item if quoting == "plain" else _quote(item, quoting))
        if style == "flow":
            lines.append(f"{key}: [{', '.join(rendered)}]{comment}")
        else:
            lines.append(f"{key}:{comment}")
            indent = " " * draw(st.integers(0, 4))
            lines += [f"{indent}- {item}" for item in rendered]
            if not items:
                expected[key] = None  # `key:` with nothing under it
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# a comment", "   ", "  # indented"])))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"])), expected


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(declarations())
def test_what_it_reads_agrees_with_yaml_safe_load(case):
    text, expected = case
    parsed = parse_declaration(text)
    loaded = yaml.safe_load(text) or {}
    assert loaded == expected
    assert list(parsed.system_prompt) == (loaded.get("systemPrompt") or [])
    assert list(parsed.preload) == (loaded.get("preload") or [])
    assert parsed.inherit == bool(loaded.get("inherit"))


@settings(max_examples=500)
@given(st.text(max_size=300))
def test_any_text_parses_or_fails_with_a_line_inside_it(text):
    try:
        parsed = parse_declaration(text)
    except DeclarationError as exc:
        lines = text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
        assert 1 <= exc.line <= lines
    else:
        assert all(isinstance(p, str) and p for p in parsed.system_prompt + parsed.preload)


_yaml_alphabet = st.sampled_from(
    [*"ab: -[]{},'\"#&*!|>\n\t\\${}.中", "  ", "\n  - ", ": [", "inherit", "preload"]
)


@settings(max_examples=500)
@given(st.lists(_yaml_alphabet, max_size=40).map("".join))
def test_yaml_shaped_noise_never_crashes_and_agrees_when_accepted(text):
    try:
        parsed = parse_declaration(text)
    except DeclarationError:
        return
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        pytest.fail(f"accepted what YAML refuses: {text!r}")
    loaded = loaded or {}
    assert isinstance(loaded, dict)
    for key, value in (("systemPrompt", parsed.system_prompt), ("preload", parsed.preload)):
        raw = loaded.get(key)
        expected = [] if raw is None else raw if isinstance(raw, list) else [raw]
        assert list(value) == [str(v) for v in expected]


@given(st.lists(paths, max_size=8), st.lists(paths, max_size=8), st.booleans())
def test_a_flow_rendering_round_trips(system_prompt, preload, inherit):
    text = (
        f"systemPrompt: [{', '.join(_quote(p, 'double') for p in system_prompt)}]\n"
        f"preload: [{', '.join(_quote(p, 'single') for p in preload)}]\n"
        f"inherit: {str(inherit).lower()}\n"
    )
    assert parse_declaration(text) == ParsedDeclaration(
        tuple(system_prompt), tuple(preload), inherit
    )
