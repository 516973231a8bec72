from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """The personas' passwords are hashed at creation; a cheap hasher saves a second a test."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def as_user(client: Client) -> Callable[[Any], Client]:
    """A client logged in as the given persona."""

    def login(user: Any) -> Client:
        client.force_login(user)
        return client

    return login
