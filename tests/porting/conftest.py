"""The porting tests create the shared personas many times; a fast password
hash keeps each workspace fixture from costing seconds of PBKDF2."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
