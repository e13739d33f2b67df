"""API tokens: how scripts and tools act on RepoJournal as one of its users.

A token is shown once, when it is created, and only its SHA-256 digest is
stored: a leaked database dump gives nobody API access. The first characters
(the prefix) are stored in clear so a presented token is found with one indexed
lookup and so people can tell their tokens apart in the admin. Tokens are
random (256 bits), so a fast hash is enough -- there is nothing to brute-force.
"""
import functools
import hashlib
import hmac
import secrets
import zoneinfo
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

TOKEN_PREFIX_LENGTH = 8
#: How stale ``last_used_at`` may get before a request writes it again (saves a write per request).
LAST_USED_RESOLUTION = timedelta(minutes=1)


#: Scope -> the permissions (any one) its holder's user needs: what the admin offers each role, the
#: role -> scope table of docs/api.md. Editors get read:drafts and write:content; Publishers all
#: three; staff with neither group none (their tokens read what is public, under a token's own rate).
SCOPE_PERMISSIONS = {
    "read:drafts": ("digests.view_digest", "blog.view_post"),
    "write:content": ("digests.change_digest", "blog.change_post"),
    "publish": ("digests.publish_digest", "blog.publish_post"),
}


def scopes_for(user) -> list[str]:
    """The scopes `user`'s role allows a token of theirs to carry (a token never grants more)."""
    return [scope for scope, permissions in SCOPE_PERMISSIONS.items() if any(user.has_perm(p) for p in permissions)]


def hash_token(raw_token: str) -> str:
    return hashlib.sha256(raw_token.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)

    def authenticate(self, raw_token: str):
        """The active token matching `raw_token`, or None; compares digests in constant time.

        Read on the primary even where readers' reads go to a replica (repojournal/replicas.py):
        a token revoked or made a moment ago is refused or accepted at once.
        """
        prefix = raw_token[: 3 + TOKEN_PREFIX_LENGTH]
        token = self.using("default").active().select_related("user").filter(prefix=prefix).first()
        if token is None or not hmac.compare_digest(token.hashed_token, hash_token(raw_token)):
            return None
        if not token.user.is_active:
            return None
        token.touch()
        return token


class ApiToken(models.Model):
    """A revocable credential for the API, owned by a user, limited to some scopes."""

    class Scope(models.TextChoices):
        READ_DRAFTS = "read:drafts", "read:drafts — see unpublished content"
        WRITE_CONTENT = "write:content", "write:content — create and update drafts"
        PUBLISH = "publish", "publish — publish, schedule, archive (Publishers only)"
        WEBHOOKS = "webhooks", "webhooks — manage the token user's own outbound webhook endpoints"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, related_name="api_tokens", on_delete=models.CASCADE)
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. “ingestion bot”.")
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    hashed_token = models.CharField(max_length=64, editable=False)
    scopes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, user, name: str, scopes) -> tuple["ApiToken", str]:
        """Create a token; returns it with the raw value, which is never stored or shown again."""
        raw = f"rj_{secrets.token_urlsafe(32)}"
        token = cls.objects.create(
            user=user, name=name, scopes=sorted(set(scopes)),
            prefix=raw[: 3 + TOKEN_PREFIX_LENGTH], hashed_token=hash_token(raw),
        )
        return token, raw

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def revoke(self) -> None:
        if not self.is_revoked:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def touch(self) -> None:
        now = timezone.now()
        if self.last_used_at is None or now - self.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now


@functools.cache
def time_zone_names() -> tuple[str, ...]:
    """Every IANA zone name this machine knows (the system's zone database, or the tzdata package)."""
    return tuple(sorted(zoneinfo.available_timezones()))


def validate_time_zone(name: str) -> None:
    if name not in time_zone_names():
        raise ValidationError("%(name)s is not a time zone name (e.g. Europe/Paris, America/New_York).",
                              code="invalid_time_zone", params={"name": name})


def site_time_zone() -> str:
    """The default: the site's TIME_ZONE (a callable, so a migration does not freeze one setting's value)."""
    return settings.TIME_ZONE


class ProfileQuerySet(models.QuerySet):
    def time_zone_of(self, user) -> str:
        """`user`'s time zone, or the site's when they never chose one (no row is written to read it)."""
        found = self.filter(user_id=user.pk).values_list("time_zone", flat=True).first()
        return found or settings.TIME_ZONE


class Profile(models.Model):
    """A staff user's own preferences, which they edit in the admin (*API access → Your preferences*).

    For now the time zone the newsroom page (the admin's front page) shows times in. Made on
    first visit to one's preferences; until then the site's TIME_ZONE applies.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, primary_key=True, related_name="profile",
                                on_delete=models.CASCADE)
    time_zone = models.CharField(
        max_length=64, default=site_time_zone, validators=[validate_time_zone],
        help_text="The newsroom page shows times in this zone: an IANA name such as Europe/Paris or "
                  "America/New_York. The site's own zone until you choose one.")

    objects = ProfileQuerySet.as_manager()

    class Meta:
        verbose_name = "preferences"
        verbose_name_plural = "preferences"

    def __str__(self) -> str:
        return f"Preferences of {self.user}"
