"""Every rule of directory declarations, on real trees in a temporary folder.

Each tree is assembled twice — from the disk and from the same files stored
in a workspace — and the two must be byte-identical (`assemble_both`)."""

from __future__ import annotations

import pytest

from contexts.declarations import (
    DEVICE_MAX_LEVELS,
    Assembly,
    ContextConfig,
    DiskSource,
    Preload,
    assemble,
    sha256_text,
)
from tests.contexts.trees import HOSTNAME, assemble_both, write_tree

pytestmark = pytest.mark.django_db

DECL = ".dsh/context.yaml"


def identity(assembly):
    return [(s.order, s.text) for s in assembly.sections if s.kind == "identity"]


def the_preload(assembly: Assembly) -> Preload:
    assert assembly.preload is not None
    return assembly.preload


def preload_files(assembly):
    return [f.display for f in the_preload(assembly).files] if assembly.preload else []


# --- declarations and discovery ------------------------------------------------


def test_it_injects_declared_sections_in_order_and_one_preload_message(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "proj/.dsh/context.yaml": "systemPrompt:\n  - AGENT.md\n  - ../shared/PROTOCOL.md\n"
            "preload:\n  - memory/status.md\n  - memory/history.md\n",
            "proj/AGENT.md": "You are the rocket agent.\n",
            "shared/PROTOCOL.md": "Write things down.\n",
            "proj/memory/status.md": "status: green\n",
            "proj/memory/history.md": "day 1: launched\n",
        },
    )
    assembly = assemble_both(acme, root, root / "proj")
    assert [(s.name, s.order, s.source) for s in assembly.sections] == [
        ("identity:0", 10, str(root / "proj/AGENT.md")),
        ("identity:1", 11, str(root / "shared/PROTOCOL.md")),
    ]
    assert assembly.sections[0].text == "You are the rocket agent.\n"
    assert assembly.sections[0].sha256 == sha256_text("You are the rocket agent.\n")
    assert [d.path for d in assembly.declarations] == [str(root / "proj" / DECL)]
    text = the_preload(assembly).text
    assert text.index("=== memory/status.md ===\nstatus: green") < text.index(
        "=== memory/history.md ===\nday 1: launched"
    )
    assert preload_files(assembly) == ["memory/status.md", "memory/history.md"]
    assert the_preload(assembly).files[0].sha256 == sha256_text("status: green\n")
    assert assembly.notes == () and assembly.warnings == ()


def test_without_inherit_only_the_nearest_declaration_counts(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".dsh/context.yaml": "systemPrompt: [OUTER.md]\n",
            "OUTER.md": "outer",
            "app/.dsh/context.yaml": "systemPrompt: [INNER.md]\n",
            "app/INNER.md": "inner",
        },
    )
    assembly = assemble_both(acme, root, root / "app")
    assert identity(assembly) == [(10, "inner")]
    assert [d.directory for d in assembly.declarations] == [str(root / "app")]


def test_with_inherit_outer_declarations_come_first_until_one_stops(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".dsh/context.yaml": "systemPrompt: [TOP.md]\n",
            "TOP.md": "top",
            "org/.dsh/context.yaml": "systemPrompt: [ORG.md]\npreload: [org.md]\n",
            "org/ORG.md": "org",
            "org/org.md": "org notes",
            "org/team/.dsh/context.yaml": "systemPrompt: [TEAM.md]\ninherit: true\n",
            "org/team/TEAM.md": "team",
            "org/team/app/.dsh/context.yaml": "systemPrompt:\n- APP.md\npreload:\n- app.md\n"
            "inherit: yes\n",
            "org/team/app/APP.md": "app",
            "org/team/app/app.md": "app notes",
        },
    )
    assembly = assemble_both(acme, root, root / "org/team/app")
    # org does not inherit, so the top declaration is not reached.
    assert identity(assembly) == [(10, "org"), (11, "team"), (12, "app")]
    assert [d.directory for d in assembly.declarations] == [
        str(root / "org"),
        str(root / "org/team"),
        str(root / "org/team/app"),
    ]
    assert [d.inherit for d in assembly.declarations] == [False, True, True]
    assert preload_files(assembly) == ["org.md", "app.md"]


