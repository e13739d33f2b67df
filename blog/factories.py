"""factory_boy factories for the blog, shared by tests and the benchmark generator."""
import datetime

import factory
from django.utils import timezone

from publishing.workflow import Status

from .models import Author, Post, PostAuthor


class AuthorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Author
        django_get_or_create = ["slug"]

    name = factory.Sequence(lambda n: f"Author {n}")
    handle = factory.Sequence(lambda n: f"author{n}")
    slug = factory.Sequence(lambda n: f"author-{n}")


class PostFactory(factory.django.DjangoModelFactory):
    """A published post by default; ``authors=[...]`` and ``tags=[...]`` set the byline and tags."""

    class Meta:
        model = Post
        skip_postgeneration_save = True

    title = factory.Sequence(lambda n: f"Post number {n}")
    slug = factory.Sequence(lambda n: f"post-{n}")
    body = "Some **Markdown** body text."
    status = Status.PUBLISHED
    published_at = factory.LazyFunction(lambda: timezone.now() - datetime.timedelta(hours=1))

    @factory.post_generation
    def authors(self, create, extracted, **kwargs):
        if not create:
            return
        for position, author in enumerate(extracted or [AuthorFactory()]):
            PostAuthor.objects.create(post=self, author=author, position=position)

    @factory.post_generation
    def tags(self, create, extracted, **kwargs):
        if create and extracted:
            self.tags.add(*extracted)
