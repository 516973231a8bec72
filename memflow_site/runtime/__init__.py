"""The ground floor every app stands on: environment readers (`env`), the side
threads a request waits on (`side_threads`), the warmed-up heap (`heap`), token
estimates (`tokens`) and hot reads bound on the server (`db`).

It sits in `memflow_site`, not in an app, so `memflow_site/settings.py` reads
its environment through `env` before Django is set up without importing an
app; nothing here imports an app (tests/test_layering.py), so `contexts`,
`memories` and `skills` may all stand on it, and this `__init__` imports nothing.
"""
