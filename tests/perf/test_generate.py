"""The bench's archive holds what the admin's lists are timed on (issue 26): webhook deliveries included."""
import datetime

import pytest
from django.conf import settings

from bench.generate import Generator, Scale
from digests.factories import RepositoryFactory
from ingestion.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def test_the_archive_holds_a_month_of_deliveries_as_retention_leaves_them():
    generator = Generator(Scale().times(0.01))  # 300 deliveries
    generator.deliveries([RepositoryFactory(), RepositoryFactory()])
    deliveries = WebhookDelivery.objects.all()
    assert deliveries.count() == generator.scale.deliveries == 300
    oldest = min(deliveries.values_list("received_at", flat=True))
    assert generator.now - oldest <= datetime.timedelta(days=settings.RETENTION_WEBHOOK_DELIVERY_DAYS)
    week = generator.now - datetime.timedelta(days=settings.RETENTION_WEBHOOK_BODY_DAYS)
    assert not deliveries.filter(received_at__lt=week).exclude(body=b"").exists()  # pruned bodies, as retention does
    assert all(delivery.payload()["repository"]["full_name"] == delivery.repository_full_name
               for delivery in deliveries.filter(received_at__gte=week))
    assert deliveries.filter(state=WebhookDelivery.State.FAILED, retry_at=None).count() == 3  # failed for good
    assert deliveries.filter(event="pull_request").count() > deliveries.filter(event="release").count()
