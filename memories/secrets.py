"""The credential filter lives in `contexts.secrets` (every write path uses it,
the hook pipeline included, and `contexts` imports no app built on it)."""

from contexts.secrets import find_secret

__all__ = ["find_secret"]
