"""`HeimdallError`: every failure the bindings raise."""

from __future__ import annotations

from typing import Literal, NamedTuple, Sequence

ErrorKind = Literal["api", "transport", "decode", "invalid", "timeout"]


class FieldError(NamedTuple):
    """One refused field of a request (`SCHEMA_VIOLATION`, ...): where and which rule, never the value."""

    path: str
    rule: str


class HeimdallError(Exception):
    """What the API refused, or why no answer came.

    - ``code``: the API's stable error code (``"NOT_FOUND"``,
      ``"VALUE_NOT_ACCEPTED"``, ``"SCHEMA_VIOLATION"``, ...) when the API (or
      an Agent's local API) answered with an error; ``None`` otherwise.
    - ``kind``: ``"api"`` (``code`` is set), ``"transport"`` (no answer:
      connection refused, TLS, DNS, timeout of a request), ``"decode"`` (an
      answer this version cannot read), ``"invalid"`` (nothing was sent: a
      bad URL, token, id or argument) or ``"timeout"`` (a ``wait=True`` that
      outlasted its ``timeout``; the job goes on).
    - ``message``: the human text, without the code.
    - ``fields``: for input refusals, each field and rule.

    No message ever holds a token or a secret value: they come from the
    Rust SDK, which keeps both out of every error.
    """

    code: str | None
    kind: ErrorKind
    message: str
    fields: tuple[FieldError, ...]

    def __init__(
        self,
        kind: ErrorKind,
        code: str | None,
        message: str,
        fields: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(kind, code, message)
        self.kind = kind
        self.code = code
        self.message = message
        self.fields = tuple(FieldError(path, rule) for path, rule in fields)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message

    def __repr__(self) -> str:
        return f"HeimdallError(code={self.code!r}, kind={self.kind!r}, message={self.message!r})"

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.kind, self.code, self.message, tuple(self.fields)))
