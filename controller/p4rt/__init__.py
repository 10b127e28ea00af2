"""The controller's P4Runtime client: connections to many switches, and entities built by name.

Own code over grpcio and the `p4runtime` messages (p4.v1), so that the controller speaks to p4kit-switch
and to a real simple_switch_grpc (or a hardware target) alike.
"""

from controller.p4rt.client import P4RuntimeError, SwitchConnection, UpdateError
from controller.p4rt.entities import P4InfoIndex

__all__ = ["P4InfoIndex", "P4RuntimeError", "SwitchConnection", "UpdateError"]
