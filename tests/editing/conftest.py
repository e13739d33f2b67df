"""Fixtures for presence and autosave (issue 37): signed-in clients, a post, the shared cache."""
import pytest
from django.core.cache import cache, caches
from django.test import Client
from django.urls import reverse

from blog.factories import AuthorFactory, PostFactory
from publishing.workflow import Status


def signed_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def url_of(item, view: str) -> str:
    """The admin's `view` ("change", "presence", "autosave") of `item`."""
    return reverse(f"admin:{item._meta.app_label}_{item._meta.model_name}_{view}", args=[item.pk])


@pytest.fixture
def shared_cache(settings):
    """The cache as production has it: Redis when REDIS_URL is set (the test settings keep local memory)."""
    if settings.REDIS_URL:
        settings.CACHES = {"default": {"BACKEND": "reader.cache_backend.RedisCache", "LOCATION": settings.REDIS_URL}}
        assert type(caches["default"]).__name__ == "RedisCache"
    cache.clear()
    yield cache
    cache.clear()


@pytest.fixture
def post(db):
    return PostFactory(status=Status.DRAFT, published_at=None, title="Old title", body="Old body",
                       excerpt="Old excerpt", authors=[AuthorFactory(name="Carol")])


@pytest.fixture
def ada(editor):
    editor.first_name, editor.last_name = "Ada", "Lovelace"
    editor.save()
    return editor


@pytest.fixture
def bob(publisher):
    publisher.first_name, publisher.last_name = "Bob", "Kahn"
    publisher.save()
    return publisher