def test_nearest_discovery_walks_up_from_a_subdirectory(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {"proj/.dsh/context.yaml": "systemPrompt: [AGENT.md]\n", "proj/AGENT.md": "agent"},
    )
    (root / "proj/src/deep").mkdir(parents=True)
    assembly = assemble_both(acme, root, root / "proj/src/deep")
    assert identity(assembly) == [(10, "agent")]
    # Paths are relative to the declaring directory, not to the session's.
    assert assembly.sections[0].source == str(root / "proj/AGENT.md")


def test_cwd_discovery_only_sees_the_directorys_own_declaration(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "proj/.dsh/context.yaml": "systemPrompt: [AGENT.md]\n",
            "proj/AGENT.md": "agent",
            "proj/sub/memory/notes.md": "sub notes",
        },
    )
    config = ContextConfig(discover="cwd")
    assembly = assemble_both(acme, root, root / "proj/sub", config=config)
    assert assembly.declarations == ()
    assert assembly.sections == ()
    assert preload_files(assembly) == ["memory/notes.md"]  # no declaration here: legacy
    here = assemble_both(acme, root, root / "proj", config=config)
    assert identity(here) == [(10, "agent")]


def test_an_inheriting_declaration_still_merges_its_ancestors_in_cwd_mode(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".dsh/context.yaml": "systemPrompt: [TOP.md]\n",
            "TOP.md": "top",
            "app/.dsh/context.yaml": "systemPrompt: [APP.md]\ninherit: true\n",
            "app/APP.md": "app",
        },
    )
    assembly = assemble_both(acme, root, root / "app", config=ContextConfig(discover="cwd"))
    assert identity(assembly) == [(10, "top"), (11, "app")]


def test_a_declaration_file_can_be_renamed_in_the_options(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "proj/.agent/ctx.yaml": "systemPrompt: [AGENT.md]\n",
            "proj/.dsh/context.yaml": "systemPrompt: [OTHER.md]\n",
            "proj/AGENT.md": "agent",
            "proj/OTHER.md": "other",
        },
    )
    config = ContextConfig(declaration_file=".agent/ctx.yaml")
    assembly = assemble_both(acme, root, root / "proj", config=config)
    assert identity(assembly) == [(10, "agent")]


def test_an_empty_declaration_still_replaces_the_legacy_memory(acme, tmp_path):
    root = write_tree(tmp_path, {".dsh/context.yaml": "# nothing yet\n", "memory/notes.md": "n"})
    assembly = assemble_both(acme, root, root)
    assert len(assembly.declarations) == 1
    assert assembly.sections == () and assembly.preload is None


def test_a_file_listed_twice_is_injected_once(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".dsh/context.yaml": "systemPrompt: [P.md]\npreload: [m.md]\n",
            "P.md": "protocol",
            "m.md": "memo",
            "app/.dsh/context.yaml": "systemPrompt: [../P.md, A.md]\npreload: [../m.md]\n"
            "inherit: true\n",
            "app/A.md": "app",
        },
    )
    assembly = assemble_both(acme, root, root / "app")
    assert identity(assembly) == [(10, "protocol"), (11, "app")]
    assert preload_files(assembly) == ["m.md"]
    assert any("listed more than once" in note for note in assembly.notes)


def test_an_unreadable_identity_file_is_a_note_not_a_section(acme, tmp_path):
    root = write_tree(
        tmp_path, {".dsh/context.yaml": "systemPrompt: [MISSING.md, A.md]\n", "A.md": "a"}
    )
    assembly = assemble_both(acme, root, root)
    assert identity(assembly) == [(10, "a")]
    assert f"cannot read {root}/MISSING.md (MISSING.md): no such file" in assembly.notes


