// expect-error: 12 package Pipe:.*type mismatch in argument 'p'
// A package instantiated with a control where its parameter is a parser. p4c reports it at the
// package's declaration ("error: 'package Pipe'", then the argument); p4kit-p4c too, with the
// argument's line as a note.
#include <core.p4>

header h_t { bit<8> a; }
struct headers_t { h_t h; }

parser Prs(packet_in pkt, out headers_t hdr);
control Ctl(inout headers_t hdr);
package Pipe(Prs p, Ctl c);

parser MyParser(packet_in pkt, out headers_t hdr) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyControl(inout headers_t hdr) {
    apply { hdr.h.a = 1; }
}

Pipe(MyControl(), MyControl()) main;
