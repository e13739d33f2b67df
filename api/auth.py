"""Who is asking: Bearer tokens, the anonymous reader, scopes, and what each may see."""
from django.http import HttpRequest
from ninja.errors import AuthenticationError, HttpError, Throttled
from ninja.security import HttpBearer

from accounts.models import ApiToken

from .throttling import FailureThrottle

#: Unknown or revoked tokens per client address (settings.API_THROTTLE_RATES["token_failure_ip"]).
token_failures = FailureThrottle("token_failure_ip")


class Anonymous:
    """request.auth for a request without a token (truthy, so ninja lets it through)."""

    user = None

    def has_scope(self, scope: str) -> bool:
        return False


ANONYMOUS = Anonymous()


class TokenAuth(HttpBearer):
    """``Authorization: Bearer <token>``; a presented but unknown or revoked token is a 401.

    ``TokenAuth(optional=True)`` is ``[TokenAuth(), anonymous]`` as one callback (no Authorization
    header: anonymous), because ninja inspects every auth callback on every request. One class
    either way, so OpenAPI names one security scheme.
    """

    def __init__(self, optional: bool = False):
        super().__init__()
        self.optional = optional

    def __call__(self, request: HttpRequest):
        if self.optional and not request.headers.get("Authorization"):
            return ANONYMOUS
        found = super().__call__(request)
        return anonymous(request) if found is None and self.optional else found  # refuses a non-Bearer header

    def authenticate(self, request: HttpRequest, token: str):
        """The token's row; an address that sent too many unknown tokens gets 429 before any lookup."""
        wait = token_failures.blocked(request)
        if wait:
            raise Throttled(wait)
        found = ApiToken.objects.authenticate(token.strip())
        if found is None:
            token_failures.record(request)
            raise AuthenticationError(401, "Invalid or revoked API token.")
        return found


def anonymous(request: HttpRequest):
    """On public operations (TokenAuth(optional=True)): no Authorization header means anonymous."""
    if request.headers.get("Authorization"):
        raise AuthenticationError(401, "Send API tokens as “Authorization: Bearer <token>”.")
    return ANONYMOUS


token_auth = TokenAuth()
OPTIONAL_AUTH = [TokenAuth(optional=True)]
#: For public operations: tell OpenAPI clients the token is optional.
PUBLIC = {"auth": OPTIONAL_AUTH, "openapi_extra": {"security": [{}]}}  # ninja appends this to [TokenAuth]


def can_read_drafts(request: HttpRequest) -> bool:
    return request.auth.has_scope(ApiToken.Scope.READ_DRAFTS)


def visible(request: HttpRequest, queryset, now=None):
    """Everything for read:drafts tokens, otherwise only what is published (at `now`: see
    ``PublishableQuerySet.published``; querysets of other models decide by the current time)."""
    if can_read_drafts(request):
        return queryset
    return queryset.published() if now is None else queryset.published(now)


def with_status(request: HttpRequest, queryset, status):
    """Filter by workflow status; asking for anything unpublished needs read:drafts."""
    if status is None:
        return queryset
    if status != "published" and not can_read_drafts(request):
        raise HttpError(403, "Filtering by an unpublished status needs a token with the “read:drafts” scope.")
    return queryset.filter(status=status)
