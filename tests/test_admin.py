"""The editorial admin as an Editor uses it.

Every changelist, add and change page of the content models loads for an
editor, and a changelist costs the same number of queries for 3 rows as for
30. Filters, search, date hierarchy and autocomplete return the right rows, and
the generated FAQ can be stored for editing.
"""
import datetime
import json

import pytest
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from reversion.models import Version
from taggit.models import Tag

from blog.factories import AuthorFactory, PostFactory
from blog.models import Author, Post
from digests.factories import (
    ActionItemFactory,
    DigestFactory,
    DigestReferenceFactory,
    FAQEntryFactory,
    ReferenceFactory,
    RepositoryFactory,
    TopicFactory,
)
from digests.models import ActionItem, Digest, FAQEntry, Reference, Repository, Topic
from publishing.workflow import Status

pytestmark = pytest.mark.django_db


def make_topic(n):
    topic = TopicFactory()
    RepositoryFactory.create_batch(2, topic=topic)
    return topic


def make_digest(n):
    digest = DigestFactory(status=[Status.DRAFT, Status.IN_REVIEW, Status.PUBLISHED][n % 3])
    for number in (1, 2):
        DigestReferenceFactory(digest=digest, number=number)
    ActionItemFactory(digest=digest)
    return digest


def make_post(n):
    return PostFactory(authors=[AuthorFactory(), AuthorFactory()], tags=[f"tag-{n}", "common"])


def make_author(n):
    author = AuthorFactory()
    PostFactory(authors=[author])
    return author


def make_tag(n):
    return Tag.objects.create(name=f"tag number {n}", slug=f"tag-number-{n}")


#: Every content model in the admin, with a function that makes one realistic row of it.
ROW_MAKERS = {
    Topic: make_topic,
    Repository: lambda n: RepositoryFactory(),
    Reference: lambda n: ReferenceFactory(),
    Digest: make_digest,
    Post: make_post,
    Author: make_author,
    Tag: make_tag,
}
MODEL_IDS = [model._meta.label for model in ROW_MAKERS]


