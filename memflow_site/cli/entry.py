"""The `memflow` console script: `memflow hook <event>` without the rest of the CLI.

A hook runs on every prompt and every tool call, inside the turn: it must not
pay for argparse and the CLI's imports. Everything else goes to memflow_site.cli.main.
"""

from __future__ import annotations

import sys


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "hook" and not sys.argv[2].startswith("-"):
        from memflow_site.client.hook import main as hook_main

        return hook_main(sys.argv[2])
    from memflow_site.cli.main import main as cli_main

    return cli_main()
