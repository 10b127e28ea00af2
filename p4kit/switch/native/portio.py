"""The native port loop's module (portio.c): built once, like a program's module, and shared by every
switch of the machine (its source does not depend on the program).

Why a module of its own: the loop's state -- rings, link emulation, the frames on their way -- belongs
to the ports and outlives a program: a new pipeline brings a new generated module, the port loop stays
and calls whichever pipeline is active through its capsule (abi.h).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from p4kit.switch.native import build

_HERE = Path(__file__).parent
_SOURCE = (_HERE / "portio.c").read_text().replace("/* ABI_H */", (_HERE / "abi.h").read_text())


def load() -> ModuleType:
    """The compiled port loop (PortIO, and the run() reasons IDLE, WAKE, STALE, CPU). Raises
    PipelineLoadError when there is no compiler or the build fails."""
    if build.compiler() is None:
        from p4kit.switch.errors import PipelineLoadError

        raise PipelineLoadError("no C compiler (cc, gcc or clang; or set P4KIT_CC) for the native port loop")
    name = build.module_name(_SOURCE).replace("p4kit_native_", "p4kit_portio_")
    return build.load(_SOURCE.replace("MODNAME", name), name)
