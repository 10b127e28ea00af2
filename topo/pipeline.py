"""Compile the switch program (p4src/inc.p4) into the run directory: BMv2 JSON and P4Info."""

from __future__ import annotations

import json
from pathlib import Path

from controller.provision import Pipeline

P4SRC = Path(__file__).resolve().parent.parent / "p4src"
MAIN_PROGRAM = P4SRC / "inc.p4"


def build_pipeline(out_dir: Path, program: Path = MAIN_PROGRAM) -> Pipeline:
    """Compile `program` with p4kit-p4c's driver; writes inc.json and inc.p4info.txtpb to out_dir."""
    from p4kit.compiler.driver import compile_file
    from p4kit.compiler.p4info import build_p4info, write_p4info

    out_dir.mkdir(parents=True, exist_ok=True)
    result = compile_file(str(program), include_dirs=[str(program.parent)])
    device_config = json.dumps(result.bmv2, indent=1).encode()
    (out_dir / f"{program.stem}.json").write_bytes(device_config)
    p4info = build_p4info(result.control_plane)
    write_p4info(p4info, out_dir / f"{program.stem}.p4info.txtpb")
    return Pipeline(p4info=p4info, device_config=device_config)
