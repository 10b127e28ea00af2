"""`p4kit-p4c`: compile a P4_16 v1model program to BMv2 JSON and P4Info, with p4c-bm2-ss's command line.

The command line is p4c-bm2-ss's so that build scripts, Makefiles and tutorials written for p4c work
unchanged here, and so that a user who has the real p4c can swap it in by changing one word.

Exit status: 0 on success; 1 for every error in the program or on the command line (printed as
`file:line:col: error: message`, never a traceback); 2 for a bug inside p4kit itself ("internal
compiler error"), with the traceback shown only when P4KIT_DEBUG=1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import NoReturn

from p4kit.compiler.diagnostics import CompileError, UnsupportedError
from p4kit.compiler.preprocess import PREDEFINED

PROG = "p4kit-p4c"

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_INTERNAL_ERROR = 2

DEBUG_ENV = "P4KIT_DEBUG"

_WARNING_FLAGS = frozenset({"--Wdisable", "--Wwarn", "--Werror", "--Winfo"})

_DESCRIPTION = """\
Compile a P4_16 program for the v1model architecture into BMv2 JSON (for p4kit-switch or
simple_switch / simple_switch_grpc) and, on request, its P4Info (for P4Runtime controllers).
The flags are those of p4c-bm2-ss, so commands written for p4c work unchanged."""

_EPILOG = """\
examples:
  # what p4lang/tutorials runs: BMv2 JSON plus P4Info in protobuf text format
  p4kit-p4c --p4v 16 --p4runtime-files build/basic.p4.p4info.txtpb -o build/basic.json basic.p4

  # several P4Info formats at once (the format follows the suffix: .txt/.txtpb, .json, .bin)
  p4kit-p4c --p4runtime-files build/x.p4info.txt,build/x.p4info.json -o build/x.json x.p4

  # older single-file flag; its format comes from --p4runtime-format (default: binary)
  p4kit-p4c --p4runtime-file x.p4info.txt --p4runtime-format text -o x.json x.p4

  # include directories and preprocessor macros, as with cpp
  p4kit-p4c -I include -D TABLE_SIZE=4096 -D WITH_INT -o inc.json p4src/inc.p4

  # the v1model version with PortId_t and typed indices
  p4kit-p4c -D V1MODEL_VERSION=20200408 -o prog.json prog.p4

output:
  Without -o, p4c-bm2-ss writes no JSON at all; p4kit-p4c instead writes PROGRAM.json (the program's
  base name) into the current directory, as the `p4c` driver does; `-o DIR` (an existing directory,
  or a name ending in /) writes DIR/PROGRAM.json, as `p4c --target bmv2 -o DIR` does. Nothing is
  written when the program has an error.

exit status:
  0 success, 1 error in the program or the command line, 2 internal compiler error (a p4kit bug;
  run again with P4KIT_DEBUG=1 for the traceback and report it).
