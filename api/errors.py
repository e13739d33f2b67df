"""The one shape of every API error, and the OpenAPI entries that name it."""
from ninja import Field, Schema


class FieldError(Schema):
    field: str = Field(..., description="Dotted path of the offending input, e.g. body.references.0.number.")
    message: str


class ErrorOut(Schema):
    """The one shape of every 4xx answer."""

    detail: str
    errors: list[FieldError] = Field(default_factory=list, description="Per-field problems (validation only).")


def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """OpenAPI entries for the error statuses an operation can answer with."""
    return {code: ErrorOut for code in sorted({400, 422, 429, *codes})}