def test_section_order_base_and_max_sections(acme, tmp_path):
    files = {f"S{i}.md": f"s{i}" for i in range(5)}
    files[".dsh/context.yaml"] = "systemPrompt: [S0.md, S1.md, S2.md, S3.md, S4.md]\n"
    root = write_tree(tmp_path, files)
    config = ContextConfig(section_order_base=40, max_sections=3)
    assembly = assemble_both(
        acme, root, root, config=config, env={"DSH_CONTEXT_PARAMS": "narrow it"}
    )
    assert [(s.name, s.order) for s in assembly.sections] == [
        ("identity:0", 40),
        ("identity:1", 41),
        ("identity:2", 42),
        ("params", 43),
    ]
    assert f"{root}/S3.md left out: maxSections is 3" in assembly.notes


# --- ${device} and ${hostname} -------------------------------------------------


def test_device_is_the_first_non_empty_line_of_the_nearest_device_file(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".device": "\n   \n  laptop-7  \nsecond line\n",
            "proj/.dsh/context.yaml": "preload:\n  - memory/${device}/status.md\n",
            "proj/memory/laptop-7/status.md": "laptop status",
        },
    )
    assembly = assemble_both(acme, root, root / "proj")
    assert preload_files(assembly) == ["memory/laptop-7/status.md"]
    assert "laptop status" in the_preload(assembly).text


def test_a_nearer_device_file_wins(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".device": "far",
            "proj/.device": "near",
            "proj/.dsh/context.yaml": "preload: ['${device}.md']\n",
            "proj/near.md": "near file",
        },
    )
    assert preload_files(assemble_both(acme, root, root / "proj")) == ["near.md"]


@pytest.mark.parametrize(
    ("levels", "found"), [(DEVICE_MAX_LEVELS - 1, True), (DEVICE_MAX_LEVELS, False)]
)
def test_the_device_lookup_examines_at_most_64_directories(acme, tmp_path, levels, found):
    deep = "/".join(f"l{i}" for i in range(levels))
    root = write_tree(
        tmp_path,
        {
            ".device": "rooted",
            f"{deep}/.dsh/context.yaml": "systemPrompt: ['${device}.md']\n",
            f"{deep}/rooted.md": "from the .device file",
            f"{deep}/devbox.md": "from the host name",
        },
    )
    # The declaring directory is the first examined; `.device` sits `levels` above it.
    assembly = assemble_both(acme, root, root / deep)
    expected = "from the .device file" if found else "from the host name"
    assert identity(assembly) == [(10, expected)]


def test_without_a_device_file_device_is_the_host_name_without_local(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".dsh/context.yaml": "preload: ['memory/${device}.md', 'by-${hostname}.md']\n",
            "memory/devbox.md": "d",
            "by-devbox.md": "h",
        },
    )
    assembly = assemble_both(acme, root, root, hostname="devbox.local")
    assert preload_files(assembly) == ["memory/devbox.md", "by-devbox.md"]


def test_an_empty_device_file_falls_back_to_the_host_name(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".device": "far-away",  # not reached: the nearer, empty file decides
            "proj/.device": "  \n\n",
            "proj/.dsh/context.yaml": "preload: ['${device}.md']\n",
            "proj/devbox.md": "host",
        },
    )
    assert preload_files(assemble_both(acme, root, root / "proj")) == ["devbox.md"]


def test_a_given_device_replaces_the_lookup(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {".device": "disk", ".dsh/context.yaml": "preload: ['${device}.md']\n", "ci.md": "ci"},
    )
    assert preload_files(assemble_both(acme, root, root, device="ci")) == ["ci.md"]


