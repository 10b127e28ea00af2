"""p4kit: a P4_16 toolchain (compiler, BMv2-compatible switch, STF runner) written for Tributary.

Neither p4c nor BMv2 can be installed on the machines Tributary targets, so p4kit stands in for them with
the same command lines (p4c-bm2-ss, simple_switch_grpc) and the same file formats (BMv2 JSON, P4Info,
P4Runtime), so a user with the real tools can swap them in.
"""

__version__ = "0.1.0"
