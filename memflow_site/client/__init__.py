"""What runs on the agent's machine: `memflow hook` (the harness side of the hook
pipeline), `install-hooks`, `status`, `ledger` and the memory commands.

The standard library only (tests/test_layering.py holds it), so a hook process
starts fast and an agent's machine needs nothing but memflow's own files.
"""
