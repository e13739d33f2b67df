"""Newsletters in the admin: subscribers (search, filters, CSV export and import), suppressions, and each
message's progress while it is sent; "send a test to me" on posts and digests.

Each page is for users holding the model's Django permissions: superusers; Publishers, who keep the list
(subscribers, their import and export, suppressions by hand); Editors see the messages' progress only, not
who they went to (a subscriber list is readers' personal data: migrations/0006_editorial_permissions.py
says who holds what and why). The lists read a fixed number of statements
whatever their length: subscribers' subscription counts and messages' progress counts are columns of the
list's own statement (``newsletters.progress``). A subscriber's keys (what their links are signed with)
are never shown.

"Send a test to me" is offered on the post and digest pages, whose apps may not import this one
(layering): this module, above them, adds it to their registered ModelAdmins — an action in their
lists, and a link among the change page's tools (``item_change_form.html``) — so the content apps
know nothing of newsletters, and the one place wiring them together is here.
"""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from email_validator import EmailNotValidError, validate_email

import blog.admin  # noqa: F401 -- registers PostAdmin, extended below
import digests.admin  # noqa: F401 -- registers DigestAdmin, extended below
from blog.models import Post
from digests.models import Digest
from publishing.changelists import LargeListMixin

from . import csv_io, imports, progress, tasks, testsend
from .models import Delivery, Message, Subscriber, SubscriberImport, Subscription, Suppression

#: Failed deliveries a message's page lists (the newest; the deliveries list filters the rest).
FAILED_SHOWN = 50
#: The largest CSV accepted for import.
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
#: Imports listed on the import page.
RECENT_IMPORTS = 10


def email_search(queryset, term: str):
    """Rows whose ``email`` is `term` or begins with it: the unique index's equality and prefix look-ups
    (stored addresses are normalised, their domain lower-cased), never a substring scan of 100,000 rows."""
    term = term.strip()
    if not term:
        return queryset
    return queryset.filter(Q(email=term) | Q(email__startswith=term) | Q(email__startswith=term.lower()))


class SubscriptionInline(admin.TabularInline):
    model = Subscription
    fields = ["kind", "target", "cadence", "daily_at", "created_at"]
    readonly_fields = ["created_at"]
    extra = 0


def csv_response(queryset, name: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_io.export_lines(queryset), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}-{timezone.now():%Y%m%d-%H%M}.csv"'
    response["Cache-Control"] = "private, no-store"
    return response


