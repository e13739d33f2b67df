"""Retention empties a model's raw answer to a draft once it is older than RETENTION_DRAFT_RESPONSE_DAYS."""
import datetime

import pytest
from django.utils import timezone

from digests.factories import DigestFactory
from ingestion.models import DigestDraft
from newsroom import retention

pytestmark = pytest.mark.django_db


def test_old_raw_answers_are_emptied_and_recent_ones_kept(settings):
    settings.RETENTION_DRAFT_RESPONSE_DAYS = 30
    now = timezone.now()
    old = DigestDraft.objects.create(digest=DigestFactory(), raw_response='{"headline": "old"}', model="m",
                                     generated_at=now - datetime.timedelta(days=31), input_tokens=10)
    recent = DigestDraft.objects.create(digest=DigestFactory(), raw_response='{"headline": "new"}',
                                        generated_at=now - datetime.timedelta(days=29))
    rule = next(rule for rule in retention.RULES if rule.name == "model draft answers")
    assert retention.prune(rule, now) == 1
    old.refresh_from_db()
    recent.refresh_from_db()
    assert (old.raw_response, old.model, old.input_tokens) == ("", "m", 10)  # the rest of the record stays
    assert recent.raw_response == '{"headline": "new"}'
