"""Fixtures for the edge app's tests: a little published content."""
import pytest

from blog.factories import AuthorFactory, PostFactory
from digests.factories import DigestFactory, DigestReferenceFactory, ReferenceFactory, RepositoryFactory, TopicFactory


@pytest.fixture
def content(db):
    """Two posts with no tag or author in common, and one digest citing one repository."""

    class Content:
        ada, bob = AuthorFactory(name="Ada"), AuthorFactory(name="Bob")
        first = PostFactory(title="First", authors=[ada], tags=["python"])
        second = PostFactory(title="Second", authors=[bob], tags=["rust"])
        topic = TopicFactory()
        repository = RepositoryFactory(topic=topic)
        digest = DigestFactory(topic=topic)
        DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(repository=repository))

    return Content