"""


class _UsageError(Exception):
    """A bad command line: reported like any other user error (exit 1)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a user error in p4c's format (exit 1), not argparse's exit 2."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _version() -> str:
    try:
        return metadata.version("tributary")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _build_parser() -> _Parser:
    p = _Parser(
        prog=PROG,
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
        allow_abbrev=False,
    )
    p.add_argument("program", metavar="PROGRAM.p4", nargs="?", help="the P4_16 source file")
    g = p.add_argument_group("language and target")
    g.add_argument(
        "--p4v",
        metavar="{16}",
        help="language version: 16 (P4_14 programs are not supported)",
    )
    g.add_argument("--std", metavar="{p4-16}", help="same as --p4v, spelled p4-16")
    g.add_argument("--target", default="bmv2", help="compilation target (only bmv2; default %(default)s)")
    g.add_argument("--arch", default="v1model", help="architecture (only v1model; default %(default)s)")
    g = p.add_argument_group("preprocessor (the system cpp, as with p4c)")
    g.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="add DIR to the #include search path (repeatable)",
    )
    g.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME[=VAL]",
        help="define a macro (repeatable)",
    )
    g = p.add_argument_group("outputs")
    g.add_argument(
        "-o",
        dest="output",
        metavar="OUT.json",
        help="write the BMv2 JSON to OUT.json (or into the directory OUT/)",
    )
    g.add_argument(
        "--p4runtime-files",
        metavar="FILE[,FILE...]",
        action="append",
        default=[],
        help="write the P4Info to each FILE; the format follows the suffix "
        "(.txt/.txtpb text, .json JSON, .bin binary)",
    )
    g.add_argument(
        "--p4runtime-file",
        metavar="FILE",
        help="(older flag) write the P4Info to FILE in --p4runtime-format",
    )
    g.add_argument(
        "--p4runtime-format",
        choices=("text", "json", "binary"),
        default="binary",
        help="format for --p4runtime-file (default %(default)s, as in p4c)",
    )
    g = p.add_argument_group("other")
    g.add_argument(
        "--emit-externs",
        action="store_true",
        help="emit calls of the program's own extern functions as BMv2 primitives of the same name "
        "(as p4c-bm2-ss does); the target must provide them",
    )
    g.add_argument(
        "--Wdisable",
        action="store_true",
        help="accepted (also --Wwarn[=DIAG], --Werror[=DIAG]) for compatibility with p4c; ignored",
    )
    g.add_argument("-v", dest="verbose", action="count", default=0, help="print stage timings to stderr")
    g.add_argument("--version", action="store_true", help="print the version and exit")
    g.add_argument("-h", "--help", action="help", help="show this help and exit")
    return p


@dataclass
class Options:
    """The command line after checking: everything the compile step needs."""

    program: Path
    output: Path
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    p4info_outputs: list[tuple[Path, str]] = field(default_factory=list)  # (path, format)
    verbose: int = 0
    emit_externs: bool = False


def _check_args(ns: argparse.Namespace) -> Options:
    from p4kit.compiler.p4info import format_for_path

    for flag, value, ok in (("--p4v", ns.p4v, ("16", "1.6")), ("--std", ns.std, ("p4-16", "p4_16"))):
        if value is None:
            continue
        if value in ("14", "1.0", "p4-14", "p4_14"):
            raise UnsupportedError(f"{flag} {value}: P4_14 programs (only P4_16 is supported)")
        if value not in ok:
            raise _UsageError(f"{flag}: unknown language version '{value}' (expected {ok[0]})")
    if ns.target != "bmv2":
        raise UnsupportedError(f"--target {ns.target} (p4kit-p4c compiles for bmv2 only)")
    if ns.arch != "v1model":
        raise UnsupportedError(f"--arch {ns.arch} (p4kit-p4c supports the v1model architecture only)")
    if ns.program is None:
        raise _UsageError("no input file (usage: p4kit-p4c [options] PROGRAM.p4; see --help)")
    for d in ns.defines:
        name = d.split("=", 1)[0].split("(", 1)[0]  # NAME, NAME=VAL or a function-like NAME(args)=VAL
        if (
            not name
            or not (name[0].isalpha() or name[0] == "_")
            or not all(c.isalnum() or c == "_" for c in name)
        ):
            raise _UsageError(f"-D {d}: '{name}' is not a valid macro name")

    program = Path(ns.program)
    if not program.is_file():
        what = "is a directory" if program.is_dir() else "No such file or directory"
        raise CompileError(f"{program}: {what}")
    output = Path(ns.output) if ns.output else Path.cwd() / (program.stem + ".json")
    if ns.output and (output.is_dir() or ns.output.endswith(("/", "\\"))):
        # the p4c driver's `-o build`: a directory, in which the JSON is named after the program
        # (p4lang/tutorials' runptf.sh: `p4c --target bmv2 --arch v1model -o build solution/basic.p4`)
        output = output / (program.stem + ".json")

    outs: list[tuple[Path, str]] = []
    if ns.p4runtime_file:
        outs.append((Path(ns.p4runtime_file), ns.p4runtime_format))
    for group in ns.p4runtime_files:
        for name in group.split(","):
            if not name:
                raise _UsageError(f"--p4runtime-files {group}: empty file name in the list")
            outs.append((Path(name), format_for_path(name)))
    return Options(
        program=program,
        output=output,
        include_dirs=list(ns.include_dirs),
        defines=list(ns.defines),
        p4info_outputs=outs,
        verbose=ns.verbose,
        emit_externs=ns.emit_externs,
    )


