"""The hook pipeline: what an agent harness's hooks are answered with.

`registry` holds the starters (they begin slow work, such as embedding the
prompt, before the session is recorded), the providers (they add a block to
what the model sees) and the observers (they react to an event) that apps
register in their `AppConfig.ready()`; `pipeline` runs them for one hook call. The pipeline
itself never changes when a capability is added: adding one is adding a
provider.
"""

from __future__ import annotations

from contexts.hooks.registry import (
    EVENTS,
    Block,
    HookContext,
    MemoryWhy,
    Ranking,
    SessionView,
    Tools,
    inert,
    register_injection_observer,
    register_observer,
    register_provider,
    register_starter,
    unregister,
)

__all__ = [
    "EVENTS",
    "Block",
    "HookContext",
    "MemoryWhy",
    "Ranking",
    "SessionView",
    "Tools",
    "inert",
    "register_injection_observer",
    "register_observer",
    "register_provider",
    "register_starter",
    "unregister",
]
