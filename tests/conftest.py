"""Fixtures shared by the whole suite."""
from pathlib import Path

import pytest
from django.contrib.auth.models import Group

SHARED_DIR = Path(__file__).resolve().parent.parent.parent / "shared"
GITHUB_FIXTURES = SHARED_DIR / "fixtures" / "github"


@pytest.fixture
def make_staff_user(django_user_model):
    """Create a staff user in the named editorial group ("Editors" or "Publishers")."""

    def make(username: str, group: str):
        user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
        user.groups.add(Group.objects.get(name=group))
        return user

    return make


@pytest.fixture
def editor(make_staff_user):
    return make_staff_user("editor", "Editors")


@pytest.fixture
def publisher(make_staff_user):
    return make_staff_user("publisher", "Publishers")
