// Packet-in/out headers whose fields have serializable enum types (as p4lang/tutorials' flowcache
// has): the P4Info names the enum in each metadata's type_name and lists it, with its members'
// values, in type_info.serializable_enums. In the data plane the fields are plain bit<8>.
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 64

enum bit<8> ControllerOpcode_t {
    NO_OP = 0,
    SEND_TO_PORT = 1,
    ECHO = 0x2A
}

enum bit<8> PuntReason_t {
    FLOW_UNKNOWN = 1,
    ECHOED = 2
}

@controller_header("packet_out")
header packet_out_t {
    ControllerOpcode_t opcode;
    bit<7> _pad;
    bit<9> egress_port;
}

@controller_header("packet_in")
header packet_in_t {
    bit<16> ingress_port;
    PuntReason_t reason;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

struct headers_t {
    packet_out_t pout;
    packet_in_t  pin;
    ethernet_t   eth;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_out;
            default: parse_eth;
        }
    }
    state parse_out {
        pkt.extract(hdr.pout);
        transition parse_eth;
    }
    state parse_eth {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.pout.isValid()) {
            if (hdr.pout.opcode == ControllerOpcode_t.SEND_TO_PORT) {
                sm.egress_spec = hdr.pout.egress_port;
            } else if (hdr.pout.opcode == ControllerOpcode_t.ECHO) {
                sm.egress_spec = CPU_PORT;
                hdr.pin.setValid();
                hdr.pin.ingress_port = (bit<16>)sm.ingress_port;
                hdr.pin.reason = PuntReason_t.ECHOED;
            } else {
                mark_to_drop(sm);
            }
            hdr.pout.setInvalid();
        } else {
            sm.egress_spec = CPU_PORT;
            hdr.pin.setValid();
            hdr.pin.ingress_port = (bit<16>)sm.ingress_port;
            hdr.pin.reason = PuntReason_t.FLOW_UNKNOWN;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.pin);
        pkt.emit(hdr.eth);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
