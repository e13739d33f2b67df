"""Sign-in lockouts (django-axes): the page a locked-out person sees, and unlocking from the admin.

Axes records every failed sign-in (``AccessAttempt``, ``AccessFailureLog``) and, after
``AXES_FAILURE_LIMIT`` failures for one username or from one address, refuses further
attempts for ``AXES_COOLOFF_TIME``; each attempt during a lockout starts the cool-off again
(axes' default), so "now + cool-off" is when the next attempt may succeed.
"""
import datetime

from axes.admin import AccessAttemptAdmin
from axes.utils import reset
from django.conf import settings
from django.contrib import admin, messages
from django.shortcuts import render
from django.utils import timezone


def locked_out(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: a page saying sign-in is locked and from when to try again (429)."""
    cool_off = settings.AXES_COOLOFF_TIME
    context = {"retry_at": timezone.now() + cool_off, "cool_off_minutes": int(cool_off.total_seconds() // 60),
               "failure_limit": settings.AXES_FAILURE_LIMIT, "title": "Sign-in locked"}
    response = render(request, "accounts/locked_out.html", context, status=429)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


class UnlockingAccessAttemptAdmin(AccessAttemptAdmin):
    """Axes' list of failed sign-ins, with an action that lifts the lockouts they caused."""

    actions = [*AccessAttemptAdmin.actions, "unlock"]

    @admin.action(description="Unlock the selected usernames and addresses (forget their failures)",
                  permissions=["delete"])
    def unlock(self, request, queryset):
        pairs = set(queryset.values_list("username", "ip_address"))
        removed = sum(reset(username=username) for username, _ in pairs if username)
        removed += sum(reset(ip=address) for _, address in pairs if address)
        self.message_user(request, f"Unlocked {len(pairs)} username/address pair(s); "
                                   f"forgot {removed} failure record(s).", messages.SUCCESS)
