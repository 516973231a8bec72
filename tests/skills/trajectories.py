"""Claude Code-shaped hook payloads for the turns the skill tests play."""

from __future__ import annotations

from typing import Any

Payload = dict[str, Any]


def bash(command: str, stdout: str = "", stderr: str = "") -> Payload:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": f"Run {command.split()[0]}"},
        "tool_response": {
            "stdout": stdout,
            "stderr": stderr,
            "interrupted": False,
            "isImage": False,
        },
    }


def bash_failed(command: str, error: str) -> Payload:
    """Claude Code reports a failed call through PostToolUseFailure, with `error`."""
    return {
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "error": error,
    }


def edit(path: str, old: str, new: str) -> Payload:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": path, "old_string": old, "new_string": new},
        "tool_response": {"filePath": path, "oldString": old, "newString": new},
    }


def write(path: str, content: str) -> Payload:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": path, "content": content},
        "tool_response": {"type": "create", "filePath": path, "content": content},
    }


def read(path: str, content: str) -> Payload:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": path},
        "tool_response": {"type": "text", "file": {"filePath": path, "content": content}},
    }


# A long, tool-heavy turn: seven calls, none failing.
DOCS_PROMPT = "Set up the docs build with mkdocs and publish it to GitHub pages"
DOCS_TOOLS = [
    bash("uv add --dev mkdocs-material", "Resolved 42 packages\nInstalled 3 packages"),
    write("mkdocs.yml", "site_name: Acme\ntheme:\n  name: material\n"),
    bash("uv run mkdocs build --strict", "INFO - Documentation built in 0.41 seconds"),
    write(".github/workflows/docs.yml", "name: docs\non: [push]\n"),
    edit("README.md", "## Docs", "## Docs\n\nhttps://acme.github.io/acme/"),
    bash("git add mkdocs.yml .github/workflows/docs.yml README.md"),
    bash("git commit -m 'docs: mkdocs site'", "[main 4f2a9c1] docs: mkdocs site\n 3 files changed"),
]
DOCS_ANSWER = "The docs now build with mkdocs-material and publish from CI on every push."

# An error fixed within the turn: three calls, the first one failing.
BILLING_PROMPT = "Fix the failing billing migration tests"
BILLING_TOOLS = [
    bash_failed(
        "pytest tests/test_billing_migrations.py",
        "Exit code 1\nImportError while loading conftest\n"
        "E   ModuleNotFoundError: No module named 'stripe'",
    ),
    bash("uv add stripe", "Resolved 12 packages\nInstalled 1 package"),
    bash("pytest tests/test_billing_migrations.py", "...\n3 passed in 0.52s"),
]
BILLING_ANSWER = "The billing migration tests pass: the stripe package was missing."
