"""The REST plumbing every app's API stands on: the workspace-scoped view base,
the `/api/v1/` URL table and the OpenAPI scheme."""
