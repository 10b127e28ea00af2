"""simple_switch_CLI's commands about the switch rather than its tables: the egress queues' depth and
rate, the clock, the ports, custom CRC parameters, switch_info (P4Runtime has no messages for these,
so they go to p4kit-switch's control service, p4kit/switch/control_service.py, on the same gRPC port);
write_config_to_file (P4Runtime's GetForwardingPipelineConfig); and the commands p4kit cannot do,
each refused with its reason instead of "Unknown syntax".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from p4kit.cli.session import Session
from p4kit.cli.values import CliError, count, words

REFUSED = {
    "port_add": "ports are the interfaces given to p4kit-switch with -i when it starts",
    "port_remove": "ports are the interfaces given to p4kit-switch with -i when it starts",
    "load_new_config_file": "a new program goes in with P4Runtime's SetForwardingPipelineConfig, which "
    "needs its P4Info too (p4kit-p4c --p4runtime-files)",
    "swap_configs": "P4Runtime's SetForwardingPipelineConfig (VERIFY_AND_SAVE, then COMMIT) swaps programs",
    "reset_state": "it would leave P4Runtime's view of the switch stale; table_clear the tables, or push "
    "the pipeline again",
    "serialize_state": "p4kit-switch does not save its state",
    "mc_set_lag_membership": "p4kit-switch's replication engine has no LAGs (SimplePre)",
    "shell": "p4kit-cli runs no shell commands",
}


def _flag(text: str, name: str) -> bool:
    v = text.lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise CliError(f"Bad format for {name}, expected true or false")


class SwitchCommands:
    """Mixed into RuntimeShell, which provides the session `s` and `say`."""

    s: Session

    if TYPE_CHECKING:  # RuntimeShell's

        def say(self, text: str = "") -> None: ...

    def _queue_args(self, line: str, first: str, usage: str) -> dict[str, int]:
        parts = words(line)
        if not 1 <= len(parts) <= 3:
            raise CliError(f"Invalid number of arguments; usage: {usage}")
        args = {first: count(parts[0], "nb_pkts" if first == "depth" else "rate_pps")}
        if len(parts) > 1:
            args["port"] = count(parts[1], "egress_port")
        if len(parts) > 2:
            args["priority"] = count(parts[2], "priority")
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

    def do_switch_info(self, line: str) -> None:
        """switch_info: basic facts about the switch"""
        info = self.s.control("switch_info")
        assert isinstance(info, dict)
        width = 5 + max(len(k) for k in info)
        for key, value in info.items():
            self.say(f"{key:{width}}: {value}")

    def _set_crc(self, line: str, width: int) -> None:
        parts = words(line)
        usage = (
            f"set_crc{width}_parameters <name> <polynomial> <initial remainder> <final xor value> "
            "<reflect data?> <reflect remainder?>"
        )
        if len(parts) != 6:
            raise CliError(f"Invalid number of arguments; usage: {usage}")
        values = []
        for text, what in zip(
            parts[1:4], ("polynomial", "initial remainder", "final xor value"), strict=True
        ):
            v = count(text, what)
            if v >> width:
                raise CliError(f"{what} {text} does not fit {width} bits")
            values.append(v)
        self.s.control(
            "set_crc_parameters",
            name=parts[0],
            width=width,
            polynomial=values[0],
            initial=values[1],
            final_xor=values[2],
            reflect_data=_flag(parts[4], "reflect data"),
            reflect_remainder=_flag(parts[5], "reflect remainder"),
        )

    def do_set_crc16_parameters(self, line: str) -> None:
        """set_crc16_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>"""
        self._set_crc(line, 16)

    def do_set_crc32_parameters(self, line: str) -> None:
        """set_crc32_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>"""
        self._set_crc(line, 32)

    def do_write_config_to_file(self, line: str) -> None:
        """write_config_to_file <filename>: the JSON program the switch runs, into a file"""
        parts = words(line)
        if len(parts) != 1:
            raise CliError("Invalid number of arguments; usage: write_config_to_file <filename>")
        config = self.s.device_config()
        try:
            with open(parts[0], "wb") as f:
                f.write(config)
        except OSError as e:
            raise CliError(f"cannot write {parts[0]}: {e.strerror}") from None

    def refuse(self, command: str) -> None:
        raise CliError(f"{command} is not supported by p4kit: {REFUSED[command]}")

    def do_show_ports(self, line: str) -> None:
        """show_ports: the ports connected to the switch"""
        ports = self.s.control("show_ports")
        assert isinstance(ports, list)
        self.say(f"{'port #':^10}{'iface name':^20}{'status':^10}extra info")
        self.say("=" * 50)
        for number, iface, up in ports:
            self.say(f"{number:^10}{iface:^20}{'UP' if up else 'DOWN':^10}")


def _refusal(command: str) -> Callable[[SwitchCommands, str], None]:
    def do(self: SwitchCommands, line: str) -> None:
        self.refuse(command)

    do.__doc__ = f"{command}: not supported by p4kit ({REFUSED[command]})"
    return do


for _command in REFUSED:
    setattr(SwitchCommands, f"do_{_command}", _refusal(_command))
