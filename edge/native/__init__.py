"""The worker's native I/O (chunkio.c), compiled on first use and cached as p4kit's native modules are
(p4kit.switch.native.build: the file name is the hash of the source, the flags and the compiler).

`chunk_io()` is the module, or None where it cannot be built (no C compiler or no Python.h): the
worker then runs its Python path, which does the same packet by packet. `TRIBUTARY_WORKER_IO=python`
chooses the Python path on purpose (to compare the two, or to rule the module out).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import ModuleType

from p4kit.switch.errors import PipelineLoadError
from p4kit.switch.native import build

ENV_IO = "TRIBUTARY_WORKER_IO"  # "python": no native I/O; "native": fail when it cannot be built

_SOURCE = (Path(__file__).parent / "chunkio.c").read_text()
_log = logging.getLogger(__name__)
_tried: list[ModuleType | None] = []


def chunk_io() -> ModuleType | None:
    """The compiled module (ChunkIO), None when the Python path runs instead (the reason is logged once).
    With TRIBUTARY_WORKER_IO=native a module that cannot be built raises PipelineLoadError."""
    choice = os.environ.get(ENV_IO, "auto")
    if choice not in ("auto", "native", "python"):
        raise ValueError(f"{ENV_IO} must be auto, native or python, not {choice!r}")
    if choice == "python":
        return None
    if not _tried:
        name = build.module_name(_SOURCE).replace("p4kit_native_", "tributary_chunkio_")
        try:
            if build.compiler() is None:
                raise PipelineLoadError("no C compiler (cc, gcc or clang; or set P4KIT_CC)")
            _tried.append(build.load(_SOURCE.replace("MODNAME", name), name))
        except PipelineLoadError as exc:
            _log.warning("the worker's native I/O is not available, the Python path runs: %s", exc)
            _tried.append(None)
    if _tried[0] is None and choice == "native":
        raise PipelineLoadError("the worker's native I/O (edge/native/chunkio.c) could not be built")
    return _tried[0]
