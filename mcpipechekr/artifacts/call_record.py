"""The call record format: one findings journal line per tool call.

The record is a file format like every artifact (it has a JSON Schema in
docs/schemas/), so it lives here; `findings/evidence/records.py` sanitizes calls into
it, writes the journals, and re-exports it with the limits it checks.
"""

from __future__ import annotations

from typing import Literal

import orjson
from pydantic import AwareDatetime, Field, NonNegativeInt, model_validator

from mcpipechekr.artifacts._base import ArtifactModel, FormatVersion

Outcome = Literal["ok", "error", "unknown"]
ArgType = Literal["string", "integer", "number", "boolean", "null", "array", "object"]

UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
TEMPLATE_ID_PATTERN = r"^[0-9a-f]{16}$"
ERR_CODE_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
SESSION_PATTERN = r"^[A-Za-z0-9_.:/-]{1,128}$"
MAX_RECORD_BYTES = 16_384
"""A complete journal line longer than this is refused by the indexer: records are small by design
(shapes and ids only), so a longer line is damage or a writer storing what it must not."""


class CallRecord(ArtifactModel):
    """One tool call as a findings journal line: identifiers, shapes and measurements, never raw values."""

    version: FormatVersion = Field(default=1, description="Format version of this record.")
    event_id: str = Field(
        pattern=UUID_PATTERN,
        description="Unique id of this call (a lowercase UUID); annotations and findings point at it.",
    )
    session: str = Field(
        pattern=SESSION_PATTERN,
        description="Opaque token of the client session (one capture process or one Phase 1 attempt).",
    )
    seq: NonNegativeInt = Field(description="Position of the call in its session, from 0, in request order.")
    at: AwareDatetime = Field(description="Wall-clock time the request was sent (UTC).")
    server: str = Field(min_length=1, max_length=200, description="Name of the server that was called.")
    tool: str = Field(min_length=1, max_length=200, description="Name of the tool that was called.")
    template_id: str | None = Field(
        default=None,
        pattern=TEMPLATE_ID_PATTERN,
        description="Errors: salted id of the normalized error message (see `template_id`); the text "
        "itself is never stored.",
    )
    arg_shape: dict[str, ArgType] = Field(
        default_factory=dict, description="Argument keys and their JSON types; never the values."
    )
    outcome: Outcome = Field(
        description="`ok`, `error` (a JSON-RPC error, `isError: true`, or no answer at all), or "
        "`unknown` (a malformed result: not an object, or a non-boolean `isError`)."
    )
    err_code: str | None = Field(
        default=None,
        pattern=ERR_CODE_PATTERN,
        description="Errors: the code the server reported (JSON-RPC `error.code`, or a `code` in the "
        "structured or JSON error body); when it reported none, a symbolic code read from the message "
        "at capture time (`exception`, `validation`, `timeout`, `not_found`, `permission`), or "
        "`server_crash` / `no_response` / `timeout` for a call that got no answer.",
    )
    retryable: bool | None = Field(
        default=None, description="Errors: the server's own `retryable` flag; absent when not reported."
    )
    latency_ms: float | None = Field(
        default=None, ge=0.0, description="Milliseconds from the request to its response."
    )
    request_bytes: NonNegativeInt = Field(description="Size of the request line on the wire.")
    response_bytes: NonNegativeInt | None = Field(
        default=None, description="Size of the response line on the wire; absent when none came."
    )
    probe: bool = Field(
        default=False,
        description="True for the harness's own probe calls (check, verify); never promoted to findings.",
    )

    @model_validator(mode="after")
    def _error_fields_only_on_errors(self) -> CallRecord:
        if self.outcome != "error":
            extra = [
                name for name in ("template_id", "err_code", "retryable") if getattr(self, name) is not None
            ]
            if extra:
                raise ValueError(f"`{', '.join(extra)}` only belong to `outcome: error` records")
        elif self.template_id is None:
            raise ValueError("an `outcome: error` record needs `template_id`")
        return self

    def to_line(self) -> bytes:
        """The record as one journal line (compact JSON, newline-terminated)."""
        return orjson.dumps(self.model_dump(mode="json", exclude_none=True)) + b"\n"
