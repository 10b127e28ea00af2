"""The compiler driver: P4_16 source -> checked AST (front end) -> BMv2 JSON + control-plane model
(back end). The CLI (p4kit-p4c) and the STF runner call `compile_file`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p4kit.compiler.cpmodel import ControlPlaneModel
from p4kit.compiler.diagnostics import CompileError


@dataclass
class CompileResult:
    bmv2: dict[str, Any]
    control_plane: ControlPlaneModel


def compile_file(
    path: str | Path,
    include_dirs: Iterable[str] = (),
    defines: Iterable[str] = (),
    emit_externs: bool = False,
) -> CompileResult:
    """Compile the v1model program at `path`. Raises CompileError (UnsupportedError for valid P4 that
    p4kit cannot compile) with the source location; never returns a partial result."""
    from p4kit.compiler.backend.program import lower_program
    from p4kit.compiler.frontend import frontend

    program = frontend(path, include_dirs, defines)
    try:
        bmv2, cp = lower_program(program, path, emit_externs)
    except CompileError:
        raise
    except RecursionError as e:
        raise CompileError(f"{path}: program too deeply nested for the back end") from e
    return CompileResult(bmv2, cp)


def compile_program(program: Any, source: str | Path = "") -> CompileResult:
    """Back end only, for an already checked `ast.Program` (tests, tools)."""
    from p4kit.compiler.backend.program import lower_program

    bmv2, cp = lower_program(program, source)
    return CompileResult(bmv2, cp)