def test_extra_paths_look_for_the_device_from_the_session_directory(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "proj/.dsh/context.yaml": "systemPrompt: [AGENT.md]\n",
            "proj/AGENT.md": "agent",
            "proj/work/.device": "workbench",
            "proj/work/workbench.md": "env extra",
            "proj/work/cfg-workbench.md": "config extra",
        },
    )
    assembly = assemble_both(
        acme,
        root,
        root / "proj/work",
        config=ContextConfig(preload=("cfg-${device}.md",)),
        env={"DSH_CONTEXT_PRELOAD": "${device}.md"},
    )
    assert preload_files(assembly) == ["cfg-workbench.md", "workbench.md"]


def test_unknown_variables_stay_literal_and_show_up_as_unreadable(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {".dsh/context.yaml": "systemPrompt: ['${user}/AGENT.md']\npreload: ['$HOME/x.md']\n"},
    )
    assembly = assemble_both(acme, root, root)
    assert assembly.sections == ()
    assert "unknown variable ${user} in '${user}/AGENT.md' is left as written" in assembly.notes
    assert f"cannot read {root}/${{user}}/AGENT.md (${{user}}/AGENT.md): no such file" in (
        assembly.notes
    )
    # No env expansion: $HOME is just text.
    assert f"(cannot read {root}/$HOME/x.md: no such file)" in the_preload(assembly).text


def test_a_substituted_value_is_not_substituted_again(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".device": "${hostname}",
            ".dsh/context.yaml": "preload: ['${device}.md']\n",
            "${hostname}.md": "literal",
        },
    )
    assert preload_files(assemble_both(acme, root, root)) == ["${hostname}.md"]


def test_without_a_host_name_the_variables_stay_as_written(acme, tmp_path):
    root = write_tree(tmp_path, {".dsh/context.yaml": "preload: ['${hostname}.md']\n"})
    assembly = assemble(source=DiskSource(), directory=str(root), hostname=None)
    assert "${hostname} in '${hostname}.md' is left as written: no host name is known" in (
        assembly.notes
    )


# --- the per-run environment channel -----------------------------------------------


def _env_tree(tmp_path):
    return write_tree(
        tmp_path,
        {
            "proj/.dsh/context.yaml": "systemPrompt: [AGENT.md]\npreload: [memory/status.md]\n",
            "proj/AGENT.md": "agent",
            "proj/memory/status.md": "status",
            "proj/memory/history.md": "history",
            "dispatch/ROLE.md": "role",
            "dispatch/TASK.md": "task",
            "dispatch/brief.md": "brief",
            "dispatch/other.yaml": "systemPrompt: [ROLE.md]\npreload: [brief.md]\n",
        },
    )


def test_dsh_context_ignore_drops_declarations_and_legacy_but_keeps_extras(acme, tmp_path):
    root = _env_tree(tmp_path)
    env = {
        "DSH_CONTEXT_IGNORE": "1",
        "DSH_CONTEXT_SYSTEM_PROMPT": str(root / "dispatch/ROLE.md"),
    }
    assembly = assemble_both(acme, root, root / "proj", env=env)
    assert assembly.declarations == ()
    assert identity(assembly) == [(10, "role")]
    assert assembly.preload is None
    # A directory without a declaration would load memory/: not when ignored.
    (root / "proj/.dsh/context.yaml").unlink()
    assert assemble_both(acme, root, root / "proj", env=env).preload is None
    assert assemble_both(acme, root, root / "proj", env={"DSH_CONTEXT_IGNORE": "0"}).preload


def test_ignore_declaration_in_the_options_does_the_same(acme, tmp_path):
    root = _env_tree(tmp_path)
    assembly = assemble_both(
        acme, root, root / "proj", config=ContextConfig(ignore_declaration=True)
    )
    assert assembly.sections == () and assembly.preload is None


def test_dsh_context_file_replaces_discovery(acme, tmp_path):
    root = _env_tree(tmp_path)
    env = {"DSH_CONTEXT_FILE": str(root / "dispatch/other.yaml")}
    assembly = assemble_both(acme, root, root / "proj", env=env)
    # Not at <dir>/.dsh/context.yaml: its paths are relative to its own folder.
    assert identity(assembly) == [(10, "role")]
    assert preload_files(assembly) == ["brief.md"]
    assert [d.directory for d in assembly.declarations] == [str(root / "dispatch")]


