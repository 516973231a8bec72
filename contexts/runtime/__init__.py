"""The ground floor every app stands on: environment readers (`env`), the side
threads a request waits on (`side_threads`), the warmed-up heap (`heap`).

Nothing here imports an app, so `contexts`, `memories`, `skills` and
`memflow_site` can all import it; `memflow_site/settings.py` reads its
environment through `env` before Django is set up, so this `__init__` imports
nothing.
"""