def url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def count_queries(client, address: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(address)
    assert response.status_code == 200, address
    return len(queries)


def test_every_content_model_is_covered():
    registered = {model for model in admin.site._registry if model._meta.app_label in {"digests", "blog", "taggit"}}
    assert registered == set(ROW_MAKERS)


@pytest.mark.parametrize("model", ROW_MAKERS, ids=MODEL_IDS)
def test_changelist_query_count_does_not_grow_with_rows(client, editor, model, monkeypatch):
    # Counted exactly whatever the planner's statistics say: on PostgreSQL, pg_class.reltuples is the
    # table's as of its last ANALYZE, which rows committed by other tests may have left in the thousands.
    monkeypatch.setattr("publishing.changelists.EXACT_BELOW", 10**9)
    make_row = ROW_MAKERS[model]
    rows = [make_row(n) for n in range(3)]
    client.force_login(editor)
    client.get(url(model, "changelist"))  # warm the content-type and permission caches
    with_three = count_queries(client, url(model, "changelist"))
    rows += [make_row(n) for n in range(3, 30)]
    response = client.get(url(model, "changelist"))
    assert response.context["cl"].result_count == model.objects.count() >= 30
    with_thirty = count_queries(client, url(model, "changelist"))
    assert with_three == with_thirty


@pytest.mark.parametrize("model", ROW_MAKERS, ids=MODEL_IDS)
def test_editor_loads_add_and_change_pages(client, editor, model):
    obj = ROW_MAKERS[model](0)
    client.force_login(editor)
    assert client.get(url(model, "add")).status_code == 200
    response = client.get(url(model, "change", obj.pk))
    assert response.status_code == 200
    assert response.context["original"] == obj
    assert client.get(url(model, "history", obj.pk)).status_code == 200


def add_digest_rows(digest, start: int, stop: int) -> None:
    for n in range(start, stop):
        DigestReferenceFactory(digest=digest, number=n + 1)
        ActionItemFactory(digest=digest, position=n)
        FAQEntryFactory(digest=digest, position=n)


def add_post_rows(post, start: int, stop: int) -> None:
    for n in range(start, stop):
        post.post_authors.create(author=AuthorFactory(), position=n)
        post.tags.add(f"tag {n}")


@pytest.mark.parametrize(
    ("factory", "add_rows"),
    [(DigestFactory, add_digest_rows), (PostFactory, add_post_rows)],
    ids=["digest", "post"],
)
def test_change_page_query_count_does_not_grow_with_inline_rows(client, editor, factory, add_rows):
    """2 or 20 cited references, action items, FAQ entries (authors, tags): the same queries."""
    obj = factory(status=Status.DRAFT, published_at=None, **({"authors": []} if factory is PostFactory else {}))
    add_rows(obj, 0, 2)
    change = url(type(obj), "change", obj.pk)
    client.force_login(editor)
    client.get(change)
    few = count_queries(client, change)
    add_rows(obj, 2, 20)
    response = client.get(change)
    assert sum(len(inline.formset.initial_forms) for inline in response.context["inline_admin_formsets"]) >= 40
    assert count_queries(client, change) == few


def test_inline_autocompletes_show_the_selected_choice(client, editor):
    """The preloaded autocomplete renders exactly what Django's own widget would."""
    digest = DigestFactory(status=Status.DRAFT, published_at=None)
    cited = DigestReferenceFactory(digest=digest, number=1, reference=ReferenceFactory(title="Fix <the> thing"))
    item = ActionItemFactory(digest=digest, repository=RepositoryFactory(full_name="pytorch/ignite"))
    ActionItemFactory(digest=digest, repository=None, text="No repository")
    client.force_login(editor)
    page = client.get(url(Digest, "change", digest.pk)).content.decode()
    label = f"{cited.reference.repository.full_name} #{cited.reference.number} · Fix &lt;the&gt; thing · "
    assert f'<option value="{cited.reference_id}" selected>{label}{cited.reference.merged_at.date().isoformat()}</option>' in page
    assert f'<option value="{item.repository_id}" selected>pytorch/ignite</option>' in page
    post = PostFactory(status=Status.DRAFT, published_at=None, authors=[AuthorFactory(name="Ada", handle="ada")], tags=["dynamo"])
    page = client.get(url(Post, "change", post.pk)).content.decode()
    assert f'<option value="{post.authors.get().pk}" selected>Ada (@ada)</option>' in page
    assert f'<option value="{Tag.objects.get(name="dynamo").pk}" selected>dynamo</option>' in page


# --- filters, search, date hierarchy ----------------------------------------------------------


def result_pks(client, address: str) -> set[int]:
    response = client.get(address)
    assert response.status_code == 200, address
    assert "errors" not in response.context or not response.context.get("errors")
    return {obj.pk for obj in response.context["cl"].result_list}


def test_digest_filters_search_and_date_hierarchy(client, editor):
    pytorch = TopicFactory(name="PyTorch", slug="pytorch")
    executorch = RepositoryFactory(full_name="pytorch/executorch", topic=pytorch)
    june = DigestFactory(topic=pytorch, date=datetime.date(2026, 6, 29), headline="FlashDecoding lands")
    DigestReferenceFactory(digest=june, reference=ReferenceFactory(repository=executorch), number=1)
    may = DigestFactory(topic=pytorch, date=datetime.date(2026, 5, 2), status=Status.DRAFT, published_at=None)
    other = DigestFactory(date=datetime.date(2026, 6, 3), summary="Nothing about flashing.")
    DigestReferenceFactory(digest=other, number=1)  # a second repository, so the filter is offered
    client.force_login(editor)
    base = url(Digest, "changelist")
    assert result_pks(client, base) == {june.pk, may.pk, other.pk}
    assert result_pks(client, f"{base}?status__exact=draft") == {may.pk}
    assert result_pks(client, f"{base}?topic__id__exact={pytorch.pk}") == {june.pk, may.pk}
    assert result_pks(client, f"{base}?references__repository__id__exact={executorch.pk}") == {june.pk}
    # Two citations from the same repository: still one row, and the count column counts all citations.
    DigestReferenceFactory(digest=june, reference=ReferenceFactory(repository=executorch), number=2)
    DigestReferenceFactory(digest=june, number=3)
    filtered = client.get(f"{base}?references__repository__id__exact={executorch.pk}").context["cl"]
    assert filtered.result_count == 1
    assert [(digest.pk, digest.reference_total) for digest in filtered.result_list] == [(june.pk, 3)]
    assert result_pks(client, f"{base}?date__year=2026&date__month=6") == {june.pk, other.pk}
    assert result_pks(client, f"{base}?date__year=2026&date__month=6&date__day=29") == {june.pk}
    assert result_pks(client, f"{base}?q=flashdecoding") == {june.pk}
    assert result_pks(client, f"{base}?q=pytorch") == {june.pk, may.pk}
    page = client.get(base).content.decode()
    assert "By status" in page and "By topic" in page


def test_post_filters_search_and_date_hierarchy(client, editor):
    ada = AuthorFactory(name="Ada Lovelace", handle="ada")
    first = PostFactory(title="Graph breaks", authors=[ada], tags=["dynamo"],
                        published_at=timezone.make_aware(datetime.datetime(2026, 3, 1, 9)))
    second = PostFactory(title="Compile everything", authors=[AuthorFactory(), ada], tags=["inductor"],
                         published_at=timezone.make_aware(datetime.datetime(2026, 4, 1, 9)))
    draft = PostFactory(title="Unfinished", status=Status.DRAFT, published_at=None, tags=["dynamo"])
    dynamo = Tag.objects.get(name="dynamo")
    client.force_login(editor)
    base = url(Post, "changelist")
    assert result_pks(client, f"{base}?status__exact=draft") == {draft.pk}
    assert result_pks(client, f"{base}?authors__id__exact={ada.pk}") == {first.pk, second.pk}
    assert result_pks(client, f"{base}?tags__id__exact={dynamo.pk}") == {first.pk, draft.pk}
    assert result_pks(client, f"{base}?published_at__year=2026&published_at__month=4") == {second.pk}
    assert result_pks(client, f"{base}?q=compile") == {second.pk}
    assert result_pks(client, f"{base}?q=ada") == {first.pk, second.pk}  # by author handle
    listing = client.get(base).content.decode()
    assert "Ada Lovelace (@ada)" in listing and "dynamo" in listing


def test_reference_repository_and_topic_filters(client, editor):
    topic = TopicFactory(name="Wire topic")
    repository = RepositoryFactory(full_name="pytorch/ignite", topic=topic)
    release = ReferenceFactory(repository=repository, kind=Reference.Kind.RELEASE, title="v0.5 release",
                               merged_at=timezone.make_aware(datetime.datetime(2026, 2, 2)))
    commit = ReferenceFactory(kind=Reference.Kind.COMMIT, sha="a" * 40, author_login="ezyang")
    client.force_login(editor)
    base = url(Reference, "changelist")
    assert result_pks(client, f"{base}?kind__exact=release") == {release.pk}
    assert result_pks(client, f"{base}?repository__id__exact={repository.pk}") == {release.pk}
    assert result_pks(client, f"{base}?q=ezyang") == {commit.pk}
    assert result_pks(client, f"{base}?q=pytorch/ignite") == {release.pk}
    assert result_pks(client, f"{base}?merged_at__year=2026&merged_at__month=2") == {release.pk}
    repositories = url(Repository, "changelist")
    assert result_pks(client, f"{repositories}?topic__id__exact={topic.pk}") == {repository.pk}
    assert result_pks(client, f"{repositories}?q=ignite") == {repository.pk}
    assert result_pks(client, f"{url(Topic, 'changelist')}?q=wire") == {topic.pk}


def test_author_and_tag_search(client, editor):
    ada = AuthorFactory(name="Ada Lovelace", handle="countess")
    AuthorFactory(name="Grace Hopper", handle="grace")
    compile_tag = Tag.objects.create(name="torch.compile", slug="torch-compile")
    Tag.objects.create(name="skills", slug="skills")
    client.force_login(editor)
    assert result_pks(client, f"{url(Author, 'changelist')}?q=countess") == {ada.pk}
    assert result_pks(client, f"{url(Tag, 'changelist')}?q=compile") == {compile_tag.pk}


# --- autocomplete ----------------------------------------------------------------------------


def autocomplete(client, app_label: str, model_name: str, field_name: str, term: str) -> list[str]:
    response = client.get(
        reverse("admin:autocomplete"),
        {"app_label": app_label, "model_name": model_name, "field_name": field_name, "term": term},
    )
    assert response.status_code == 200, response.content
    return [result["text"] for result in json.loads(response.content)["results"]]


def test_autocomplete_for_editors(client, editor):
    RepositoryFactory(full_name="pytorch/executorch")
    RepositoryFactory(full_name="pytorch/torchtitan")
    AuthorFactory(name="Edward Yang", handle="ezyang")
    AuthorFactory(name="Someone Else", handle="else")
    Tag.objects.create(name="dynamo", slug="dynamo")
    Tag.objects.create(name="inductor", slug="inductor")
    TopicFactory(name="PyTorch")
    flash = ReferenceFactory(title="Enable FlashDecoding by default")
    client.force_login(editor)
    assert autocomplete(client, "digests", "actionitem", "repository", "execu") == ["pytorch/executorch"]
    assert autocomplete(client, "blog", "postauthor", "author", "ezy") == ["Edward Yang (@ezyang)"]
    assert autocomplete(client, "blog", "taggedpost", "tag", "dyn") == ["dynamo"]
    assert autocomplete(client, "digests", "digest", "topic", "pyt") == ["PyTorch"]
    assert autocomplete(client, "digests", "digestreference", "reference", "flash") == [
        f"{flash.repository.full_name} #{flash.number} · Enable FlashDecoding by default · {flash.merged_at.date().isoformat()}"
    ]


def test_autocomplete_refuses_anonymous_users(client):
    response = client.get(
        reverse("admin:autocomplete"),
        {"app_label": "digests", "model_name": "actionitem", "field_name": "repository", "term": "x"},
    )
    assert response.status_code == 302


# --- the generated FAQ ------------------------------------------------------------------------

SEED_SUMMARY = (
    "ExecuTorch shipped FlashDecoding by default for WebGPU decode operations [ref:1], while PyTorch's "
    "Inductor fixed a critical backward failure in multi-frame training pipelines [ref:3]."
)
SEED_ACTIONS = [
    ("If running ExecuTorch on WebGPU: verify FlashDecoding is enabled in your decode pipeline and benchmark "
     "against baseline", "pytorch/executorch", "plan"),
    ("If using torch.compile in multi-frame training: apply Inductor registry fix immediately to prevent silent "
     "backward failures", "pytorch/pytorch", "immediate"),
    ("If running TorchTitan RL training: upgrade DeepEP to V2 and enable weight sync overlap for 10-15% training "
     "speedup", "pytorch/torchtitan", "plan"),
]
SEED_REFERENCE_REPOSITORIES = [
    "pytorch/executorch", "pytorch/executorch", "pytorch/pytorch", "pytorch/torchtitan", "pytorch/torchtitan",
    "pytorch/torchtitan", "pytorch/torchtitan", "pytorch/pytorch", "pytorch/pytorch", "pytorch/pytorch",
    "pytorch/ignite", "pytorch/ignite",
]
SEED_FAQ = [
    ("What changed in PyTorch on June 29, 2026?",
     # citations stripped without leaving orphaned punctuation (the seed's own answer has "operations , while")
     "ExecuTorch shipped FlashDecoding by default for WebGPU decode operations, while PyTorch's Inductor fixed a "
     "critical backward failure in multi-frame training pipelines."),
    ("What should PyTorch teams do about it?", " • ".join(text for text, _, _ in SEED_ACTIONS)),
    ("Which PyTorch repositories shipped on June 29, 2026?",
     "pytorch/executorch, pytorch/pytorch, pytorch/torchtitan, pytorch/ignite"),
]


@pytest.fixture
def seed_like_digest():
    """The first seed digest's content, built the way an editor would enter it."""
    topic = TopicFactory(name="PyTorch", slug="pytorch")
    digest = DigestFactory(
        topic=topic, date=datetime.date(2026, 6, 29), summary=SEED_SUMMARY, body="", status=Status.DRAFT,
        published_at=None,
    )
    # Cited out of order on purpose: citation order, not creation order, decides the repository list.
    numbered = list(enumerate(SEED_REFERENCE_REPOSITORIES, start=1))
    for number, full_name in reversed(numbered):
        repository = RepositoryFactory(full_name=full_name, topic=topic)
        DigestReferenceFactory(digest=digest, number=number, reference=ReferenceFactory(repository=repository))
    for position, (text, full_name, priority) in enumerate(SEED_ACTIONS, start=1):
        ActionItemFactory(
            digest=digest, position=position, text=text, priority=priority,
            repository=Repository.objects.get(full_name=full_name),
        )
    return digest


def test_default_faq_matches_the_seed_style(seed_like_digest):
    assert seed_like_digest.default_faq() == SEED_FAQ
    assert seed_like_digest.faq() == SEED_FAQ


def test_editors_faq_replaces_the_defaults(seed_like_digest):
    FAQEntryFactory(digest=seed_like_digest, question="Why?", answer="Because.")
    assert seed_like_digest.faq() == [("Why?", "Because.")]


def test_default_faq_of_an_empty_digest():
    digest = DigestFactory(topic=TopicFactory(name="JAX"), date=datetime.date(2026, 1, 5), summary="Quiet day.")
    # Questions with nothing to answer are left out: the admin refuses an empty answer.
    assert digest.default_faq() == [("What changed in JAX on January 5, 2026?", "Quiet day.")]
    assert all(answer for _question, answer in digest.faq())


def run_faq_action(client, digests):
    return client.post(
        url(Digest, "changelist"),
        {"action": "add_default_faq", ACTION_CHECKBOX_NAME: [str(digest.pk) for digest in digests]},
        follow=True,
    )


def test_admin_action_stores_the_generated_faq_for_editing(client, editor, seed_like_digest, admin_form_data):
    has_faq = DigestFactory(status=Status.DRAFT, published_at=None)
    FAQEntryFactory(digest=has_faq, question="Kept?", answer="Yes.")
    client.force_login(editor)
    response = run_faq_action(client, [seed_like_digest, has_faq])
    assert "Added the generated FAQ to 1 digest." in response.content.decode()
    stored = [(entry.position, entry.question, entry.answer) for entry in seed_like_digest.faq_entries.all()]
    assert stored == [(position, q, a) for position, (q, a) in enumerate(SEED_FAQ, start=1)]
    assert list(has_faq.faq_entries.values_list("question", flat=True)) == ["Kept?"]

    version = Version.objects.get_for_object(seed_like_digest).get()  # the change is in the history
    assert version.revision.user == editor
    assert FAQEntry in {v.content_type.model_class() for v in version.revision.version_set.all()}

    run_faq_action(client, [seed_like_digest])  # running again adds nothing
    assert seed_like_digest.faq_entries.count() == 3

    # The stored entries are ordinary FAQ rows an editor can change in the digest form.
    change = url(Digest, "change", seed_like_digest.pk)
    data = admin_form_data(client.get(change), **{"faq_entries-0-answer": "Edited answer."})
    assert client.post(change, data).status_code == 302
    assert seed_like_digest.faq()[0] == (SEED_FAQ[0][0], "Edited answer.")


def test_editor_cannot_add_faq_to_a_published_digest(client, editor, publisher):
    live = DigestFactory(status=Status.PUBLISHED)
    client.force_login(editor)
    run_faq_action(client, [live])
    assert not FAQEntry.objects.filter(digest=live).exists()
    client.force_login(publisher)
    run_faq_action(client, [live])
    # no action items and no references: only the "What changed" question has an answer
    assert list(FAQEntry.objects.filter(digest=live).values_list("answer", flat=True)) == ["Something shipped."]


def test_action_items_keep_their_order_in_the_admin(client, editor, seed_like_digest):
    ActionItem.objects.filter(digest=seed_like_digest, position=1).update(position=9)
    client.force_login(editor)
    response = client.get(url(Digest, "change", seed_like_digest.pk))
    formset = next(f.formset for f in response.context["inline_admin_formsets"] if f.formset.prefix == "action_items")
    assert [form.instance.position for form in formset.forms if form.instance.pk] == [2, 3, 9]


def test_autocomplete_results_are_in_name_order(client, editor):
    for name in ["Zed Author", "Abe Author", "Mia Author"]:
        AuthorFactory(name=name, handle="")
    client.force_login(editor)
    assert autocomplete(client, "blog", "postauthor", "author", "author") == ["Abe Author", "Mia Author", "Zed Author"]


def test_tag_admin_counts_posts_and_offers_no_unguarded_merge(client, editor):
    PostFactory(tags=["dynamo", "inductor"])
    PostFactory(tags=["dynamo"])
    client.force_login(editor)
    response = client.get(url(Tag, "changelist"))
    counts = {tag.name: tag.post_total for tag in response.context["cl"].result_list}
    assert counts == {"dynamo": 2, "inductor": 1}
    actions = {name for name, _ in response.context["action_form"].fields["action"].choices} if response.context.get("action_form") else set()
    assert "render_tag_form" not in actions
    assert client.get("/admin/taggit/tag/merge-tags/").status_code in (302, 404)
    assert Tag.objects.count() == 2


@pytest.mark.parametrize("app_label", [None, "digests", "blog", "taggit"])
def test_admin_index_pages_load_for_editors(client, editor, app_label):
    client.force_login(editor)
    address = reverse("admin:app_list", args=[app_label]) if app_label else reverse("admin:index")
    response = client.get(address)
    assert response.status_code == 200
    listed = {model["object_name"] for app in response.context["app_list"] for model in app["models"]}
    expected = {"digests": {"Topic", "Repository", "Reference", "Digest"}, "blog": {"Post", "Author"}, "taggit": {"Tag"}}
    for label, names in expected.items():
        if app_label in (None, label):
            assert names <= listed


def test_digest_changelist_offers_regeneration_from_github_activity(client, editor):
    DigestFactory(status="draft")  # the action menu only shows over a non-empty list
    client.force_login(editor)
    response = client.get(reverse("admin:digests_digest_changelist"))
    assert b'value="regenerate_digests"' in response.content


@pytest.mark.parametrize("slug", ["", "!?"])
def test_the_tag_admin_refuses_a_tag_without_a_usable_slug(client, editor, slug):
    """Every tag needs a slug that names its page: a post card links to it, so a bad one would break the card."""
    client.force_login(editor)
    response = client.post(url(Tag, "add"), {"name": "!?", "slug": slug})
    assert response.status_code == 200 and response.context["adminform"].form.errors["slug"]
    assert not Tag.objects.filter(name="!?").exists()
