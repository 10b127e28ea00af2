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
    proc = subprocess.run(cmd, capture_output=True)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", errors="replace").strip()
        msg = err or f"the C preprocessor failed with status {proc.returncode}"
        raise CompileError(f"preprocessing failed:\n{msg}")
    return _source_map(proc.stdout, str(path))


def _source_map(output: bytes, default_file: str) -> SourceMap:
    """The preprocessed text; a byte that is not UTF-8 outside comments (which the preprocessor
    drops) is a user error at its place in the original file, as p4c's lexer reports it."""
    try:
        return SourceMap.from_preprocessed(output.decode("utf-8"), default_file=default_file)
    except UnicodeDecodeError as e:
        bad = e.start
    text = output.decode("utf-8", errors="surrogateescape")
    smap = SourceMap.from_preprocessed(text, default_file=default_file)
    before = output[:bad]
    line = before.count(b"\n") + 1
    col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", errors="replace")) + 1
    raise CompileError(
        f"invalid byte 0x{output[bad]:02x}: source files must be UTF-8 (or ASCII) text",
        smap.locate(line, col),
    )