class ImportForm(forms.Form):
    file = forms.FileField(label="CSV file", help_text="Columns: email, follows (kind:target, space-separated; "
                           "empty: The Wire), cadence (immediate, daily or daily@HH:MM). A first row starting "
                           "with “email” names the columns, as the export writes them. At most 10 MB.")
    consented = forms.BooleanField(
        required=False, label="These people already consented to receive these emails (I am responsible for "
                              "that consent)", help_text="Unticked, each new address is sent a confirmation email "
                                                         "and gets nothing else until its owner confirms.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(f"The file is {upload.size // 1024 // 1024} MB; at most 10 MB are accepted.")
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise forms.ValidationError(f"The file is not UTF-8 text (byte {error.start}): save it as CSV UTF-8.")
        self.cleaned_data["file_name"] = upload.name or ""
        return text


class NormalisedEmailForm(forms.ModelForm):
    """Addresses typed by an editor are stored as sign-ups store them (email-validator's normal form)."""

    def clean_email(self):
        try:
            return validate_email(self.cleaned_data["email"], check_deliverability=False).normalized
        except EmailNotValidError as error:
            raise forms.ValidationError(str(error)) from None


@admin.register(Subscriber)
class SubscriberAdmin(LargeListMixin, admin.ModelAdmin):
    form = NormalisedEmailForm
    list_display = ["email", "state", "consent", "created_at", "confirmed_at", "subscription_count"]
    list_filter = ["state", "consent"]
    search_fields = ["email"]  # searched by get_search_results: exact and prefix, through the unique index
    search_help_text = "An address, or how it begins."
    fields = ["email", "state", "consent", "created_at", "confirmed_at", "unsubscribed_at",
              "confirmation_requested_at", "confirmation_sent_at"]
    readonly_fields = ["created_at", "confirmed_at", "unsubscribed_at", "confirmation_requested_at",
                       "confirmation_sent_at"]
    inlines = [SubscriptionInline]
    actions = ["export_csv"]
    change_list_template = "admin/newsletters/subscriber/change_list.html"

    def get_urls(self):
        return [path("export/", self.admin_site.admin_view(self.export_view), name="newsletters_subscriber_export"),
                path("import/", self.admin_site.admin_view(self.import_view), name="newsletters_subscriber_import"),
                path("import/<int:import_id>/", self.admin_site.admin_view(self.import_progress_view),
                     name="newsletters_subscriber_import_progress"),
                *super().get_urls()]

    def get_queryset(self, request):
        """With each subscriber's subscription count: a correlated count for the rows of the page only."""
        counted = Subscription.objects.filter(subscriber=OuterRef("pk")).order_by().values("subscriber")
        return super().get_queryset(request).annotate(
            subscription_total=Coalesce(Subquery(counted.annotate(n=Count("pk")).values("n")), 0))

    def get_search_results(self, request, queryset, search_term):
        return email_search(queryset, search_term), False

    @admin.display(description="subscriptions", ordering="subscription_total")
    def subscription_count(self, subscriber) -> int:
        return subscriber.subscription_total

    @admin.action(description="Export selected subscribers as CSV", permissions=["view"])
    def export_csv(self, request, queryset):
        return csv_response(queryset, "subscribers")

    def export_view(self, request):
        """Every subscriber as CSV (the list's action exports a selection)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return csv_response(Subscriber.objects.all(), "subscribers")

    def import_view(self, request):
        """GET: the form and the latest imports; POST: keep the file for a worker and show its progress at once."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ImportForm(request.POST, request.FILES) if request.method == "POST" else ImportForm()
        if request.method == "POST" and form.is_valid():
            job = imports.start(form.cleaned_data["file"], form.cleaned_data["file_name"],
                                form.cleaned_data["consented"], request.user)
            transaction.on_commit(lambda: tasks.queue_import(job.pk))
            return HttpResponseRedirect(reverse("admin:newsletters_subscriber_import_progress", args=[job.pk]))
        context = {**self.admin_site.each_context(request), "title": "Import subscribers", "form": form,
                   "opts": self.opts, "media": self.media + form.media,
                   "imports": SubscriberImport.objects.defer("data")[:RECENT_IMPORTS]}
        return TemplateResponse(request, "admin/newsletters/subscriber/import.html", context, status=400
                                if request.method == "POST" else 200)

    def import_progress_view(self, request, import_id: int):
        """An import's progress and report, read from its row: reload the page to follow it."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        job = get_object_or_404(SubscriberImport.objects.defer("data"), pk=import_id)
        context = {**self.admin_site.each_context(request), "title": f"Import of {job}", "job": job,
                   "opts": self.opts, "more_invalid": max(0, job.invalid_count - len(job.invalid))}
        return TemplateResponse(request, "admin/newsletters/subscriber/import_progress.html", context)


class SuppressionForm(NormalisedEmailForm):
    class Meta:
        model = Suppression
        fields = ["email", "detail"]


@admin.register(Suppression)
class SuppressionAdmin(LargeListMixin, admin.ModelAdmin):
    """Addresses never mailed again. Added by hand here (reason "manual"); bounces and complaints add theirs."""

    form = SuppressionForm
    list_display = ["email", "reason", "detail", "created_at"]
    list_filter = ["reason"]
    search_fields = ["email"]
    search_help_text = "An address, or how it begins."

    def get_search_results(self, request, queryset, search_term):
        return email_search(queryset, search_term), False

    def get_readonly_fields(self, request, obj=None):
        return ["email", "reason", "detail", "created_at"] if obj else []

    def save_model(self, request, obj, form, change):
        if not change:
            obj.reason = Suppression.Reason.MANUAL
        super().save_model(request, obj, form, change)

    def has_change_permission(self, request, obj=None):
        return False  # a suppression is added or deleted, never edited


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """Messages read-only, with their deliveries counted by state: reload the page to follow a send."""

    list_display = ["subject", "item", "created_at", "is_test", *[progress.annotation(s) for s in progress.STATES]]
    list_filter = ["is_test"]
    list_select_related = ["post", "digest"]
    fields = ["subject", "item", "url", "created_at", "fanned_out_at", "is_test", "requested_by", "progress_table",
              "failed_deliveries"]
    readonly_fields = fields

    def get_fields(self, request, obj=None):
        """The failed deliveries' addresses only for users who may see subscribers (Editors see the counts)."""
        if request.user.has_perm("newsletters.view_subscriber"):
            return self.fields
        return [name for name in self.fields if name != "failed_deliveries"]

    def get_urls(self):
        send_test = path("send-test/", self.admin_site.admin_view(self.send_test_view),
                         name="newsletters_message_send_test")
        return [send_test, *super().get_urls()]

    def get_changelist_instance(self, request):
        """The page's rows counted in the statement reading them: its messages' ids chosen as the list
        chooses them (filters, order, page), then their deliveries grouped by message. Counting in
        ``get_queryset`` would join every delivery into the list's count too."""
        changelist = super().get_changelist_instance(request)
        page = changelist.result_list
        changelist.result_list = progress.with_progress(
            self.model.objects.filter(pk__in=page.values("pk")).select_related("post", "digest")
        ).order_by(*page.query.order_by)
        return changelist

    def get_object(self, request, object_id, from_field=None):
        """The message with its progress counts, in one statement."""
        try:
            return progress.with_progress(self.get_queryset(request)).get(pk=object_id)
        except (Message.DoesNotExist, ValidationError, ValueError):
            return None

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # the record of what was mailed to whom

    @admin.display(description="item")
    def item(self, message) -> str:
        return str(message.post or message.digest or "—")

    @admin.display(description="progress")
    def progress_table(self, message) -> str:
        rows = format_html_join("", "<tr><th scope=\"row\">{}</th><td>{}</td></tr>", progress.counts_of(message))
        return format_html("<table>{}<tr><th scope=\"row\">total</th><td>{}</td></tr></table>", rows,
                           message.total_count)

    @admin.display(description=f"failed deliveries (newest {FAILED_SHOWN})")
    def failed_deliveries(self, message) -> str:
        failed = (message.deliveries.filter(state__in=progress.FAILURES).order_by("-next_attempt_at", "-pk")
                  .values_list("email", "state", "attempts", "last_error")[:FAILED_SHOWN])
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                                ((email, state, attempts, error[:500]) for email, state, attempts, error in failed))
        return format_html("<table><tr><th>address</th><th>state</th><th>attempts</th><th>error</th></tr>{}</table>",
                           rows) if rows else "—"

    def send_test_view(self, request):
        """GET: what will be sent, and a button; POST: send it to the user's own address."""
        item = _item_asked(request)
        if request.method == "POST":
            _send_tests(self, request, [item])
            return HttpResponseRedirect(reverse(f"admin:{item._meta.app_label}_{item._meta.model_name}_change",
                                                args=[item.pk]))
        context = {**self.admin_site.each_context(request), "title": "Send a test email to me", "item": item,
                   "opts": self.opts, "item_opts": item._meta, "address": request.user.email}
        return TemplateResponse(request, "admin/newsletters/message/send_test.html", context)


for _state in progress.STATES:
    setattr(MessageAdmin, progress.annotation(_state), admin.display(description=_state.value)(
        lambda self, message, name=progress.annotation(_state): getattr(message, name)))


def _item_asked(request):
    """The post or digest of ``?post=<id>`` or ``?digest=<id>``, if the user may see it in the admin."""
    for model in (Post, Digest):
        if (pk := request.GET.get(model._meta.model_name)) is not None:
            if not pk.isdigit():
                raise Http404("Not an id.")
            if not admin.site.get_model_admin(model).has_view_or_change_permission(request):
                raise PermissionDenied
            return get_object_or_404(model, pk=int(pk))
    raise Http404("Name a post (?post=<id>) or a digest (?digest=<id>).")


def _send_tests(model_admin, request, items) -> None:
    for item in items[:testsend.MOST_AT_ONCE]:
        try:
            delivery = testsend.send_test(item, request.user)
        except testsend.NoAddress as error:
            model_admin.message_user(request, str(error), messages.ERROR)
            return
        sent = delivery.state == Delivery.State.SENT
        model_admin.message_user(request, testsend.outcome(item, delivery),
                                 messages.SUCCESS if sent else messages.ERROR)
    if len(items) > testsend.MOST_AT_ONCE:
        model_admin.message_user(request, f"Only the first {testsend.MOST_AT_ONCE} were sent.", messages.WARNING)


@admin.action(description="Send a test email of each selected to me")
def send_test_to_me(model_admin, request, queryset):
    _send_tests(model_admin, request, list(queryset[:testsend.MOST_AT_ONCE + 1]))


def offer_test_sends(site) -> None:
    """Add "send a test to me" to the post and digest admins of `site` (see the module's docstring)."""
    for model in (Post, Digest):
        model_admin = site.get_model_admin(model)
        if model_admin.change_form_template is not None:
            raise ImproperlyConfigured(f"{type(model_admin).__name__} has its own change form template: "
                                       "make it extend admin/newsletters/item_change_form.html")
        model_admin.change_form_template = "admin/newsletters/item_change_form.html"
        model_admin.actions = [*model_admin.actions, send_test_to_me]


offer_test_sends(admin.site)
