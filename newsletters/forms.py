"""The sign-up form (on the reader pages, newsletters/templates/includes) and the manage page's forms.

What to follow arrives as one value, ``kind:target`` (``wire``, ``blog``, ``topic:<slug>``,
``repository:<owner/name>``, ``tag:<slug>``, ``author:<slug>``), preselected by the page the form is
on. A target must be one readers can see (published), so a form cannot reveal, or follow, a draft's tag.
"""
import datetime

from django import forms
from email_validator import EmailNotValidError, validate_email
from taggit.models import Tag

from blog.models import Author, Post
from digests.models import Repository, Topic

from .models import Subscription

Kind = Subscription.Kind

#: kind -> (the published target's canonical value from what the form sent, or None if readers cannot see it)
RESOLVERS = {
    Kind.TOPIC: lambda slug: Topic.objects.published().filter(slug=slug).values_list("slug", flat=True).first(),
    Kind.REPOSITORY: lambda name: Repository.objects.published().filter(full_name__iexact=name)
    .values_list("full_name", flat=True).first(),
    Kind.TAG: lambda slug: Tag.objects.filter(slug=slug, pk__in=Post.objects.published().values("tags"))
    .values_list("slug", flat=True).first(),
    Kind.AUTHOR: lambda slug: Author.objects.published().filter(slug=slug).values_list("slug", flat=True).first(),
}


def resolve_follow(value: str) -> tuple[str, str]:
    """``kind:target`` -> (kind, canonical target); ValidationError naming what is wrong."""
    kind, _, target = value.strip().partition(":")
    if kind in (Kind.WIRE, Kind.BLOG):
        if target:
            raise forms.ValidationError(f"“{kind}” takes no target.", code="follow")
        return kind, ""
    if kind not in RESOLVERS:
        raise forms.ValidationError("Choose what to follow: The Wire, the blog, a topic, a repository, a tag or an author.",
                                    code="follow")
    found = RESOLVERS[kind](target) if target else None
    if found is None:
        raise forms.ValidationError(f"There is no {kind} “{target}” to follow.", code="follow")
    return kind, found


def describe(kind: str, target: str) -> str:
    """What a follow is, in words (from the stored slug: no query)."""
    return {
        Kind.WIRE: "The Wire", Kind.BLOG: "the blog", Kind.TOPIC: f"the topic {target}",
        Kind.REPOSITORY: f"the repository {target}", Kind.TAG: f"posts tagged {target}",
        Kind.AUTHOR: f"posts by {target}",
    }.get(kind, f"{kind} {target}")


class EmailAddressField(forms.CharField):
    """An address checked for syntax by email-validator (no DNS lookup) and returned normalised."""

    def __init__(self, **kwargs):
        super().__init__(max_length=254, **kwargs)

    def clean(self, value):
        value = super().clean(value)
        try:
            return validate_email(value, check_deliverability=False).normalized
        except EmailNotValidError as error:
            raise forms.ValidationError(f"This email address is not valid: {error}", code="invalid") from error


class SubscribeForm(forms.Form):
    email = EmailAddressField()
    follow = forms.CharField(max_length=260)
    cadence = forms.ChoiceField(choices=Subscription.Cadence.choices, initial=Subscription.Cadence.IMMEDIATE,
                                required=False)
    daily_at = forms.TimeField(required=False)
    #: The honeypot: hidden by the stylesheet, left empty by people, filled by simple bots.
    website = forms.CharField(required=False, max_length=500)

    def clean_follow(self) -> tuple[str, str]:
        return resolve_follow(self.cleaned_data["follow"])

    def clean_cadence(self) -> str:
        return self.cleaned_data["cadence"] or Subscription.Cadence.IMMEDIATE

    def clean_daily_at(self) -> datetime.time:
        return self.cleaned_data["daily_at"] or datetime.time(8, 0)

    @property
    def is_trap(self) -> bool:
        return bool(self.data.get("website"))


class SubscriptionForm(forms.ModelForm):
    """One follow's cadence and summary time, on the manage page."""

    class Meta:
        model = Subscription
        fields = ["cadence", "daily_at"]
        widgets = {"daily_at": forms.TimeInput(attrs={"type": "time"}, format="%H:%M")}
        help_texts = {"cadence": "", "daily_at": ""}  # the page says it; a help text would need an element to point at
