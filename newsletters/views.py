"""Signing up, confirming, managing and leaving (newsletters/subscribing.py holds the rules).

Every page here is never cached (``never_cache``: ``private, no-store``, which the edge middleware
keeps), and the pages reached by a signed link send no Referer and ask not to be indexed: the token
in their URL is the reader's key.
"""
import functools

from django.conf import settings
from django.core import signing
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from . import links, subscribing, throttles
from .forms import SubscribeForm, SubscriptionForm, describe


def private_link(view):
    """For pages whose URL holds a token: no Referer leaks it, no robot indexes it, no cache keeps it."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Referrer-Policy"] = "no-referrer"
        response["X-Robots-Tag"] = "noindex, nofollow"
        return response

    return never_cache(wrapped)


@csrf_exempt
@never_cache
@require_http_methods(["GET", "POST"])
def subscribe(request):
    """The sign-up form's target. GET shows the form alone (after an error, without JavaScript).

    CSRF-exempt, because the form sits on cached pages that must carry no per-reader token or
    cookie, and because a forged POST can do no more than anyone can: have a confirmation email
    sent to an address. Nothing else happens until that address's owner clicks its link.

    The answer is the same page, with the same status, for a new, pending, confirmed, unsubscribed
    or suppressed address, for a filled honeypot and for an address over its rate — so no one learns
    whether an address is subscribed. Over the per-client rate: 429, which says nothing about an
    address. A bad address or an unknown follow: 400 with the form and the error.
    """
    if request.method == "GET":
        form = SubscribeForm(initial={"follow": request.GET.get("follow", "wire")})
        return render(request, "newsletters/subscribe.html", {"subscribe_form": form})
    if not throttles.allow("client", throttles.client_ident(request), settings.NEWSLETTERS_RATE_PER_CLIENT):
        return render(request, "newsletters/too_many.html", status=429)
    form = SubscribeForm(request.POST)
    if form.is_trap:
        return _check_your_inbox(request)
    if not form.is_valid():
        return render(request, "newsletters/subscribe.html", {"subscribe_form": form}, status=400)
    data = form.cleaned_data
    if throttles.allow("address", data["email"].lower(), settings.NEWSLETTERS_RATE_PER_ADDRESS):
        kind, target = data["follow"]
        subscribing.subscribe(data["email"], kind, target, data["cadence"], data["daily_at"])
    return _check_your_inbox(request)


def _check_your_inbox(request):
    return render(request, "newsletters/check_inbox.html", {"hours": settings.NEWSLETTERS_CONFIRM_HOURS})


def _bad_link(request, error: links.BadLink, purpose: str):
    """Expired (410), used or no longer anyone's (410), or not ours at all (400)."""
    cause = error.__cause__
    if isinstance(cause, signing.SignatureExpired):
        problem, status = "expired", 410
    elif cause is None:
        problem, status = "used", 410
    else:
        problem, status = "invalid", 400
    context = {"problem": problem, "purpose": purpose, "hours": settings.NEWSLETTERS_CONFIRM_HOURS}
    return render(request, "newsletters/bad_link.html", context, status=status)


@csrf_exempt
@private_link
@require_http_methods(["GET", "POST"])
def confirm(request, token: str):
    """GET shows a button, POST confirms: mail clients' link scanners fetch GETs, and must not confirm.

    CSRF-exempt: the signed, single-use token in the URL is the authority (a forger would need it,
    and whoever has it may confirm); a CSRF cookie would only fail readers whose browser refuses it.
    """
    try:
        subscriber = links.subscriber_to_confirm(token)
    except links.BadLink as error:
        return _bad_link(request, error, "confirm")
    if request.method == "GET":
        return render(request, "newsletters/confirm.html", {"subscriber": subscriber})
    subscribing.confirm(subscriber)
    return render(request, "newsletters/confirmed.html", {"manage_url": links.manage_url(subscriber)})


@private_link
@require_http_methods(["GET", "POST"])
def manage(request, token: str):
    """The subscriber's page, reached from every email: follows, cadences, leaving, deleting (CSRF-checked)."""
    try:
        subscriber = links.subscriber_to_manage(token)
    except links.BadLink as error:
        return _bad_link(request, error, "manage")
    if request.method == "POST":
        return _manage_post(request, subscriber, token)
    return _manage_page(request, subscriber)


def _manage_page(request, subscriber, *, status=200, notice="", invalid=None):
    rows = []
    for follow in subscriber.subscriptions.order_by("kind", "target"):
        form = invalid if invalid is not None and invalid.instance.pk == follow.pk else SubscriptionForm(
            instance=follow, prefix=f"s{follow.pk}")
        rows.append({"follow": follow, "label": describe(follow.kind, follow.target), "form": form})
    context = {"subscriber": subscriber, "rows": rows, "notice": notice, "time_zone": settings.NEWSLETTERS_TIME_ZONE}
    return render(request, "newsletters/manage.html", context, status=status)


def _manage_post(request, subscriber, token):
    action = request.POST.get("action", "")
    if action == "unsubscribe":
        subscribing.unsubscribe(subscriber)
        return _manage_page(request, subscriber, notice="You are unsubscribed from everything.")
    if action == "delete":
        subscribing.delete_data(subscriber)
        return render(request, "newsletters/deleted.html")
    if action not in ("save", "remove"):
        return _manage_page(request, subscriber, status=400, notice="Unknown action.")
    pk = request.POST.get("subscription", "")
    follow = subscriber.subscriptions.filter(pk=pk).first() if pk.isdigit() else None
    if follow is None:
        return _manage_page(request, subscriber, status=400, notice="That subscription is not yours or is gone.")
    if action == "remove":
        follow.delete()
        return _manage_page(request, subscriber, notice=f"You no longer follow {describe(follow.kind, follow.target)}.")
    form = SubscriptionForm(request.POST, instance=follow, prefix=f"s{follow.pk}")
    if not form.is_valid():
        return _manage_page(request, subscriber, status=400, notice="Please correct the error below.", invalid=form)
    form.save()
    return _manage_page(request, subscriber, notice=f"Saved: {describe(follow.kind, follow.target)}.")


@csrf_exempt
@private_link
@require_http_methods(["GET", "POST"])
def unsubscribe(request, token: str):
    """The List-Unsubscribe URL. RFC 8058: a POST (``List-Unsubscribe=One-Click``, but any POST) with
    no cookie and no CSRF token unsubscribes from everything at once; a GET only shows a button."""
    try:
        subscriber = links.subscriber_to_manage(token)
    except links.BadLink as error:
        return _bad_link(request, error, "unsubscribe")
    if request.method == "GET":
        return render(request, "newsletters/unsubscribe.html", {"subscriber": subscriber})
    subscribing.unsubscribe(subscriber)
    return render(request, "newsletters/unsubscribed.html", {"manage_url": links.manage_url(subscriber)})