def test_a_dsh_context_file_at_the_usual_place_speaks_for_its_directory(acme, tmp_path):
    root = _env_tree(tmp_path)
    write_tree(root, {"other/.dsh/context.yaml": "systemPrompt: [O.md]\n", "other/O.md": "o"})
    env = {"DSH_CONTEXT_FILE": str(root / "other/.dsh/context.yaml")}
    assembly = assemble_both(acme, root, root / "proj", env=env)
    assert identity(assembly) == [(10, "o")]


def test_a_missing_dsh_context_file_warns_and_proceeds_without_a_declaration(acme, tmp_path):
    root = _env_tree(tmp_path)
    env = {"DSH_CONTEXT_FILE": str(root / "nowhere.yaml")}
    assembly = assemble_both(acme, root, root / "proj", env=env)
    assert assembly.declarations == ()
    assert (
        f"DSH_CONTEXT_FILE names {root}/nowhere.yaml, which is not a file; "
        in (assembly.warnings[0])
    )
    # As if there were no declaration: the legacy memory/ of the directory.
    assert preload_files(assembly) == ["memory/history.md", "memory/status.md"]


def test_extra_system_prompt_and_preload_paths_come_after_the_declared_ones(acme, tmp_path):
    root = _env_tree(tmp_path)
    dispatch = root / "dispatch"
    env = {
        # newline- or path-separator-separated, relative to the session directory
        "DSH_CONTEXT_SYSTEM_PROMPT": f"{dispatch}/ROLE.md\n\n  ../dispatch/TASK.md  ",
        "DSH_CONTEXT_PRELOAD": f"{dispatch}/brief.md:memory/history.md",
    }
    config = ContextConfig(system_prompt=("../dispatch/TASK.md",), preload=("memory/status.md",))
    assembly = assemble_both(acme, root, root / "proj", env=env, config=config)
    assert identity(assembly) == [(10, "agent"), (11, "task"), (12, "role")]
    assert [s.origin for s in assembly.sections] == ["declaration", "config", "env"]
    assert preload_files(assembly) == [
        "memory/status.md",
        f"{dispatch}/brief.md",
        "memory/history.md",
    ]


def test_params_are_injected_verbatim_after_every_identity_section(acme, tmp_path):
    root = _env_tree(tmp_path)
    params = '{"task": "只改测试", "depth": 2}\n'
    env = {
        "DSH_CONTEXT_PARAMS": params,
        "DSH_CONTEXT_SYSTEM_PROMPT": str(root / "dispatch/ROLE.md"),
    }
    assembly = assemble_both(acme, root, root / "proj", env=env)
    last = assembly.sections[-1]
    assert (last.name, last.kind, last.order, last.text) == ("params", "params", 26, params)
    assert last.order > max(s.order for s in assembly.sections if s.kind == "identity")
    text_params = assemble_both(
        acme, root, root / "proj", env={"DSH_CONTEXT_PARAMS": "plain words"}
    )
    assert text_params.sections[-1].text == "plain words"
    blank = assemble_both(acme, root, root / "proj", env={"DSH_CONTEXT_PARAMS": "  \n"})
    assert all(s.kind == "identity" for s in blank.sections)


def test_without_allow_env_override_the_variables_are_ignored(acme, tmp_path):
    root = _env_tree(tmp_path)
    env = {"DSH_CONTEXT_IGNORE": "1", "DSH_CONTEXT_PARAMS": "x"}
    config = ContextConfig(allow_env_override=False)
    assembly = assemble_both(acme, root, root / "proj", env=env, config=config)
    assert identity(assembly) == [(10, "agent")]
    assert "allowEnvOverride is off: DSH_CONTEXT_IGNORE, DSH_CONTEXT_PARAMS ignored" in (
        assembly.notes
    )


