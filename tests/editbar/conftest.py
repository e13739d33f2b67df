"""Fixtures for the edit bar: a little published content, and people signed in with different rights."""
import datetime

import pytest
from django.test import Client
from django.utils import timezone

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory
from publishing.workflow import Status


@pytest.fixture
def content(db):
    """A published post (one author, one tag), a published digest citing a repository, and drafts."""

    class Content:
        author = AuthorFactory(name="Ada Lovelace", slug="ada")
        post = PostFactory(title="Published post", slug="published-post", authors=[author], tags=["python"])
        topic = TopicFactory(name="PyTorch", slug="pytorch")
        repository = RepositoryFactory(full_name="pytorch/pytorch", topic=topic)
        digest = DigestFactory(topic=topic, slug="published-digest", summary="Cites [1].")
        DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(repository=repository))
        draft = PostFactory(title="Draft post", slug="draft-post", status=Status.DRAFT, published_at=None)
        scheduled = DigestFactory(topic=topic, slug="scheduled-digest", date=datetime.date(2030, 1, 2),
                                  published_at=timezone.now() + datetime.timedelta(days=2))

    return Content


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("chief", "chief@example.org", "pw")


@pytest.fixture
def chief(superuser) -> Client:
    return signed_in(superuser)


@pytest.fixture
def publishing(publisher) -> Client:
    return signed_in(publisher)


@pytest.fixture
def editing(editor) -> Client:
    return signed_in(editor)


@pytest.fixture(params=["editing", "publishing"])
def staff(request) -> Client:
    """Signed in as an Editor, then (the test again) as a Publisher: what the bar shows both roles alike."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def bare_staff(django_user_model) -> Client:
    """Staff status and no permission at all."""
    return signed_in(django_user_model.objects.create_user("intern", password="pw", is_staff=True))


@pytest.fixture
def member(django_user_model) -> Client:
    """Signed in (a session cookie), but not staff."""
    return signed_in(django_user_model.objects.create_user("member", password="pw"))
