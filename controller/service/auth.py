"""Bearer tokens: one per tenant (stored only as a hash) and the admin's (from the environment or a file).

Why hashes: the database may be copied or read by whoever debugs the controller; a token is shown to
its tenant once, when it is created, and never again. The admin token is never written to a log.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

ADMIN_TOKEN_ENV = "TRIBUTARY_ADMIN_TOKEN"
ADMIN_TOKEN_FILE_ENV = "TRIBUTARY_ADMIN_TOKEN_FILE"
TOKEN_PREFIX = "trib_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: the admin, or one tenant."""

    tenant: str | None  # None for the admin

    @property
    def is_admin(self) -> bool:
        return self.tenant is None


ADMIN = Principal(None)


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_token(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def load_admin_token(path: Path | None = None) -> str:
    """The admin token: $TRIBUTARY_ADMIN_TOKEN, else the file `path` (or $TRIBUTARY_ADMIN_TOKEN_FILE).

    Raises ValueError (without the token in the message) when none is configured or it is too short."""
    token = os.environ.get(ADMIN_TOKEN_ENV, "").strip()
    source = f"${ADMIN_TOKEN_ENV}"
    if not token:
        file = path or (
            Path(os.environ[ADMIN_TOKEN_FILE_ENV]) if os.environ.get(ADMIN_TOKEN_FILE_ENV) else None
        )
        if file is None:
            raise ValueError(
                f"no admin token: set {ADMIN_TOKEN_ENV} or give a token file (--admin-token-file or "
                f"${ADMIN_TOKEN_FILE_ENV})"
            )
        try:
            token = file.read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read the admin token file {file}: {exc.strerror}") from None
        source = str(file)
    if len(token) < 16:
        raise ValueError(f"the admin token from {source} is shorter than 16 characters")
    return token


def write_token_file(path: Path, token: str) -> None:
    """Create (or replace) a token file readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
