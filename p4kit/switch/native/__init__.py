"""The native data plane: a program's parser, controls, checksums and deparser compiled to C.

`cgen.py` writes the C module from the BMv2 JSON (runtime.c is the part every module shares),
`build.py` compiles and caches it, and `engine.py` runs it inside a `Switch` in place of the
Python fast path whenever the program is within what it covers (`why_not` says when it is not).
docs/switch.md, "The native data plane", explains the design and what it costs.
"""

from __future__ import annotations

from p4kit.switch.native.engine import Cells, NativeEngine, plan

__all__ = ["Cells", "NativeEngine", "plan"]
