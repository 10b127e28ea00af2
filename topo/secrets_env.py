"""Secrets stay out of child processes' environments.

Why: `tributary run` starts the WAN keeper, the switches, every Mininet host's shell and whatever a user
runs in them; each inherits the environment, and anything running as another tenant's worker could read
TRIBUTARY_ADMIN_TOKEN from /proc/self/environ or its parent's. So the commands that start children take
the tokens out of their own environment first, keep them in memory, and hand the admin token to the
controller only through its mode-0600 file.
"""

from __future__ import annotations

import os

from controller.service.auth import ADMIN_TOKEN_ENV

TENANT_TOKEN_ENV = "TRIBUTARY_TOKEN"
SECRET_VARS = (ADMIN_TOKEN_ENV, TENANT_TOKEN_ENV)


def take_secrets() -> dict[str, str]:
    """Remove the secret variables from this process's environment; returns what they held."""
    return {name: os.environ.pop(name) for name in SECRET_VARS if name in os.environ}


def without_secrets(env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of `env` (default: this process's environment) without the secret variables."""
    return {k: v for k, v in (os.environ if env is None else env).items() if k not in SECRET_VARS}
