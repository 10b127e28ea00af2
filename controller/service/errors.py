"""Errors of the service core, each with the HTTP status it maps to, so the REST layer stays a table."""

from __future__ import annotations


class ServiceError(Exception):
    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ServiceError):
    """The request names things that do not exist or cannot work together (unknown host, site...)."""

    status = 422


class Unauthorized(ServiceError):
    status = 401


class Forbidden(ServiceError):
    status = 403


class NotFound(ServiceError):
    """Also what a tenant gets for another tenant's job: its existence is not revealed."""

    status = 404


class Conflict(ServiceError):
    """The network cannot take it now: not enough slots or groups, a name in use."""

    status = 409


class NoRoom(Conflict):
    """The switches' cells or groups cannot hold the job: what admission answers with fewer slots or the
    host path (controller.inc.jobs.admit)."""


class Unavailable(ServiceError):
    """A switch the job needs does not answer; nothing of the job was left installed."""

    status = 503


class QuotaExceeded(ServiceError):
    """The tenant's quota (jobs, slots or rounds) does not leave room for the request."""

    status = 403


class TooLarge(ServiceError):
    """The request body is larger than the service accepts."""

    status = 413