def test_unknown_dsh_context_variables_are_named(acme, tmp_path):
    root = _env_tree(tmp_path)
    assembly = assemble_both(acme, root, root / "proj", env={"DSH_CONTEXT_PRELAOD": "x.md"})
    assert "unknown variables ignored: DSH_CONTEXT_PRELAOD" in assembly.notes


# --- legacy memory/ ------------------------------------------------------------


def test_without_a_declaration_memory_files_load_in_priority_order(acme, tmp_path):
    names = ["tasks", "status", "notes", "brick_index", "history", "zeta", "alpha", "Beta"]
    files = {f"memory/{name}.md": name for name in names}
    files["memory/readme.txt"] = "not markdown"
    files["memory/bricks/deep.md"] = "not at the top of memory/"
    root = write_tree(tmp_path, files)
    assembly = assemble_both(acme, root, root)
    assert preload_files(assembly) == [
        "memory/history.md",
        "memory/brick_index.md",
        "memory/notes.md",
        "memory/status.md",
        "memory/tasks.md",
        "memory/Beta.md",
        "memory/alpha.md",
        "memory/zeta.md",
    ]
    assert all(f.origin == "legacy" for f in the_preload(assembly).files)
    assert "no declaration: loading memory/*.md (legacy fallback)" in assembly.notes


def test_the_memory_priority_can_be_changed_and_the_fallback_switched_off(acme, tmp_path):
    root = write_tree(tmp_path, {f"memory/{n}.md": n for n in ["history", "status", "x"]})
    config = ContextConfig(memory_priority=("status", "missing"))
    assert preload_files(assemble_both(acme, root, root, config=config)) == [
        "memory/status.md",
        "memory/history.md",
        "memory/x.md",
    ]
    off = assemble_both(acme, root, root, config=ContextConfig(legacy_memory_fallback=False))
    assert off.preload is None


def test_memory_bootstrap_off_means_no_preload(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {".dsh/context.yaml": "systemPrompt: [A.md]\npreload: [m.md]\n", "A.md": "a", "m.md": "m"},
    )
    assembly = assemble_both(acme, root, root, config=ContextConfig(memory_bootstrap=False))
    assert identity(assembly) == [(10, "a")] and assembly.preload is None


# --- byte limits ---------------------------------------------------------------


def test_by_default_nothing_is_cut(acme, tmp_path):
    big = "记" * 100_000
    root = write_tree(tmp_path, {"memory/history.md": big})
    assembly = assemble_both(acme, root, root)
    assert the_preload(assembly).files[0].limited is False
    assert big in the_preload(assembly).text


def test_per_file_bytes_cuts_multibyte_text_on_a_character_boundary(acme, tmp_path):
    text = "状态良好一切正常稳定"  # 10 characters, 3 bytes each
    root = write_tree(tmp_path, {"memory/status.md": text, "memory/tasks.md": "ok"})
    assembly = assemble_both(acme, root, root, config=ContextConfig(per_file_bytes=10))
    status, tasks = the_preload(assembly).files
    assert (status.bytes, status.sent_bytes, status.limited) == (30, 9, True)
    assert status.sha256 == sha256_text(text)  # of the whole file
    assert (tasks.sent_bytes, tasks.limited) == (2, False)
    message = the_preload(assembly).text
    assert (
        f"=== memory/status.md ===\n状态良\n… (limited snapshot: 9 of 30 bytes; the full file is {root}/memory/status.md)"
        in message
    )
    assert "状态良好" not in message


