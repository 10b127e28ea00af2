"""Scapy layers for the INC protocol, for crafting and dissecting packets by hand.

    from scapy.all import Ether, IP, UDP
    from edge.scapy_inc import INC, INCValues
    pkt = Ether() / IP(dst="10.0.1.254") / UDP(sport=48001, dport=47000) / INC(tenant=1, chunk=0, epoch=E) / INCValues(values=[1] * 64)

(E: the job's epoch, from its view; scapy fills in the UDP checksum the switches require.)

UDP port INC_UDP_PORT (as destination, and as the source of results) is bound to INC, so sniffed
packets dissect on their own.
"""

from __future__ import annotations

from scapy.fields import BitField, ByteEnumField, ByteField, FieldListField, FlagsField, IntField, ShortField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from edge.protocol import INC_LANES, INC_UDP_PORT, INC_VERSION


class INC(Packet):
    name = "INC"
    fields_desc = [
        ByteField("version", INC_VERSION),
        ByteEnumField("kind", 0, {0: "sum", 1: "max"}),
        FlagsField("flags", 0, 8, ["RESULT", "RETRANSMIT", "VERSION", "URGENT"]),
        ByteField("sender", 0),
        ShortField("tenant", 0),
        ShortField("round", 0),
        ShortField("slot", 0),
        ShortField("count", 1),
        IntField("chunk", 0),
        IntField("epoch", 0),
        ByteField("exponent", 0),
        ByteEnumField("format", 0, {0: "int32", 1: "int8", 2: "int4", 3: "wide32", 4: "wide16", 5: "empty"}),
        ShortField("reserved1", 0),
    ]


class INCValues(Packet):
    name = "INCValues"
    fields_desc = [
        FieldListField("values", [0] * INC_LANES, BitField("v", 0, 32), count_from=lambda _pkt: INC_LANES),
    ]


bind_layers(UDP, INC, dport=INC_UDP_PORT)  # contributions, on their way to a switch
bind_layers(UDP, INC, sport=INC_UDP_PORT)  # results, delivered from a switch's INC address
bind_layers(INC, INCValues)
