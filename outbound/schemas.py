"""What the webhook endpoints API reads and writes (outbound/api.py)."""
import datetime
from typing import Annotated, Literal

from ninja import Field, Schema

from api.types import text, web_url

EventType = Literal["post.published", "post.updated", "post.unpublished",
                    "digest.published", "digest.updated", "digest.unpublished"]
#: A path id the database can hold (a larger one would be a database error, not a 404).
EndpointId = Annotated[int, Field(ge=1, le=2**63 - 1)]
#: A web address (http or https: whether https is required is a setting), never empty.
EndpointUrl = Annotated[web_url(500), Field(min_length=10)]
EVENT_TYPES_HELP = "The events to receive; empty (the default) means every event."


class EndpointOut(Schema):
    id: int
    url: str
    description: str
    event_types: list[str] = Field(..., description=EVENT_TYPES_HELP)
    enabled: bool
    disabled_reason: str = Field(..., description="Why delivery disabled the endpoint (410 Gone, 5 days failing).")
    failing_since: datetime.datetime | None = Field(..., description="The first failure since the last success.")
    previous_secret_expires_at: datetime.datetime | None = Field(
        ..., description="Until then the previous secret signs too (after a rotation).")
    created_at: datetime.datetime
    updated_at: datetime.datetime


class EndpointWithSecretOut(EndpointOut):
    secret: str = Field(..., alias="whsec", description="The signing secret (whsec_…), shown only in this answer.")


class EndpointIn(Schema):
    url: EndpointUrl = Field(..., description="https in production; never a loopback, private or link-local address.")
    description: text(200) = ""
    event_types: list[EventType] = Field(default_factory=list, max_length=6, description=EVENT_TYPES_HELP)
    enabled: bool = True


class EndpointPatch(Schema):
    url: EndpointUrl | None = None
    description: text(200) | None = None
    event_types: list[EventType] | None = Field(None, max_length=6, description=EVENT_TYPES_HELP)
    enabled: bool | None = Field(None, description="true re-enables an endpoint delivery disabled; its pending "
                                                   "messages then go out in order.")


class AttemptOut(Schema):
    id: int
    message_id: str = Field(..., alias="message.msg_id")
    type: str = Field(..., alias="message.type")
    number: int
    status_code: int | None
    response_excerpt: str
    error: str
    duration_ms: int
    succeeded: bool
    attempted_at: datetime.datetime