def test_total_bytes_cuts_then_names_the_files_it_leaves_out(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "memory/history.md": "一二三四",  # 12 bytes
            "memory/notes.md": "五六七八",  # 12 bytes: cut to 6 of them
            "memory/status.md": "status",
            "memory/tasks.md": "tasks",
        },
    )
    assembly = assemble_both(acme, root, root, config=ContextConfig(total_bytes=19))
    files = {f.display: f for f in the_preload(assembly).files}
    assert list(files) == ["memory/history.md", "memory/notes.md"]
    assert (files["memory/history.md"].sent_bytes, files["memory/history.md"].limited) == (
        12,
        False,
    )
    assert (files["memory/notes.md"].sent_bytes, files["memory/notes.md"].limited) == (6, True)
    left = (str(root / "memory/status.md"), str(root / "memory/tasks.md"))
    assert the_preload(assembly).left_out == left
    assert f"left out by the 19-byte total limit; read them yourself: {left[0]}, {left[1]}" in (
        the_preload(assembly).text
    )
    assert sum(f.sent_bytes for f in the_preload(assembly).files) <= 19


def test_a_total_reached_on_a_character_boundary_leaves_the_rest_out(acme, tmp_path):
    root = write_tree(
        tmp_path, {"memory/history.md": "abcd", "memory/notes.md": "五六", "memory/status.md": "s"}
    )
    assembly = assemble_both(acme, root, root, config=ContextConfig(total_bytes=6))
    notes = the_preload(assembly).files[1]
    assert (notes.sent_bytes, notes.limited) == (0, True)  # 2 bytes left: no whole character
    assert the_preload(assembly).left_out == (str(root / "memory/status.md"),)


# --- errors never kill an assembly ---------------------------------------------


def test_a_malformed_declaration_warns_with_its_line_and_is_treated_as_absent(tmp_path):
    root = write_tree(
        tmp_path,
        {
            ".dsh/context.yaml": "systemPrompt: [TOP.md]\n",
            "TOP.md": "top",
            "app/.dsh/context.yaml": "systemPrompt:\n  - A.md\n preload: [x]\n",
            "app/A.md": "a",
        },
    )
    assembly = assemble(source=DiskSource(), directory=str(root / "app"), hostname=HOSTNAME)
    path = root / "app/.dsh/context.yaml"
    assert len(assembly.warnings) == 1
    assert assembly.warnings[0].startswith(f"{path}:3: ")
    assert assembly.warnings[0].endswith("ignored, as if there were no declaration")
    # As if app had no declaration: the nearest one above it applies.
    assert identity(assembly) == [(10, "top")]


def test_a_malformed_declaration_falls_back_to_legacy_memory(tmp_path):
    root = write_tree(
        tmp_path, {".dsh/context.yaml": "preload: [a, b\n", "memory/notes.md": "notes"}
    )
    assembly = assemble(source=DiskSource(), directory=str(root), hostname=HOSTNAME)
    assert (
        "context.yaml:1: a flow list ([...]) must close on the line it opens"
        in (assembly.warnings[0])
    )
    assert preload_files(assembly) == ["memory/notes.md"]


def test_unknown_keys_are_named_but_do_not_stop_the_declaration(acme, tmp_path):
    root = write_tree(
        tmp_path, {".dsh/context.yaml": "systemPrompt: [A.md]\nsystemPromt: [B.md]\n", "A.md": "a"}
    )
    assembly = assemble_both(acme, root, root)
    assert identity(assembly) == [(10, "a")]
    assert f"{root}/.dsh/context.yaml:2: unknown key 'systemPromt' ignored" in assembly.notes


# --- suppressRoots and skipDelegated -----------------------------------------------


def test_suppressed_project_roots_get_nothing(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {
            "repo/.git/HEAD": "ref: refs/heads/main\n",
            "repo/.dsh/context.yaml": "systemPrompt: [A.md]\npreload: [m.md]\n",
            "repo/A.md": "a",
            "repo/m.md": "m",
            "other/.git/HEAD": "ref: refs/heads/main\n",
            "other/.dsh/context.yaml": "systemPrompt: [A.md]\n",
            "other/A.md": "other a",
        },
    )
    (root / "repo/src").mkdir()
    config = ContextConfig(suppress_roots=(str(root / "repo"),))
    env = {"DSH_CONTEXT_PARAMS": "p", "DSH_CONTEXT_SYSTEM_PROMPT": str(root / "repo/A.md")}
    assembly = assemble_both(acme, root, root / "repo/src", config=config, env=env)
    assert assembly.suppressed is True
    assert assembly.sections == () and assembly.preload is None and assembly.declarations == ()
    assert f"the project root {root}/repo is in suppressRoots: nothing is injected" in (
        assembly.notes
    )
    other = assemble_both(acme, root, root / "other", config=config)
    assert other.suppressed is False and identity(other) == [(10, "other a")]


