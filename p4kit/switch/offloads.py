"""The NIC offloads a software switch's interfaces must not use.

Why: with checksum offload a veth hands AF_PACKET sockets UDP/TCP frames whose checksums are not yet
computed, and with TSO/GSO/GRO it hands over (or takes) frames larger than the MTU. A switch that
parses, rewrites and re-emits frames needs every frame as it would be on a wire, so whoever creates
its interfaces (Mininet nodes, test namespaces) turns these off, as p4lang/tutorials do for hosts."""

from __future__ import annotations

OFFLOADS_OFF = ("tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off")


def offloads_off_command(iface: str) -> list[str]:
    """The ethtool command line that turns the offloads off on `iface`."""
    return ["ethtool", "-K", iface, *OFFLOADS_OFF]
