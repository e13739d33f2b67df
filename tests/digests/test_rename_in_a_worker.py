"""Renaming a topic or a repository in the admin returns at once; a worker re-renders their digests (issue 39, item 4).

Each digest showing the name (a topic's, in its byline and card; a repository's, in its references,
action items and "which shipped") was re-rendered inside the save. Now the save records a
``DigestRerender`` row and queues its task after the commit (``publishing.rerenders``): its work is
the same for 3 digests as for 30, and once the worker has run the pages show the new name.
"""
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from digests import cards, tasks
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, ReferenceFactory
from digests.factories import RepositoryFactory, TopicFactory
from digests.models import Digest, DigestRerender, Topic
from publishing import rerenders, social_cards
from publishing.signals import content_changed
from tests.rerenders import run_rerenders
from tests.site.helpers import visible_text

pytestmark = pytest.mark.django_db


def archive(digests: int, n: int) -> Topic:
    topic = TopicFactory(name=f"Compilers {n}", slug=f"compilers-{n}")
    repository = RepositoryFactory(full_name=f"llvm{n}/llvm-project", topic=topic)
    for _ in range(digests):
        digest = DigestFactory(topic=topic, summary="The linker got faster [1].")
        DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(repository=repository))
        ActionItemFactory(digest=digest, repository=repository, text="Upgrade the toolchain", position=1)
    return topic


def save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data, url: str, **changes):
    """POST the change form with `changes`, as a browser would; returns (queries, og:image cards drawn, digests
    re-rendered, on-commit callbacks)."""
    data = admin_form_data(client.get(url), **changes)
    with mock.patch.object(social_cards, "draw", wraps=social_cards.draw) as draw, \
            mock.patch.object(cards, "render", wraps=cards.render) as rendered, \
            django_capture_on_commit_callbacks(execute=False) as callbacks, \
            CaptureQueriesContext(connection) as queries:
        response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return len(queries), draw.call_count, rendered.call_count, len(callbacks)


def test_renaming_a_topic_costs_the_same_for_3_digests_as_for_30_and_the_worker_re_renders(
        client, publisher, django_capture_on_commit_callbacks, admin_form_data):
    client.force_login(publisher)
    costs, topics = [], []
    for n, digests in enumerate((3, 30)):
        topic = archive(digests, n)
        costs.append(save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data,
                                   f"/admin/digests/topic/{topic.pk}/change/", name=f"Toolchains {n}"))
        topics.append(topic)
    assert costs[0] == costs[1] and costs[0][1] == costs[0][2] == 0
    assert DigestRerender.objects.filter(kind="topic").count() == 2
    client.logout()
    digest = Digest.objects.filter(topic=topics[1]).first()
    assert "About Compilers 1" in visible_text(client.get(digest.get_absolute_url()).content.decode())  # not yet

    announced = []
    content_changed.connect(receiver := lambda sender, pks=None, **kw: announced.append((sender, set(pks))),
                            weak=False)
    try:
        assert run_rerenders() == 2
    finally:
        content_changed.disconnect(receiver)
    assert (Digest, set(Digest.objects.filter(topic=topics[0]).values_list("pk", flat=True))) in announced
    text = visible_text(client.get(digest.get_absolute_url()).content.decode())
    assert "About Toolchains 1" in text and "Compilers 1" not in text
    assert "Toolchains 1" in visible_text(client.get("/wire/").content.decode())


def test_renaming_a_repository_costs_the_same_for_3_digests_as_for_30_and_the_worker_re_renders(
        client, publisher, django_capture_on_commit_callbacks, admin_form_data):
    client.force_login(publisher)
    costs = []
    for n, digests in enumerate((3, 30)):
        repository = archive(digests, n).repositories.get()
        costs.append(save_in_admin(client, django_capture_on_commit_callbacks, admin_form_data,
                                   f"/admin/digests/repository/{repository.pk}/change/", full_name=f"llvm{n}/llvm"))
    assert costs[0] == costs[1] and costs[0][1] == costs[0][2] == 0
    assert run_rerenders() == 2
    client.logout()
    html = client.get(Digest.objects.citing(repository).first().get_absolute_url()).content.decode()
    assert "/repos/llvm1/llvm-project/" not in html
    assert html.count('href="/repos/llvm1/llvm/"') == 3  # its citation, its action item, "which shipped"


def test_a_rename_whose_task_was_lost_is_queued_again_by_the_sweep():
    topic = archive(2, 0)
    topic.name = "Toolchains"
    topic.save()  # in the test's transaction: the task queued after the commit is never sent
    row = DigestRerender.objects.get()
    queued = []
    with mock.patch.object(tasks.rerender, "apply_async", lambda args, **options: queued.extend(args)):
        tasks.sweep_social_cards()
        assert queued == []
        rerenders.sweep(DigestRerender, tasks.rerender, now=timezone.now() + timedelta(minutes=2))
    assert queued == [row.pk]
    assert tasks.rerender(row.pk) and not DigestRerender.objects.exists()
    assert all("Toolchains" in digest.byline_html for digest in Digest.objects.all())