def test_a_git_file_marks_a_project_root_too(tmp_path):
    root = write_tree(
        tmp_path,
        {
            "wt/.git": "gitdir: /elsewhere\n",
            "wt/.dsh/context.yaml": "systemPrompt: [A.md]\n",
            "wt/A.md": "a",
        },
    )
    config = ContextConfig(suppress_roots=(str(root / "wt"),))
    assembly = assemble(
        source=DiskSource(), directory=str(root / "wt"), config=config, hostname=HOSTNAME
    )
    assert assembly.suppressed


def test_skip_delegated_withholds_the_preload_from_sub_agents(acme, tmp_path):
    root = write_tree(
        tmp_path,
        {".dsh/context.yaml": "systemPrompt: [A.md]\npreload: [m.md]\n", "A.md": "a", "m.md": "m"},
    )
    config = ContextConfig(skip_delegated=True)
    child = assemble_both(acme, root, root, config=config, delegation_depth=1)
    assert identity(child) == [(10, "a")] and child.preload is None
    assert "skipDelegated: no preload at delegation depth 1" in child.notes
    assert assemble_both(acme, root, root, config=config, delegation_depth=0).preload
    # By default a sub-agent is just a session in a directory: it gets the preload.
    assert assemble_both(acme, root, root, delegation_depth=2).preload


# --- options -------------------------------------------------------------------


def test_options_read_the_designs_names_old_names_and_refuse_bad_values():
    from contexts.declarations import ConfigError

    config = ContextConfig.from_mapping(
        {
            "memoryPerFileBytes": 100,
            "totalBytes": 1000,
            "includeDelegated": False,
            "protocolFile": "MEMFLOW.md",  # removed in 0.3.0: harmless
            "suppressRoots": ["/srv/repo/"],
            "discover": "cwd",
        }
    )
    assert (config.per_file_bytes, config.total_bytes, config.skip_delegated) == (100, 1000, True)
    assert config.suppress_roots == ("/srv/repo",)
    assert ContextConfig.from_mapping(config.to_mapping()) == config
    for bad in (
        {"perFileBytes": -1},
        {"discover": "everywhere"},
        {"systemPrompt": "A.md"},
        {"suppressRoots": ["relative"]},
        {"declarationFile": "../x.yaml"},
        {"nope": 1},
    ):
        with pytest.raises(ConfigError):
            ContextConfig.from_mapping(bad)


def test_a_binary_file_is_unreadable(tmp_path):
    root = write_tree(tmp_path, {".dsh/context.yaml": "preload: [blob.bin, m.md]\n", "m.md": "m"})
    (root / "blob.bin").write_bytes(b"PK\x03\x04\x00\x00")
    assembly = assemble(source=DiskSource(), directory=str(root), hostname=HOSTNAME)
    assert f"cannot read {root}/blob.bin (blob.bin): a binary file (it holds NUL bytes)" in (
        assembly.notes
    )
    assert preload_files(assembly) == ["m.md"]


def test_paths_are_compared_after_lexical_normalisation(tmp_path):
    root = write_tree(tmp_path, {".dsh/context.yaml": "systemPrompt: [./x/../A.md]\n", "A.md": "a"})
    plain = assemble(source=DiskSource(), directory=str(root), hostname=HOSTNAME)
    odd = assemble(source=DiskSource(), directory=f"//{root}/sub/..//", hostname=HOSTNAME)
    assert odd == plain
    assert plain.sections[0].source == str(root / "A.md")
