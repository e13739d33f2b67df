"""The admin site whose front page is the newsroom (issue 26).

``/admin/`` shows the signed-in user what waits for them, by role: items waiting for review
(Publishers), what goes out in the next seven days, their own drafts, drafted digests no
editor has opened, newsletters being sent or with failed deliveries (``newsletters.progress.sends``),
and failures they may act on. Django's list of every app and model --
what ``/admin/`` showed before -- is one click away at ``/admin/models/`` (``admin:model_list``),
linked from the newsroom and from the navigation sidebar every admin page shows; every other
admin URL is Django's own.

The page runs a fixed number of queries whatever the archive's size: the session and user, the
user's permissions, their time zone, then one statement per section they may see
(``newsroom.sections``, ``newsroom.attention``); tests/newsroom counts them for 3 items a section and
for 30.
"""
from urllib.parse import quote

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from accounts.models import Profile
from blog.models import Post
from digests.models import Digest
from ingestion.models import DigestDraft
from newsletters import progress
from newsletters.models import Message

from . import attention, sections


class NewsroomSite(admin.AdminSite):
    site_header = "RepoJournal editorial"
    site_title = "RepoJournal"
    index_title = "Newsroom"

    def get_urls(self):
        model_list = path("models/", self.admin_view(self.model_list), name="model_list")
        return [model_list, *super().get_urls()]

    def model_list(self, request, extra_context=None):
        """Django's own admin index: every app and model the user may see, with recent actions."""
        return super().index(request, {"title": "All models", **(extra_context or {})})

    def index(self, request, extra_context=None):
        """The newsroom: the sections the user's role may act on, times in the user's own zone."""
        context = {**self.each_context(request), "title": self.index_title,
                   **newsroom_context(self, request), **(extra_context or {})}
        request.current_app = self.name
        return TemplateResponse(request, "newsroom/index.html", context)


def _changelist_links(models, query: str, label: str) -> list[dict]:
    """A "see all" link per model: its changelist filtered by `query`; `label` names the model's plural."""
    return [{"label": label.format(name=model._meta.verbose_name_plural),
             "url": f"{reverse(f'admin:{model._meta.app_label}_{model._meta.model_name}_changelist')}?{query}"}
            for model in models]


def _item_sections(site, request, now) -> dict:
    """Review (Publishers of each kind), scheduled and own drafts (whoever may see each kind in the admin)."""
    user, found = request.user, {}
    reviewable = [model for model in (Digest, Post) if user.has_perm(model.publish_permission)]
    visible = [model for model in (Digest, Post) if site.is_registered(model)
               and site.get_model_admin(model).has_view_or_change_permission(request)]
    if reviewable:
        found["review"] = sections.waiting_for_review(reviewable, now)
        found["review_links"] = _changelist_links(reviewable, "status__exact=in_review", "all {name} in review")
    if visible:
        found["next"] = sections.going_out_next(visible, now)
        after = quote(now.replace(microsecond=0).isoformat())  # the changelist parses ISO 8601 with its offset
        found["next_links"] = _changelist_links(
            visible, f"status__exact=published&published_at__gt={after}", "all scheduled {name}")
        found["yours"] = sections.yours(visible, user)
        found["yours_links"] = (_changelist_links(visible, f"status__exact=draft&created_by__exact={user.pk}",
                                                  "{name} you created")
                                + _changelist_links(visible, f"status__exact=draft&edited_by__exact={user.pk}",
                                                    "{name} you last edited"))
    return found


def newsroom_context(site, request) -> dict:
    now = timezone.now()
    context = {"now": now, "rows": sections.ROWS, "overdue_hours": int(sections.OVERDUE.total_seconds() // 3600),
               "time_zone": Profile.objects.time_zone_of(request.user),
               "model_list_url": reverse("admin:model_list"), "preferences_url": reverse("admin:accounts_profile_mine"),
               **_item_sections(site, request, now)}
    if site.is_registered(DigestDraft) and site.get_model_admin(DigestDraft).has_view_permission(request):
        context["drafted"] = sections.drafted_digests()
        context["drafted_url"] = f"{reverse('admin:ingestion_digestdraft_changelist')}?opened_at__isnull=True"
    if site.is_registered(Message) and site.get_model_admin(Message).has_view_permission(request):
        context["sends"] = sections.Section(*progress.sends(now, sections.ROWS))
        context["sends_url"] = reverse("admin:newsletters_message_changelist")
        context["sends_days"] = progress.FAILURES_SINCE.days
    context["attention"] = attention.count(attention.checks_for(request.user))
    return context
