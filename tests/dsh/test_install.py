"""`memflow install-hooks --dsh PROFILE_DIR`: memflow's bundle for the profile,
not the Claude Code-shaped hooks.json current dsh no longer reads."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memflow_site.client import install as install_hooks
from tests.memflow_site.helpers import MEMFLOW, env_for

BUNDLE = Path(__file__).resolve().parents[2] / "integrations" / "dsh"


def run(tmp_path: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {**env_for(tmp_path / "data"), "HOME": str(tmp_path / "home"), "PATH": path}
    return subprocess.run(
        [MEMFLOW, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def test_without_dsh_it_says_the_line_that_adds_the_bundle_and_drops_old_hooks(tmp_path):
    profile = tmp_path / "dsh-home" / "profiles" / "desktop"
    profile.mkdir(parents=True)
    other = {"type": "command", "command": "/usr/bin/notify-send done"}
    old = install_hooks.merge_hooks({"hooks": {"Stop": [{"hooks": [other]}]}}, "/x/memflow")
    (profile / "hooks.json").write_text(json.dumps(old))

    done = run(tmp_path, "install-hooks", "--dsh", str(profile), path="/usr/bin:/bin")

    assert done.returncode == 0, done.stderr
    line = f"DSH_HOME={tmp_path / 'dsh-home'} dsh plugin --profile desktop add {BUNDLE}"
    assert line in done.stderr
    # What an older memflow wrote is gone; the user's own hook stays.
    assert json.loads((profile / "hooks.json").read_text()) == {
        "hooks": {"Stop": [{"hooks": [other]}]}
    }
    printed = run(tmp_path, "install-hooks", "--dsh", str(profile), "--print", path="/usr/bin:/bin")
    assert printed.stdout.strip() == line


def test_with_dsh_on_path_it_runs_dsh_plugin_add(tmp_path):
    # A `dsh` that records its call (tests/dsh/test_*.py add the bundle to the real one).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    (bin_dir / "dsh").write_text(
        f'#!/bin/sh\necho "$DSH_HOME|$*" >> {calls}\n[ "$4" = "add" ] || exit 3\n'
    )
    (bin_dir / "dsh").chmod(0o755)
    profile = tmp_path / "home" / ".dsh" / "profiles" / "web"
    path = f"{bin_dir}:/usr/bin:/bin"

    added = run(tmp_path, "install-hooks", "--dsh", str(profile), path=path)
    assert added.returncode == 0, added.stderr
    assert "restart dsh" in added.stderr
    removed = run(tmp_path, "uninstall-hooks", "--dsh", str(profile), path=path)
    assert removed.returncode == 3  # dsh's own exit status is passed on

    home = tmp_path / "home" / ".dsh"
    assert calls.read_text().splitlines() == [
        f"{home}|plugin --profile web add {BUNDLE}",
        f"{home}|plugin --profile web remove dsh-memflow-bundle",
    ]


def test_the_bundle_named_is_the_package_dsh_installs():
    manifest = json.loads((BUNDLE / "package.json").read_text())
    assert manifest["name"] == install_hooks.DSH_BUNDLE
    assert manifest["dsh"]["bundle"]["patch"] == "./cordis.patch.yml"
    assert (BUNDLE / manifest["dsh"]["bundle"]["patch"]).is_file()
    # The memflow design: a profile plugin carrying a harness package breaks the host.
    deps = {**manifest.get("dependencies", {}), **manifest.get("peerDependencies", {})}
    assert not [name for name in deps if name.startswith("@deepseek-ai/")]
    assert os.access(BUNDLE / manifest["main"], os.R_OK)
