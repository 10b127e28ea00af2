"""p4kit-switch: a BMv2 simple_switch-compatible v1model software switch.

Control API (for the P4Runtime server, the CLI and the STF runner): ``p4kit.switch.runtime.Switch``
-- load_pipeline, table_*, act_prof_*, counter_*/direct_counter_*, meter_*/direct_meter_*,
register_*, mc_group_* and mc_mgrp/mc_node_* (PRE), clone_session_*, parse_vset_*, callbacks for
digests (``DigestMessage``), packet-in (``PacketIn``), log_msg and per-packet traces, and
``process_packet(port, data) -> [(port, bytes)]`` / ``packet_out(data)``. Errors are the typed
exceptions of ``p4kit.switch.errors`` (each has a ``grpc_code``).

Data plane modules: program.py (indexed BMv2 JSON), codegen.py (JSON -> specialised Python source),
engine.py (v1model packet flow: parser, checksums, ingress, PRE, egress, deparser), tables.py,
state.py, pre.py, meters.py, hashes.py; jsonbuild.py builds small BMv2 JSON programs for tests.
"""

from p4kit.switch.errors import SwitchError
from p4kit.switch.runtime import DigestMessage, PacketIn, Switch, TableEntryView

__all__ = ["DigestMessage", "PacketIn", "Switch", "SwitchError", "TableEntryView"]
