"""factory_boy factories for The Wire, shared by tests and the benchmark generator."""
import datetime

import factory
from django.utils import timezone

from publishing.workflow import Status

from .models import ActionItem, Digest, DigestReference, FAQEntry, Reference, Repository, Topic


class TopicFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Topic
        django_get_or_create = ["slug"]

    name = factory.Sequence(lambda n: f"Topic {n}")
    slug = factory.Sequence(lambda n: f"topic-{n}")


class RepositoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Repository
        django_get_or_create = ["full_name"]

    topic = factory.SubFactory(TopicFactory)
    full_name = factory.Sequence(lambda n: f"owner{n}/repo{n}")


class ReferenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Reference

    repository = factory.SubFactory(RepositoryFactory)
    kind = Reference.Kind.PULL_REQUEST
    number = factory.Sequence(lambda n: 1000 + n)
    key = factory.LazyAttribute(lambda o: str(o.number))
    title = factory.Sequence(lambda n: f"Fix thing number {n}")
    url = factory.LazyAttribute(lambda o: f"https://github.com/{o.repository.full_name}/pull/{o.number}")
    author_login = "octocat"
    state = "merged"
    merged_at = factory.LazyFunction(timezone.now)


class DigestFactory(factory.django.DjangoModelFactory):
    """A published digest by default; pass status=... for other states."""

    class Meta:
        model = Digest

    topic = factory.SubFactory(TopicFactory)
    date = factory.Sequence(lambda n: datetime.date(2026, 1, 1) + datetime.timedelta(days=n))
    label = "Showcase"
    headline = factory.Sequence(lambda n: f"Headline number {n}")
    summary = "Something shipped."
    body = ""
    slug = factory.Sequence(lambda n: f"digest-{n}")
    status = Status.PUBLISHED
    published_at = factory.LazyFunction(lambda: timezone.now() - datetime.timedelta(hours=1))


class DigestReferenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DigestReference

    digest = factory.SubFactory(DigestFactory)
    reference = factory.SubFactory(ReferenceFactory)
    number = factory.Sequence(lambda n: n + 1)


class ActionItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ActionItem

    digest = factory.SubFactory(DigestFactory)
    text = factory.Sequence(lambda n: f"Do thing {n}")
    repository = factory.SubFactory(RepositoryFactory)
    priority = ActionItem.Priority.PLAN


class FAQEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FAQEntry

    digest = factory.SubFactory(DigestFactory)
    question = factory.Sequence(lambda n: f"Question {n}?")
    answer = "An answer."
