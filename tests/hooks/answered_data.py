"""An answer, entries that share its question's words, and two wordings of that question.

By its words alone the answer is not the first entry recalled for QUERY;
the tests that use it check so before relying on it.
"""

ANSWER = (
    "test_login_redirect fails now and then because the session cookie is set after the "
    "redirect; wait for the cookie with page.wait_for_function before asserting."
)
# Entries that share the question's words without answering it.
OTHERS = [
    "Flaky tests are listed in FLAKY.md with an owner; a test that flakes twice is quarantined.",
    "The login page was redesigned in March: the form now posts to /auth/session.",
    "Login tests run against the staging identity provider, never production.",
    "The trick for faster test runs is pytest -n 2 with a shared database.",
]
QUERY = "what was the trick for the flaky login test?"
EARLIER = "remind me, what was the trick with that flaky login test again?"
