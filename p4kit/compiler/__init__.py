"""p4kit compiler: P4_16 source to BMv2 JSON and P4Info."""
