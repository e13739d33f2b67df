"""The whole API against its own OpenAPI document (schemathesis, every built-in check).

Runs in-process through Django's WSGI application, inside the test's database
transaction, once anonymously and once with a Publisher's token holding every
scope, so the write operations and the draft paths are exercised too.
"""
import functools
import os
import re

import jsonschema_rs
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings as hypothesis_settings
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from accounts.models import ApiToken
from repojournal.api import api
from blog.factories import AuthorFactory, PostFactory
from digests.factories import ActionItemFactory, DigestFactory, DigestReferenceFactory, RepositoryFactory, TopicFactory
from publishing.workflow import Status

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

    And where a "negative" query is, as sent on the wire, a valid one (schemathesis
    mutates `tag=["false"]` into `tag=False`, both sent as ``tag=false``), skip the
    "invalid data must be rejected" check: the API cannot reject a valid request.
    """
    excluded = []
    if (case.query and "cursor" in case.query) or case.method.upper() in {"POST", "PUT", "PATCH"}:
        excluded.append(positive_data_acceptance)
    if negative_only_in_query(case) and query_is_valid_on_the_wire(case):
        excluded.append(negative_data_rejection)
    return excluded


def negative_only_in_query(case) -> bool:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_negative:
        return False
    negated = {location for location, component in meta.components.items() if component.mode.is_negative}
    return negated == {ParameterLocation.QUERY}


def wire_strings(value) -> list[str]:
    """What a query value becomes on the wire (requests/werkzeug urlencode with doseq)."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in wire_strings(item)]
    if isinstance(value, dict):
        return [str(key) for key in value]
    return [] if value is None else [str(value)]


def coerce(text: str, schema: dict):
    """A wire string read as the schema's type would read it, or the string itself."""
    kind = schema.get("type")
    if kind == "integer" and re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def valid_on_the_wire(strings: list[str], schema: dict) -> bool:
    options = schema.get("anyOf", [schema])
    for option in options:
        if option.get("type") == "array":
            value = [coerce(s, option.get("items", {})) for s in strings]
        elif len(strings) == 1:
            value = coerce(strings[0], option)
        else:
            continue
        if jsonschema_rs.Draft202012Validator(option, validate_formats=True).is_valid(value):
            return True
    return False


@functools.cache
def openapi_paths() -> dict:
    """The API's OpenAPI paths, built once: ninja builds the document anew on every call, which
    was more than half of this module's time when asked once a case."""
    return api.get_openapi_schema()["paths"]


def query_is_valid_on_the_wire(case) -> bool:
    operation = openapi_paths()[case.path][case.method.lower()]
    params = {p["name"]: p["schema"] for p in operation.get("parameters", []) if p["in"] == "query"}
    for name, value in (case.query or {}).items():
        strings = wire_strings(value)
        if name not in params or (strings and not valid_on_the_wire(strings, params[name])):
            return False
    return True


@schema.parametrize()
@FAST
def test_anonymous_client_conforms(seeded, case):
    case.call_and_validate(excluded_checks=semantic_exclusions(case))


@schema.parametrize()
@FAST
def test_client_with_every_scope_conforms(seeded, every_scope, case):
    case.call_and_validate(headers=every_scope, excluded_checks=semantic_exclusions(case))


@pytest.mark.parametrize(
    "strings, schema, valid",
    [
        (["false"], {"type": "array", "items": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"}}, True),
        (["false"], {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}, True),
        (["a", "b"], {"anyOf": [{"type": "string"}, {"type": "null"}]}, False),
        (["500"], {"type": "integer", "maximum": 200}, False),
        (["abc"], {"type": "integer"}, False),
        (["yesterday"], {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}, False),
    ],
)
def test_the_wire_equivalence_used_to_excuse_negative_cases_is_strict(strings, schema, valid):
    assert valid_on_the_wire(strings, schema) is valid
    assert wire_strings([False, {"x": 1}, None, 3]) == ["false", "x", "3"]
