"""Typed errors of the switch's control API.

Why typed: the P4Runtime server maps each class to a gRPC status code (``grpc_code``), and the STF
runner prints ``str(err)``; neither has to parse messages. Every control operation validates all its
arguments before touching state, so an error always leaves the switch exactly as it was.
"""

from __future__ import annotations


class SwitchError(Exception):
    """Base class; ``grpc_code`` names the matching ``grpc.StatusCode`` member."""

    grpc_code = "UNKNOWN"


class NoPipelineError(SwitchError):
    """No pipeline has been loaded yet."""

    grpc_code = "FAILED_PRECONDITION"


class PipelineLoadError(SwitchError):
    """The BMv2 JSON could not be loaded (missing keys, unsupported constructs)."""

    grpc_code = "INVALID_ARGUMENT"


class UnknownNameError(SwitchError):
    """Unknown table, action, counter, meter, register, action profile, parse value set..."""

    grpc_code = "NOT_FOUND"


class BadKeyError(SwitchError):
    """Wrong number of key fields, wrong match kind, value wider than the field, bad prefix length."""

    grpc_code = "INVALID_ARGUMENT"


class BadActionError(SwitchError):
    """The action is not allowed in this table (or as default), or its parameters are wrong."""

    grpc_code = "INVALID_ARGUMENT"


class DuplicateEntryError(SwitchError):
    """An entry (table entry, member, group, multicast group, clone session) already exists."""

    grpc_code = "ALREADY_EXISTS"


class EntryNotFoundError(SwitchError):
    """The entry handle, member, group, multicast group or clone session does not exist."""

    grpc_code = "NOT_FOUND"


class BadIndexError(SwitchError):
    """Index out of range for a counter, meter or register array."""

    grpc_code = "OUT_OF_RANGE"


class ConstViolationError(SwitchError):
    """Attempt to change something the program declared constant (const entries, const default)."""

    grpc_code = "PERMISSION_DENIED"


class InvalidOperationError(SwitchError):
    """Any other request that makes no sense for the object (e.g. a member on a direct table)."""

    grpc_code = "INVALID_ARGUMENT"


class TableFullError(SwitchError):
    """The table (or action profile) already holds its declared maximum number of entries."""

    grpc_code = "RESOURCE_EXHAUSTED"
