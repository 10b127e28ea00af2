"""simple_switch_CLI's commands for simple_switch itself (its sswitch_CLI part): the egress queues'
depth and rate, the switch's clock, its ports. P4Runtime has no messages for these, so they go to
p4kit-switch's control service (p4kit/switch/control_service.py) on the same gRPC port.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from p4kit.cli.session import Session
from p4kit.cli.values import CliError


def _int(text: str, name: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise CliError(f"Bad format for {name}, expected integer") from None
    if v < 0:
        raise CliError(f"Bad format for {name}, expected integer")
    return v


class SwitchCommands:
    """Mixed into RuntimeShell, which provides the session `s` and `say`."""

    s: Session

    if TYPE_CHECKING:  # RuntimeShell's

        def say(self, text: str = "") -> None: ...

    def _queue_args(self, line: str, first: str, usage: str) -> dict[str, int]:
        try:
            words = shlex.split(line)
        except ValueError as e:
            raise CliError(str(e)) from None
        if not 1 <= len(words) <= 3:
            raise CliError(f"Invalid number of arguments; usage: {usage}")
        args = {first: _int(words[0], "nb_pkts" if first == "depth" else "rate_pps")}
        if len(words) > 1:
            args["port"] = _int(words[1], "egress_port")
        if len(words) > 2:
            args["priority"] = _int(words[2], "priority")
        return args

    def do_set_queue_depth(self, line: str) -> None:
        """set_queue_depth <nb_pkts> [<egress_port> [<priority>]]: depth of one / all egress queue(s)"""
        self.s.control(
            "set_queue_depth", **self._queue_args(line, "depth", self.do_set_queue_depth.__doc__ or "")
        )

    def do_set_queue_rate(self, line: str) -> None:
        """set_queue_rate <rate_pps> [<egress_port> [<priority>]]: rate of one / all egress queue(s)"""
        self.s.control(
            "set_queue_rate", **self._queue_args(line, "pps", self.do_set_queue_rate.__doc__ or "")
        )

    def do_get_time_elapsed(self, line: str) -> None:
        """get_time_elapsed: microseconds since the switch started"""
        self.say(str(self.s.control("get_time_elapsed_us")))

    def do_get_time_since_epoch(self, line: str) -> None:
        """get_time_since_epoch: microseconds since the switch clock's epoch"""
        self.say(str(self.s.control("get_time_since_epoch_us")))

    def do_show_ports(self, line: str) -> None:
        """show_ports: the ports connected to the switch"""
        ports = self.s.control("show_ports")
        assert isinstance(ports, list)
        self.say(f"{'port #':^10}{'iface name':^20}{'status':^10}extra info")
        self.say("=" * 50)
        for number, iface, up in ports:
            self.say(f"{number:^10}{iface:^20}{'UP' if up else 'DOWN':^10}")
