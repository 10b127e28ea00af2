"""p4kit-stf: runs p4c's STF packet tests (the format of p4c's backends/bmv2/bmv2stf.py) against
p4kit's switch in-process -- no Mininet, no root.

parser.py reads STF files into directives; runner.py executes them on a ``p4kit.switch.Switch`` and
compares what came out with the expectations, with p4c's semantics; cli.py is ``p4kit-stf``.
"""
