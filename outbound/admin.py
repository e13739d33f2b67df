"""The webhook log an editor reads: endpoints with their recent attempts and success rate, messages and
their deliveries, and the operator's tools (rotate secret, send a test event, retry now, replay since …).

An endpoint's secret is shown once, in the message after it is created or rotated.
"""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.widgets import AdminSplitDateTime
from django.core.exceptions import ValidationError
from django.db import transaction
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join

from . import delivery
from .addresses import RefusedAddress, check_endpoint_url
from .models import EVENT_TYPES, Delivery, Endpoint, Message

RECENT_ATTEMPTS = 20


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=500, assume_scheme="https", help_text=Endpoint._meta.get_field("url").help_text)
    event_types = forms.MultipleChoiceField(
        choices=[(name, name) for name in EVENT_TYPES], widget=forms.CheckboxSelectMultiple, required=False,
        help_text="None ticked: every event.")

    class Meta:
        model = Endpoint
        fields = ["url", "description", "event_types", "enabled", "owner"]

    def clean_url(self):
        url = self.cleaned_data["url"]
        try:
            check_endpoint_url(url)
        except RefusedAddress as exc:
            raise ValidationError(str(exc)) from None
        return url


class ReplaySinceForm(forms.Form):
    since = forms.SplitDateTimeField(widget=AdminSplitDateTime, label="Replay messages created since",
                                     help_text="Every message since then is sent again, in order, even those "
                                               "the endpoint already acknowledged.")


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = ["url", "description", "enabled", "success_rate_display", "failing_since", "disabled_reason",
                    "owner"]
    list_filter = ["enabled", "failing_since"]  # "Has date": failing since a success (the newsroom links there)
    list_select_related = ["owner"]
    search_fields = ["url", "description"]
    raw_id_fields = ["owner"]
    readonly_fields = ["disabled_reason", "failing_since", "previous_secret_expires_at", "success_rate_display",
                       "recent_attempts", "created_at", "updated_at"]
    actions = ["rotate_secret", "send_test_event", "retry_now", "replay_since"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["url", "description", "event_types", "enabled", "owner"]
        return ["url", "description", "event_types", "enabled", "owner", *self.readonly_fields]

    def save_model(self, request, obj, form, change):
        if change and obj.enabled and "enabled" in form.changed_data:
            obj.disabled_reason, obj.failing_since = "", None  # re-enabled by hand: start afresh
        super().save_model(request, obj, form, change)
        if not change:
            self.message_user(request, format_html(
                "The signing secret of {} is <code>{}</code>. Copy it now: it is not shown again.",
                obj.url, obj.whsec), messages.WARNING)

    @admin.display(description="success rate (last 50)")
    def success_rate_display(self, obj) -> str:
        rate = obj.success_rate()
        return "—" if rate is None else f"{rate:.0%}"

    @admin.display(description="recent attempts")
    def recent_attempts(self, obj) -> str:
        attempts = obj.attempts.select_related("message").order_by("-pk")[:RECENT_ATTEMPTS]
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td><td>#{}</td><td>{}</td><td>{} ms</td><td>{}</td></tr>", (
            (a.attempted_at.strftime("%Y-%m-%d %H:%M:%S"), a.message.type, a.number,
             a.status_code or a.error, a.duration_ms, a.response_excerpt[:200]) for a in attempts))
        return format_html("<table><tr><th>when</th><th>event</th><th>attempt</th><th>answer</th><th>took</th>"
                           "<th>response</th></tr>{}</table>", rows) if rows else "—"

    @admin.action(description="Rotate the secret (the old one signs for 24 more hours)")
    def rotate_secret(self, request, queryset):
        for endpoint in queryset:
            self.message_user(request, format_html("New secret of {}: <code>{}</code> (shown only now).",
                                                   endpoint.url, endpoint.rotate_secret()), messages.WARNING)

    @admin.action(description="Send a test event")
    def send_test_event(self, request, queryset):
        for endpoint in queryset:
            delivery.send_test(endpoint)
        self.message_user(request, f"Queued a webhook.test event to {queryset.count()} endpoint(s).")

    @admin.action(description="Retry now (pending and failed messages)")
    def retry_now(self, request, queryset):
        count = delivery.retry_now(Delivery.objects.filter(endpoint__in=queryset))
        self.message_user(request, f"{count} message(s) due now.")

    @admin.action(description="Replay since …")
    def replay_since(self, request, queryset):
        form = ReplaySinceForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            with transaction.atomic():
                count = sum(delivery.replay(endpoint, Message.objects.filter(
                    created_at__gte=form.cleaned_data["since"])) for endpoint in queryset)
            self.message_user(request, f"Replaying {count} message(s).")
            return None
        context = {**self.admin_site.each_context(request), "title": "Replay messages", "form": form,
                   "opts": self.opts, "endpoints": queryset, "media": self.media + form.media,
                   "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME}
        return TemplateResponse(request, "admin/outbound/replay_since.html", context)


class DeliveryInline(admin.TabularInline):
    model = Delivery
    fields = ["endpoint", "state", "attempt_count", "next_attempt_at", "succeeded_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["msg_id", "type", "subject_type", "subject_id", "created_at"]
    list_filter = ["type"]
    search_fields = ["msg_id"]
    date_hierarchy = "created_at"
    readonly_fields = ["msg_id", "type", "subject_type", "subject_id", "created_at", "payload"]
    fields = readonly_fields
    inlines = [DeliveryInline]
    actions = ["retry_now", "replay"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Retry now (its pending and failed deliveries)", permissions=["view"])
    def retry_now(self, request, queryset):
        count = delivery.retry_now(Delivery.objects.filter(message__in=queryset))
        self.message_user(request, f"{count} delivery(ies) due now.")

    @admin.action(description="Replay to every endpoint that wants them (even those that acknowledged)",
                  permissions=["view"])
    def replay(self, request, queryset):
        with transaction.atomic():
            count = sum(delivery.replay(endpoint, queryset) for endpoint in Endpoint.objects.filter(enabled=True))
        self.message_user(request, f"Replaying {count} delivery(ies).")
