"""Where the branches of a control's flow graph join again.

A control in BMv2 JSON is a DAG of conditionals and tables; ``None`` is its end. Generated Python
nests an ``if``/``else`` per branch, and writing every path out separately copies everything after a
join once per path: INC's ingress, where each check may drop the packet and return, outgrew the
inlining budget that way and ran its last 20 nodes one call at a time. Instead, the code generator
emits a conditional's branches up to the node where they join (``merge``), then the join once. A
path that leaves the control early (a ``return``) becomes a ``break`` out of a ``while True`` around
the control's code, so it needs no join at all.

A join ``m`` of branches ``b1..bk`` is a node two of them or more reach; it is valid only when no
path from a branch reaches anything after ``m`` without passing ``m`` (that code would run twice, or
be skipped), nor the enclosing region's own join ``stop``. The first valid one in topological order
is taken. Where no valid join exists the branches are written out in full, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class ControlGraph:
    """Successors of each node of one control (``None`` = the end of the control); nodes whose
    successor is chosen at run time (a table whose actions lead to different nodes) have none
    listed here, since the generated code leaves the nested code there."""

    def __init__(self, succ: Mapping[str, tuple[str | None, ...]], init: str | None) -> None:
        self.succ = {k: tuple(v) for k, v in succ.items()}
        self.order: dict[str, int] = {}
        self.reach: dict[str, frozenset[str]] = {}
        self.acyclic = self._number(init)
        if self.acyclic:
            for name in sorted(self.order, key=self.order.__getitem__, reverse=True):
                r = {name}
                for s in self.succ.get(name, ()):
                    if s is not None and s in self.reach:
                        r |= self.reach[s]
                self.reach[name] = frozenset(r)

    def _number(self, init: str | None) -> bool:
        """Topological positions of the nodes reachable from ``init``; False on a cycle."""
        if init is None:
            return True
        post: list[str] = []
        state: dict[str, int] = {}  # 1 on the stack, 2 done
        stack: list[tuple[str, int]] = [(init, 0)]
        state[init] = 1
        while stack:
            name, i = stack.pop()
            nexts = [s for s in self.succ.get(name, ()) if s is not None]
            if i < len(nexts):
                stack.append((name, i + 1))
                s = nexts[i]
                if state.get(s) == 1:
                    return False
                if s not in state:
                    state[s] = 1
                    stack.append((s, 0))
                continue
            state[name] = 2
            post.append(name)
        self.order = {name: k for k, name in enumerate(reversed(post))}
        return True

    def _walk(self, start: str, m: str, stop: str | None) -> set[str] | None:
        """Nodes reachable from ``start`` without passing ``m``; None if that reaches ``stop``."""
        seen: set[str] = set()
        todo = [start]
        while todo:
            n = todo.pop()
            if n == m or n in seen:
                continue
            if n == stop:
                return None
            seen.add(n)
            todo.extend(s for s in self.succ.get(n, ()) if s is not None)
        return seen

    def merge(self, branches: Iterable[str | None], stop: str | None) -> str | None:
        """The node where ``branches`` join again inside the region that ends at ``stop``, or None
        when they need no join (at most one of them goes on) or have no valid one."""
        if not self.acyclic:
            return None
        live = [b for b in dict.fromkeys(branches) if b is not None]
        if len(live) < 2 or any(b not in self.reach for b in live):
            return None
        # a join is where two branches or more meet; a branch that only leaves the control early
        # need not reach it (its walk then meets nothing after the join)
        seen: dict[str, int] = {}
        for b in live:
            for n in self.reach[b]:
                seen[n] = seen.get(n, 0) + 1
        common = [n for n, k in seen.items() if k > 1]
        for m in sorted(common, key=self.order.__getitem__):
            after = self.reach[m] - {m}
            walks = [self._walk(b, m, stop) for b in live]
            if all(w is not None and not (w & after) for w in walks):
                return m
        return None
