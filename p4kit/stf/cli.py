"""p4kit-stf: run a p4c STF packet test against p4kit's switch, in-process.

    p4kit-stf PROGRAM.p4 TEST.stf [-I DIR]... [-D NAME[=VALUE]]... [-v]

PROGRAM may also be a BMv2 JSON file (as p4c's bmv2stf.py takes). Exit status: 0 when every
expectation held, 1 on a mismatch, a compile error, a bad STF line or a switch error (printed,
never as a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from p4kit.stf.parser import StfSyntaxError, parse_stf
from p4kit.stf.runner import StfError, StfResult, StfRunner
from p4kit.switch.errors import SwitchError
from p4kit.switch.runtime import Switch


def _load_program(path: Path, include_dirs: list[str], defines: list[str]) -> dict:
    if path.suffix == ".json":
        return json.loads(path.read_text())
    from p4kit.compiler.diagnostics import CompileError
    from p4kit.compiler.driver import compile_file

    try:
        return compile_file(path, include_dirs=include_dirs, defines=defines).bmv2
    except CompileError as exc:
        raise _Fail(exc.format()) from exc


class _Fail(Exception):
    pass


def run_stf(
    program: str | Path,
    stf: str | Path,
    include_dirs: list[str] | None = None,
    defines: list[str] | None = None,
    verbose: bool = False,
    echo=print,
) -> StfResult:
    """Compile (or load) the program, run the STF file, return the result. Raises _Fail/StfError."""
    bmv2 = _load_program(Path(program), include_dirs or [], defines or [])
    directives = parse_stf(Path(stf).read_text())
    sw = Switch()
    sw.load_pipeline(bmv2)
    if verbose:
        sw.set_trace(lambda line: echo(f"    | {line}"))
    return StfRunner(sw, verbose=verbose, echo=echo).run(directives)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader went away (`p4kit-stf ... | head -1`): stop quietly, as command-line tools do
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="p4kit-stf", description="Run a p4c STF test on p4kit's software switch."
    )
    ap.add_argument("program", help="P4_16 program (v1model) or BMv2 JSON")
    ap.add_argument("stf", help="STF test file")
    ap.add_argument(
        "-I", dest="include", action="append", default=[], metavar="DIR", help="include directory"
    )
    ap.add_argument(
        "-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]", help="preprocessor define"
    )
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="print directives, packets and per-packet traces"
    )
    args = ap.parse_args(argv)
    for p in (args.program, args.stf):
        if not Path(p).is_file():
            print(f"p4kit-stf: error: no such file: {p}", file=sys.stderr)
            return 1
    try:
        result = run_stf(args.program, args.stf, args.include, args.define, args.verbose)
    except _Fail as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except StfSyntaxError as exc:
        print(f"{args.stf}:{exc}", file=sys.stderr)
        return 1
    except StfError as exc:
        print(f"{args.stf}:{exc}", file=sys.stderr)
        return 1
    except SwitchError as exc:
        print(f"p4kit-stf: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # an internal error: report it on one line, not as a traceback
        print(f"p4kit-stf: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    for why in result.unsent:
        print(f"note: {why}")
    for port, pkt in result.ignored:
        if args.verbose:
            print(f"note: ignored packet on port {port}: {pkt.hex().upper()}")
    if result.ok:
        print(
            f"PASS: {result.packets_sent} packet(s) sent, {result.packets_expected} expected packet(s) matched"
        )
        return 0
    if result.mismatch is not None:
        print("FAIL: " + result.mismatch.describe())
    for f in result.counter_failures:
        print("FAIL: " + f)
    return 1


if __name__ == "__main__":
    sys.exit(main())
