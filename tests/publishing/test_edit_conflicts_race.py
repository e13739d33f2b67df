"""Two saves of one stale form landing at once cannot both pass the edit-conflict check (issue 37).

Both editors open the post, then save different titles at the same moment, each in its own thread
with its own connection. Each save, once past the check, waits (at most MEETING seconds) at the
post's ``pre_save`` for the other to get there too: the interleaving in which both checks ran
before either write. With the row locked before the check (``EditConflictAdmin.get_object``) the
second save waits at the lock instead, sees the first one's title, and comes back as a conflict.
"""
import threading

import pytest
from django.db import connection, connections
from django.db.models.signals import pre_save
from django.test import Client

from blog.factories import AuthorFactory, PostFactory
from blog.models import Post
from publishing.workflow import Status

from .test_edit_conflicts import change_url

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="row locks between concurrent transactions are PostgreSQL's; SQLite has one writer at a time, "
               "so the interleaving cannot happen there (CI's PostgreSQL pass runs this)",
    ),
    pytest.mark.django_db(transaction=True),
]

MEETING = 3


def test_two_saves_at_once_cannot_both_pass_the_check(editor, publisher, admin_form_data):
    post = PostFactory(status=Status.DRAFT, published_at=None, title="Old", authors=[AuthorFactory()])
    clients = {name: Client() for name in ("a", "b")}
    clients["a"].force_login(editor)
    clients["b"].force_login(publisher)
    data = {name: admin_form_data(client.get(change_url(post)), title=f"Title by {name}")
            for name, client in clients.items()}
    arrived, results = {name: threading.Event() for name in clients}, {}

    def meet(sender, instance, **kwargs):
        name = threading.current_thread().name
        if name in arrived and not arrived[name].is_set():
            arrived[name].set()
            arrived["b" if name == "a" else "a"].wait(MEETING)

    def save(name):
        try:
            results[name] = clients[name].post(change_url(post), data[name]).status_code
        finally:
            connections.close_all()

    pre_save.connect(meet, sender=Post, weak=False, dispatch_uid="test-edit-conflict-race")
    try:
        threads = [threading.Thread(target=save, args=[name], name=name) for name in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        pre_save.disconnect(sender=Post, dispatch_uid="test-edit-conflict-race")
    assert sorted(results.values()) == [200, 302], results  # one saved, the other shown the conflict
    winner = next(name for name, code in results.items() if code == 302)
    assert Post.objects.get(pk=post.pk).title == f"Title by {winner}"


def test_the_save_lock_lets_rows_referring_to_the_item_be_added(publisher, rf):
    """The save's lock is FOR NO KEY UPDATE: inserting a row that refers to the item (which takes
    FOR KEY SHARE on the item's row) does not wait for it, as it would for a plain FOR UPDATE."""
    from django.contrib import admin
    from django.db import OperationalError, transaction

    from blog.models import PostAuthor

    post = PostFactory(status=Status.DRAFT, published_at=None, authors=[AuthorFactory()])
    dave = AuthorFactory(name="Dave")
    locked, release = threading.Event(), threading.Event()

    def hold_the_save_lock():
        try:
            with transaction.atomic():
                request = rf.post(change_url(post))
                request.user = publisher
                admin.site._registry[Post].get_object(request, str(post.pk))
                locked.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_save_lock)
    holder.start()
    try:
        assert locked.wait(10)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            try:
                # bulk_create: no signal updates the post itself, which would rightly wait
                PostAuthor.objects.bulk_create([PostAuthor(post=post, author=dave, position=1)])
            except OperationalError as error:
                pytest.fail(f"adding a byline row waited for the save's lock: {error}")
    finally:
        release.set()
        holder.join(30)
    assert PostAuthor.objects.filter(post=post, author=dave).exists()