def _write_bytes(path: Path, data: bytes, what: str) -> None:
    try:
        if path.parent and not path.parent.exists():
            raise CompileError(f"couldn't write {what} {path}: directory {path.parent} does not exist")
        path.write_bytes(data)
    except IsADirectoryError:
        raise CompileError(f"couldn't write {what} {path}: it is a directory") from None
    except OSError as e:
        raise CompileError(f"couldn't write {what} {path}: {e.strerror or e}") from None


def _compile(opts: Options) -> dict[str, float]:
    """Compile and write every output. Returns seconds spent per step (for -v)."""
    from p4kit.compiler import driver
    from p4kit.compiler.p4info import build_p4info, serialize_p4info

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    result = driver.compile_file(str(opts.program), opts.include_dirs, opts.defines, opts.emit_externs)
    timings["compile"] = time.perf_counter() - t0

    # Everything is built before anything is written, so a failure leaves no half set of outputs.
    t1 = time.perf_counter()
    outputs: list[tuple[Path, bytes, str]] = []
    if opts.p4info_outputs:
        p4info = build_p4info(result.control_plane)
        for path, fmt in opts.p4info_outputs:
            outputs.append((path, serialize_p4info(p4info, fmt), "P4Runtime API file"))
    timings["p4info"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    text = json.dumps(result.bmv2, indent=2) + "\n"
    outputs.insert(0, (opts.output, text.encode(), "output file"))
    timings["json"] = time.perf_counter() - t2

    for path, data, what in outputs:
        _write_bytes(path, data, what)
    stages = getattr(result, "timings", None)
    if isinstance(stages, dict):
        timings.update({f"compile.{k}": float(v) for k, v in stages.items()})
    return timings


def run(argv: Sequence[str] | None = None) -> int:
    """The whole command: parse, compile, write, report. Returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    # p4c's warning switches take an optional `=DIAG`; none of them changes what p4kit produces.
    args = [a for a in args if a.split("=", 1)[0] not in _WARNING_FLAGS]
    try:
        ns = _build_parser().parse_args(args)
        if ns.version:
            print(
                f"{PROG}\nVersion {_version()} (p4kit; command line and outputs of p4c-bm2-ss "
                f"{PREDEFINED['__p4c_version__'].strip(chr(34))}; BMv2 JSON format 2.x, P4Runtime 1.4)"
            )
            return EXIT_OK
        opts = _check_args(ns)
        timings = _compile(opts)
        if opts.verbose:
            print(json.dumps({k: round(v, 4) for k, v in timings.items()}), file=sys.stderr)
        return EXIT_OK
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except CompileError as e:
        print(e.format(), file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        print(
            "error: the program is nested too deeply for p4kit's compiler (recursion limit reached)",
            file=sys.stderr,
        )
        return EXIT_USER_ERROR
    except Exception as e:  # a bug in p4kit: one line, plus how to learn more
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        detail = str(e).splitlines()[0] if str(e) else ""
        print(
            f"internal compiler error: {type(e).__name__}" + (f": {detail}" if detail else ""),
            file=sys.stderr,
        )
        if not os.environ.get(DEBUG_ENV):
            print(
                f"This is a bug in p4kit, not in your program. Run again with {DEBUG_ENV}=1 for the "
                "traceback and include it in a bug report.",
                file=sys.stderr,
            )
        return EXIT_INTERNAL_ERROR


def main() -> None:
    """Console-script entry point (`p4kit-p4c`)."""
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
