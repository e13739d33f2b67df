"""What the write endpoints share: scope and permission checks, 422s listing every
problem with its field path, and revision history credited to the token's user."""
from dataclasses import dataclass, field

import reversion
from django.http import HttpRequest
from ninja.errors import HttpError

from accounts.models import ApiToken


class ApiValidationError(HttpError):
    """A 422 carrying field paths, like pydantic's own validation errors."""

    def __init__(self, errors: list[dict]):
        self.errors = errors
        super().__init__(422, "The request did not validate; see errors.")


@dataclass
class FieldProblems:
    """Collects every problem with an input so the client can fix them all at once."""

    errors: list[dict] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        self.errors.append({"field": path, "message": message})

    def raise_if_any(self) -> None:
        if self.errors:
            raise ApiValidationError(self.errors)


def require_write(request: HttpRequest, permission: str, scope: str = ApiToken.Scope.WRITE_CONTENT) -> ApiToken:
    """The request's token, if it has `scope` and its user holds the Django `permission`.

    A token never grants more than its user could do in the admin.
    """
    token = request.auth
    if not token.has_scope(scope):
        raise HttpError(403, f"This operation needs a token with the “{scope}” scope.")
    if not token.user.has_perm(permission):
        raise HttpError(403, f"The token's user lacks the “{permission}” permission.")
    return token


def record_revision(obj, token: ApiToken, verb: str) -> None:
    """Inside reversion.create_revision(): credit the token's user and snapshot `obj` as it is now.

    Adding `obj` explicitly at the end re-serialises it with its final related
    rows (reversion snapshots an object when it is first added).
    """
    reversion.add_to_revision(obj)
    reversion.set_user(token.user)
    reversion.set_comment(f"{verb} via the API (token “{token.name}”).")
