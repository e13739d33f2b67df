"""The whole API against its own OpenAPI document (schemathesis, every built-in check).

Runs in-process through Django's WSGI application, inside the test's database
transaction, once anonymously and once with a Publisher's token holding every
scope, so the write operations and the draft paths are exercised too.
"""
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings as hypothesis_settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from accounts.models import ApiToken
from blog.factories import AuthorFactory, PostFactory
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, RepositoryFactory, TopicFactory
from repojournal.workflow import Status

UNLIMITED = {name: "100000/m" for name in ("list_ip", "list_token", "write_ip", "write_token")}


@pytest.fixture
def seeded(db):
    topic = TopicFactory(slug="pytorch")
    digest = DigestFactory(topic=topic, slug="pytorch-digest", summary="Shipped [1].")
    DigestReferenceFactory(digest=digest, number=1, reference__repository=RepositoryFactory(full_name="pytorch/ao"))
    ActionItemFactory(digest=digest, priority="immediate")
    DigestFactory(topic=topic, status=Status.DRAFT, slug="draft-digest")
    PostFactory(slug="a-post", tags=["pytorch"], authors=[AuthorFactory(slug="ada")])


@pytest.fixture(autouse=True)
def in_process(settings):
    """Unlimited throttles; Django's per-request connection cleanup is paused so the
    in-process requests share the test's transaction."""
    settings.API_THROTTLE_RATES = UNLIMITED
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def every_scope(publisher) -> dict:
    raw = ApiToken.issue(publisher, "schemathesis", [scope.value for scope in ApiToken.Scope])[1]
    return {"Authorization": f"Bearer {raw}"}


# The schema is served by the project itself (the OpenAPI view needs no database).
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())
#: API_FUZZ_EXPLORE=1 draws fresh random examples, more of them; by default every run
#: (and CI) replays the same examples, so the suite is stable.
EXPLORE = os.environ.get("API_FUZZ_EXPLORE") == "1"
FAST = hypothesis_settings(
    max_examples=150 if EXPLORE else 25, deadline=None, derandomize=not EXPLORE,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def semantic_exclusions(case) -> list:
    """Where a schema-valid request may still be rightly refused, skip only the
    "valid data must be accepted" check; every other check still runs.

    - a `cursor` must be one the API issued (signed): any other string is a 400;
    - a written digest or post must pass the admin's rules, which a schema cannot
      express (citations resolve, repositories and topics exist, slugs unique): a 422.
    """
    if (case.query and "cursor" in case.query) or case.method.upper() in {"POST", "PUT"}:
        return [positive_data_acceptance]
    return []


@schema.parametrize()
@FAST
def test_anonymous_client_conforms(seeded, case):
    case.call_and_validate(excluded_checks=semantic_exclusions(case))


@schema.parametrize()
@FAST
def test_client_with_every_scope_conforms(seeded, every_scope, case):
    case.call_and_validate(headers=every_scope, excluded_checks=semantic_exclusions(case))
