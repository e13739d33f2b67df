"""A drafted digest goes through the real admin change form: it saves unedited, and stays the generator's."""
import datetime

import pytest
from django.urls import reverse

from digests.factories import ReferenceFactory, RepositoryFactory, TopicFactory
from digests.models import Digest
from ingestion.drafting import draft_digest

pytestmark = pytest.mark.django_db

DAY = datetime.date(2026, 6, 29)


def at(hour: int) -> datetime.datetime:
    return datetime.datetime.combine(DAY, datetime.time(hour), tzinfo=datetime.UTC)


@pytest.fixture
def unlabelled_day():
    """Merged work with no labels at all, so drafting suggests no action items."""
    topic = TopicFactory(name="PyTorch", slug="pytorch")
    repository = RepositoryFactory(full_name="pytorch/pytorch", topic=topic)
    ReferenceFactory(repository=repository, number=188142, title="Replace std::lock with std::scoped_lock (#188142)",
                     labels=[], merged_at=at(9))
    ReferenceFactory(repository=repository, number=186200, title="[Test] Refactor test_nn.py [1/N]", labels=[],
                     merged_at=at(10))
    return topic, repository


def as_browser_posts(data: dict) -> dict:
    """Browsers send textarea line breaks as CRLF (HTML form submission normalises them)."""
    return {name: value.replace("\n", "\r\n") if isinstance(value, str) else value for name, value in data.items()}


def save_unchanged(client, digest, admin_form_data):
    change = reverse("admin:digests_digest_change", args=[digest.pk])
    data = as_browser_posts(admin_form_data(client.get(change)))
    return client.post(change, data)


def test_a_drafted_digest_without_action_items_saves_in_the_admin(client, editor, unlabelled_day, admin_form_data):
    topic, _repository = unlabelled_day
    digest = draft_digest(topic, DAY).digest
    assert digest.action_items.count() == 0
    assert all(entry.answer.strip() for entry in digest.faq_entries.all())  # no entry the admin would refuse
    client.force_login(editor)
    response = save_unchanged(client, digest, admin_form_data)
    assert response.status_code == 302, response.context["errors"] if response.context else response
    digest.refresh_from_db()
    assert "\r\n" in digest.body  # the browser's line endings were stored: the form really saved it


def test_regenerating_after_an_unedited_admin_save_still_updates_the_text(client, editor, unlabelled_day,
                                                                         admin_form_data):
    topic, repository = unlabelled_day
    digest = draft_digest(topic, DAY).digest
    client.force_login(editor)
    assert save_unchanged(client, digest, admin_form_data).status_code == 302

    ReferenceFactory(repository=repository, number=190000, title="Add CharacterErrorRate metric",
                     labels=["security"], merged_at=at(20))
    result = draft_digest(topic, DAY)
    digest = Digest.objects.get()
    assert result.kept == []
    number = result.added[0].number
    assert f"[{number}]" in digest.body and f"[{number}]" in digest.summary
    assert digest.citation_report().uncited == []
    assert digest.action_items.get().priority == "immediate"  # the new label's action, not frozen either
    assert save_unchanged(client, digest, admin_form_data).status_code == 302
