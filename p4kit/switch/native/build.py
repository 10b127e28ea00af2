"""Compile a generated C module with the system's C compiler and load it, with a cache on disk.

Why a cache: a program's module takes the compiler a second or more (INC's ~10,000 lines about
three), and every switch process of an experiment loads the same program. The file name is the hash
of everything that decides the binary (the source, the flags, the compiler and this Python), so a
stale module is never loaded, and compiling to a temporary name and renaming it makes concurrent
builds of one program safe.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from p4kit.switch.errors import PipelineLoadError

CFLAGS = ["-O2", "-shared", "-fPIC", "-fno-strict-aliasing", "-w"]
ENV_CACHE = "P4KIT_NATIVE_CACHE"
ENV_CC = "P4KIT_CC"

_loaded: dict[str, ModuleType] = {}


def compiler() -> str | None:
    """The C compiler to use (P4KIT_CC, CC, or cc/gcc/clang on the PATH), None if there is none."""
    for cand in (os.environ.get(ENV_CC), os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return cand
    return None


def cache_dir() -> Path:
    d = os.environ.get(ENV_CACHE)
    if d:
        return Path(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "p4kit" / "native"


def python_include() -> str | None:
    inc = sysconfig.get_paths().get("include")
    return inc if inc and os.path.exists(os.path.join(inc, "Python.h")) else None


def module_name(source: str) -> str:
    cc = compiler() or "none"
    key = "\0".join([source, " ".join(CFLAGS), cc, sys.version, sysconfig.get_platform()])
    return "p4kit_native_" + hashlib.sha256(key.encode()).hexdigest()[:20]


def load(source: str, name: str) -> ModuleType:
    """The compiled module of `source` (whose init function is PyInit_<name>): from this process,
    from the cache, or compiled now. Raises PipelineLoadError with the compiler's words."""
    mod = _loaded.get(name)
    if mod is not None:
        return mod
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    d = cache_dir()
    so = d / f"{name}{suffix}"
    if not so.exists():
        # one compiler at a time per program: the switches of an experiment start together, and
        # the others wait for the first one's module instead of each compiling their own
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not so.exists():
                _compile(source, name, so)
    spec = importlib.util.spec_from_file_location(name, so)
    if spec is None or spec.loader is None:
        raise PipelineLoadError(f"cannot load the native data plane {so}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _loaded[name] = mod
    return mod


def _compile(source: str, name: str, so: Path) -> None:
    cc = compiler()
    if cc is None:
        raise PipelineLoadError("no C compiler (cc, gcc or clang; or set P4KIT_CC) for the native data plane")
    inc = python_include()
    if inc is None:
        raise PipelineLoadError("Python.h not found (Debian: python3-dev) for the native data plane")
    so.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="p4kit-native-", dir=so.parent) as tmp:
        c = Path(tmp) / f"{name}.c"
        c.write_text(source)
        out = Path(tmp) / so.name
        cmd = [cc, *CFLAGS, f"-I{inc}", "-o", str(out), str(c)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-20:])
            raise PipelineLoadError(
                f"the native data plane did not compile ({' '.join(cmd[:2])} ...):\n{tail}"
            )
        os.replace(out, so)
