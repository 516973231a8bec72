"""The credential filter lives in `contexts.secrets` (every write path uses it,
the hook pipeline included, and `contexts` imports no app built on it)."""

from contexts.secrets import find_secret, find_secret_in_json

__all__ = ["find_secret", "find_secret_in_json"]
