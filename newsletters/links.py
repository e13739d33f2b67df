"""The signed links in every email: confirm (single use, expires), manage and unsubscribe (no password).

Each token is Django's signing of the subscriber's id and one of its keys, with a salt per purpose, so
a manage link cannot be used as a confirmation and no link can be forged without SECRET_KEY. Keys make
links revocable: confirming empties ``confirm_key`` (the link works once); a new ``manage_key`` (deleting
one's data) makes every manage and unsubscribe link already mailed stop working.
"""
from django.conf import settings
from django.core import signing
from django.urls import reverse

from .models import Subscriber

CONFIRM_SALT = "newsletters.confirm"
MANAGE_SALT = "newsletters.manage"


class BadLink(Exception):
    """A link that is forged, expired, already used or no longer anyone's."""


def absolute(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


def confirm_token(subscriber: Subscriber) -> str:
    return signing.TimestampSigner(salt=CONFIRM_SALT).sign_object([subscriber.pk, subscriber.confirm_key])


def manage_token(subscriber: Subscriber) -> str:
    return signing.Signer(salt=MANAGE_SALT).sign_object([subscriber.pk, subscriber.manage_key])


def confirm_url(subscriber: Subscriber) -> str:
    return absolute(reverse("newsletters:confirm", args=[confirm_token(subscriber)]))


def manage_url(subscriber: Subscriber) -> str:
    return absolute(reverse("newsletters:manage", args=[manage_token(subscriber)]))


def unsubscribe_url(subscriber: Subscriber) -> str:
    """The List-Unsubscribe URL (RFC 8058: a POST to it unsubscribes at once, no cookie or CSRF token)."""
    return absolute(reverse("newsletters:unsubscribe", args=[manage_token(subscriber)]))


def subscriber_to_confirm(token: str) -> Subscriber:
    max_age = settings.NEWSLETTERS_CONFIRM_HOURS * 3600
    try:
        pk, key = signing.TimestampSigner(salt=CONFIRM_SALT).unsign_object(token, max_age=max_age)
    except (signing.BadSignature, ValueError, TypeError) as error:
        raise BadLink(str(error)) from error
    subscriber = Subscriber.objects.filter(pk=pk, confirm_key=key).exclude(confirm_key="").first()
    if subscriber is None:
        raise BadLink("This link was already used or its address deleted.")
    return subscriber


def subscriber_to_manage(token: str) -> Subscriber:
    try:
        pk, key = signing.Signer(salt=MANAGE_SALT).unsign_object(token)
    except (signing.BadSignature, ValueError, TypeError) as error:
        raise BadLink(str(error)) from error
    subscriber = Subscriber.objects.filter(pk=pk, manage_key=key).first()
    if subscriber is None:
        raise BadLink("This link is no longer anyone's.")
    return subscriber
