"""Fixtures shared by the whole suite."""
from importlib import import_module
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group
from xdist.scheduler import LoadScopeScheduling

#: The design documents beside a development checkout; a lone clone has none (only test_seeds compares with it).
SHARED_DIR = Path(__file__).resolve().parent.parent.parent / "shared"


#: Tests that share processes a fixture starts once (a topology, a stack of services, the quick bench), by the
#: folder or file they live in. Under pytest-xdist (`make test`) they all run on one worker, one group after the
#: other (ProcessGroupScheduling), so each group's processes start once per run; they go first, being the longest.
PROCESS_GROUPS = {
    "tests/edge/": "edge-topology",        # `make up`'s topology, session-scoped (tests/edge/conftest.py)
    "tests/faults/": "fault-stack",        # the fault suite's stack, package-scoped (tests/faults/conftest.py)
    "tests/replicas/": "replicas",         # a primary and a streaming replica, package-scoped
    "tests/perf/test_bench.py": "quick-bench",  # `make bench QUICK=1`, module-scoped
    "tests/images/test_s3.py": "s3-server",     # moto's S3 server, module-scoped
}


def process_group(nodeid: str) -> str | None:
    """The group of a test by its node id (a path from the project's root, then ``::`` and its name)."""
    return next((group for prefix, group in PROCESS_GROUPS.items() if nodeid.startswith(prefix)), None)


#: The one unit of work all PROCESS_GROUPS make together.
STARTED_PROCESSES = "started-processes"


class ProcessGroupScheduling(LoadScopeScheduling):
    """All of PROCESS_GROUPS as one unit of work, sent whole to one worker; every other test on its own.

    pytest-xdist's ``--dist loadgroup`` groups tests marked ``xdist_group`` by renaming their node ids,
    which pytest 9 no longer lets it do (``Item._nodeid`` is gone): the marks were ignored, and each
    group's tests were spread over both workers, so the quick bench ran twice (7 minutes each) and the
    topologies started once per worker. Grouping by path in the scheduler needs no renaming.

    The groups go to one worker together, one after the other, not each to its own: each loads the
    machine (a topology under wrk, the fault suite's minute at 64 connections) and asserts timings
    (a replica left out within seconds of falling behind), which two of them side by side on 2 cores
    missed (seen: the replica test beside the fault suite's load test).
    """

    def _split_scope(self, nodeid: str) -> str:
        return STARTED_PROCESSES if process_group(nodeid) else nodeid


def pytest_xdist_make_scheduler(config, log):
    return ProcessGroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the groups first (the longest units start first), each in its own order."""
    import os

    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker collects, and sorts alike: the order is stable
        items.sort(key=lambda item: process_group(item.nodeid) is None)


@pytest.fixture
def make_staff_user(django_user_model):
    """Create a staff user in the named editorial group ("Editors" or "Publishers")."""

    def make(username: str, group: str):
        user = django_user_model.objects.create_user(username=username, password="pw", is_staff=True)
        user.groups.add(editorial_group(group))
        return user

    return make


#: The data migrations that make the editorial groups and grant them permissions, in migration order:
#: (module, function) each.
EDITORIAL_MIGRATIONS = [
    ("digests.migrations.0002_editorial_groups", "create_groups"),
    ("images.migrations.0002_editorial_permissions", "grant"),
    ("newsletters.migrations.0006_editorial_permissions", "grant"),
]


def editorial_group(name: str) -> Group:
    """The group its data migrations made; recreated by those migrations' own code when a transactional
    test's flush (which keeps content types and permissions, not data-migration rows) removed it."""
    if not Group.objects.filter(name=name).exists():
        for module, function in EDITORIAL_MIGRATIONS:
            getattr(import_module(module), function)(django_apps, None)
    return Group.objects.get(name=name)


@pytest.fixture
def editor(make_staff_user):
    return make_staff_user("editor", "Editors")


@pytest.fixture
def publisher(make_staff_user):
    return make_staff_user("publisher", "Publishers")


def _post_value(value):
    """A form value as the browser would post it (None -> "", lists stay lists)."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return str(value)


def _bound_form_data(form) -> dict:
    from django import forms

    data = {}
    for name in form.fields:
        bound = form[name]
        value = bound.value()
        widget = form.fields[name].widget
        if isinstance(widget, forms.CheckboxInput):
            if value:
                data[bound.html_name] = "on"
        elif isinstance(widget, forms.MultiWidget):
            parts = value if isinstance(value, (list, tuple)) else widget.decompress(value)
            for index, part in enumerate(parts):
                data[f"{bound.html_name}_{index}"] = _post_value(part)
        else:
            data[bound.html_name] = _post_value(value)
    return data


@pytest.fixture
def admin_form_data():
    """Turn an admin add/change (or revision) page response into the POST data its form would send.

    Includes every inline formset with its management form, so a test can change
    one field and post the rest back exactly as a browser would.
    """

    def build(response, **overrides) -> dict:
        data = _bound_form_data(response.context["adminform"].form)
        for inline in response.context["inline_admin_formsets"]:
            formset = inline.formset
            data.update(_bound_form_data(formset.management_form))
            for form in formset.forms:
                data.update(_bound_form_data(form))
        data.update(overrides)
        return data

    return build


@pytest.fixture(autouse=True)
def empty_page_cache():
    """Start every test with an empty cache: the page cache (issue 6) would outlive each test's rolled-back data."""
    from django.core.cache import cache

    from reader.caching import LOCAL

    cache.clear()
    LOCAL.reset()


@pytest.fixture(autouse=True)
def fresh_content_types(request):
    """A transactional test reads content types from the database, not from the process's cache.

    Flushes after other transactional tests re-create content types under new ids; an id cached
    before then made django-reversion write a version that broke its foreign key (seen in CI, an
    order-dependent failure). Tests in a rolled-back transaction keep the cache, so the query counts
    they measure do not change.
    """
    marker = request.node.get_closest_marker("django_db")
    if "transactional_db" in request.fixturenames or (marker and marker.kwargs.get("transaction")):
        from django.contrib.contenttypes.models import ContentType

        ContentType.objects.clear_cache()
