"""Needs attention: what failed in the machinery, each a count linking to the admin list filtered to it.

Each check is shown only to a user holding the permission the admin asks for its remedy:

- failed webhook deliveries: reprocess them (``ingestion.change_webhookdelivery``, the action's permission);
- feeds failing: fix or disable the feed (``ingestion.change_feedsource``);
- outbound endpoints failing, or disabled: fix, re-enable (``outbound.change_endpoint``);
- edge purges still being retried: read which node fails and mend it (``edge.view_purge``: the admin
  changes no purge, the remedy is the edge node);
- drafts the model failed to write (the rule-based writer wrote them, issue 36): redraft them with the
  model once it answers ("Redraft with the model" on *Digest drafts*, which whoever may change digests
  reaches: ``digests.change_digest``) -- the draft records why it failed.

Editors and Publishers hold none of the machinery's permissions (the editorial groups' migrations
grant content permissions only), so the only row they see is the drafts'; superusers and operators
see every row. Every count the
user may see is read in one statement, a scalar subquery each, whatever the tables' sizes;
each counts through the same queryset method as the list filter its link sets.
"""
from dataclasses import dataclass
from typing import Callable

from django.db import connection
from django.db.models import QuerySet
from django.urls import reverse

from edge.models import Purge
from ingestion.models import DigestDraft, FeedSource, WebhookDelivery
from outbound.models import Endpoint


@dataclass(frozen=True)
class Check:
    label: str
    permission: str
    changelist: str  # the admin URL name of the list
    query: str  # its filter, as the list filter writes it
    rows: Callable[[], QuerySet]

    @property
    def url(self) -> str:
        return f"{reverse(self.changelist)}?{self.query}"


CHECKS = [
    Check("failed webhook deliveries", "ingestion.change_webhookdelivery",
          "admin:ingestion_webhookdelivery_changelist", "state__exact=failed",
          lambda: WebhookDelivery.objects.filter(state=WebhookDelivery.State.FAILED)),
    Check("feeds failing", "ingestion.change_feedsource", "admin:ingestion_feedsource_changelist", "failing=yes",
          lambda: FeedSource.objects.failing()),
    Check("outbound endpoints failing", "outbound.change_endpoint", "admin:outbound_endpoint_changelist",
          "enabled__exact=1&failing_since__isnull=False", lambda: Endpoint.objects.failing()),
    Check("outbound endpoints disabled", "outbound.change_endpoint", "admin:outbound_endpoint_changelist",
          "enabled__exact=0", lambda: Endpoint.objects.filter(enabled=False)),
    Check("edge purges still being retried", "edge.view_purge", "admin:edge_purge_changelist", "retried=yes",
          lambda: Purge.objects.retried()),
    Check("drafts the model failed to write", "digests.change_digest", "admin:ingestion_digestdraft_changelist",
          "fell_back=yes", lambda: DigestDraft.objects.fell_back()),
]


@dataclass
class Count:
    check: Check
    count: int


def checks_for(user) -> list[Check]:
    return [check for check in CHECKS if user.has_perm(check.permission)]


def count(checks: list[Check]) -> list[Count]:
    """Each check's count, all in one statement: ``SELECT (SELECT COUNT(*) FROM (…)), …``."""
    if not checks:
        return []
    parts, params = [], []
    for check in checks:
        sql, check_params = check.rows().order_by().values("pk").query.sql_with_params()
        parts.append(f"(SELECT COUNT(*) FROM ({sql}) AS counted)")
        params.extend(check_params)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(parts)}", params)
        found = cursor.fetchone()
    return [Count(check, number) for check, number in zip(checks, found)]
