"""Preprocessing with the system C preprocessor, as p4c does, so #include, #define and #if behave the
same as with p4c. The project's own core.p4 and v1model.p4 (include/ beside this file) are found by
`#include <core.p4>` and `#include <v1model.p4>`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from p4kit.compiler.diagnostics import CompileError, SourceMap

INCLUDE_DIR = Path(__file__).resolve().parent / "include"

# What p4c predefines; programs test these to pick target-specific code.
PREDEFINED = {
    "__TARGET_BMV2__": "1",
    "__p4c__": "1",
    "__p4c_major__": "1",
    "__p4c_minor__": "2",
    "__p4c_patchlevel__": "4",
    "__p4c_version__": '"1.2.4"',
    "__p4kit__": "1",
}


def find_cpp() -> str:
    for name in ("cpp", "cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    raise CompileError("no C preprocessor found (install the Debian package 'cpp')")


def preprocess(
    program: str | Path,
    include_dirs: list[str] | None = None,
    defines: list[str] | None = None,
) -> SourceMap:
    """Run the C preprocessor over `program` and return the result with its map back to the sources.

    `defines` are `NAME` or `NAME=VALUE`, as given to -D.
    """
    path = Path(program)
    if not path.is_file():
        raise CompileError(f"{program}: no such file")
    cpp = find_cpp()
    cmd = [cpp]
    if Path(cpp).name != "cpp":
        cmd.append("-E")
    cmd += ["-x", "c", "-undef", "-nostdinc", "-Wno-comment", "-Wno-invalid-pp-token"]
    for name, value in PREDEFINED.items():
        cmd.append(f"-D{name}={value}")
    for d in defines or []:
        cmd.append(f"-D{d}")
    for inc in include_dirs or []:
        cmd.append(f"-I{inc}")
    cmd += [f"-I{INCLUDE_DIR}", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        msg = proc.stderr.strip() or f"the C preprocessor failed with status {proc.returncode}"
        raise CompileError(f"preprocessing failed:\n{msg}")
    return SourceMap.from_preprocessed(proc.stdout, default_file=str(path))
