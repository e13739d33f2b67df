"""Fixtures for the API tests: a clean throttle cache, tokens with each scope, an auth header helper."""
import pytest
from django.core.cache import cache

from accounts.models import ApiToken


@pytest.fixture(autouse=True)
def clear_throttles():
    """Throttle history lives in the cache; each test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def make_token():
    """Issue a token for `user` with `scopes`; returns the raw token string."""

    def make(user, *scopes, name="test token"):
        return ApiToken.issue(user, name, scopes)[1]

    return make


def bearer(raw_token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw_token}"}
