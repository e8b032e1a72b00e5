"""Filter 4: the host ports a pod asks for must be free on the node.

As kube-scheduler's NodePorts: two ports conflict when protocol and port are
equal and either address is ``0.0.0.0`` or both addresses are equal.
:class:`PortSet` counts the ports in use on one node, so that a pod leaving
frees only its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Final

from coscheduler.api.pod import HostPort

NAME: Final = "NodePorts"
REASON: Final = "node(s) didn't have free ports for the requested pod ports"
ANY_ADDRESS: Final = "0.0.0.0"


class PortSet:
    """Host ports in use on a node, counted per (protocol, port) and address."""

    __slots__ = ("_used",)

    def __init__(self) -> None:
        self._used: dict[tuple[str, int], Counter[str]] = {}

    def __bool__(self) -> bool:
        return bool(self._used)

    def add(self, ports: Iterable[HostPort], times: int = 1) -> None:
        for port in ports:
            self._used.setdefault((port.protocol, port.port), Counter())[port.ip] += times

    def remove(self, ports: Iterable[HostPort], times: int = 1) -> None:
        for port in ports:
            where = (port.protocol, port.port)
            addresses = self._used.get(where)
            if addresses is None:
                continue
            addresses[port.ip] -= times
            if addresses[port.ip] <= 0:
                del addresses[port.ip]
            if not addresses:
                del self._used[where]

    def conflicts(self, ports: Iterable[HostPort]) -> bool:
        """Whether any of ``ports`` collides with a port in use."""
        for port in ports:
            addresses = self._used.get((port.protocol, port.port))
            if not addresses:
                continue
            if port.ip == ANY_ADDRESS or port.ip in addresses or ANY_ADDRESS in addresses:
                return True
        return False
