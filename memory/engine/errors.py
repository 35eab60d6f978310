"""What can go wrong, as data: the engine and the worlds layer raise these, the web maps
them by type (never by message text) to one error shape, `{"detail", "code", "field"}`.

Four kinds, because a caller can act on four: the thing is not there (404), the input is
wrong and `field` says which part (422), the input clashes with what is stored (409), the
caller may not do it (403).
"""

from __future__ import annotations


class DomainError(Exception):
    """Base of every refusal the engine makes on purpose. `field` names the input at fault."""

    code = "error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    @property
    def detail(self) -> str:
        return str(self)


class NotFound(DomainError, LookupError):
    """An id that names nothing the store holds."""

    code = "not_found"


class InvalidInput(DomainError, ValueError):
    """Input that cannot be taken as given; `field` names it."""

    code = "invalid"


class Conflict(DomainError):
    """Input that is well formed but clashes with what is stored (a duplicate id, a stale
    generation)."""

    code = "conflict"


class Forbidden(DomainError):
    """The caller's role does not allow this."""

    code = "forbidden"
