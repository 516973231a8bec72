"""The `memflow` command: its entry point, the server administrator's commands,
serve/worker/migrate, backup and restore, bench, doctor, and the wiring of the
agent-side commands whose code is in `memflow_site.client`."""
