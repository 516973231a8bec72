"""The memory engine's REST endpoints under `/api/v1/workspaces/{slug}/`: memories,
core memory and the archive, bulk forget, tombstones, triage, library upkeep,
one session's log, and their URL table (`urls`)."""
