""""Send a test to me": a post or digest mailed to the editor asking, as readers would get it, at once.

A test is a ``Message`` with ``is_test`` (the one-message-per-item constraints leave tests out, so an
item may be tested any number of times, before or after it is published) and one ``Delivery`` with no
subscriber, to the editor's own address: it goes through the same composing and sending as every
delivery, so what arrives is what readers will get. It is sent in the request, so the editor reads
at once whether it left (or the SMTP server's answer).
"""
from django.db import transaction

from blog.models import Post
from digests.models import Digest

from . import links, sending
from .models import Delivery, Message

#: How many items one "send a test" action mails at most (each is an email sent in the request).
MOST_AT_ONCE = 5
TITLES = {Post: "title", Digest: "headline"}


class NoAddress(ValueError):
    """The user asking has no email address to send the test to."""


def send_test(item, user) -> Delivery:
    """Mail `item` (a Post or a Digest) to `user`'s address now; the delivery as it ended (sent, or failed
    with its error, or queued again after a temporary failure)."""
    if not user.email:
        raise NoAddress("Your account has no email address: add one to your user to receive tests.")
    with transaction.atomic():
        message = Message.objects.create(
            post=item if isinstance(item, Post) else None, digest=item if isinstance(item, Digest) else None,
            subject=getattr(item, TITLES[type(item)]), url=links.absolute(item.get_absolute_url()), is_test=True,
            requested_by=user)
        delivery = Delivery.objects.create(message=message, subscriber=None, email=user.email)
    sending.send_due(message_id=message.pk)
    delivery.refresh_from_db()
    return delivery


def outcome(item, delivery: Delivery) -> str:
    """What the editor is told."""
    if delivery.state == Delivery.State.SENT:
        return f"Sent a test of “{item}” to {delivery.email}."
    if delivery.last_error:
        return f"The test of “{item}” to {delivery.email} was not sent ({delivery.state}): {delivery.last_error}"
    return f"The test of “{item}” to {delivery.email} is {delivery.get_state_display()}."
