"""Tenancy and sessions: workspaces, memberships, API keys and their scopes, agent
sessions, per-workspace knobs and quotas, and the audit trail of who changed what."""
