"""Which addresses ``web_fetch`` may reach, and connections pinned to the address checked.

A URL's host is resolved, and EVERY address it resolves to must be public (not private,
loopback, link-local, multicast, reserved or unspecified) unless the settings allow it. The
connection then goes to the address that was checked, never to a second lookup, so a DNS
answer that changes between the check and the connect (DNS rebinding) cannot reach an inside
address: :class:`PinnedBackend` is the httpcore network backend that connects only to pinned
addresses (TLS still verifies the certificate against the host name).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import httpcore

from zpi_host.errors import ZpiError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]


class AddressRefused(ZpiError):
    """A host that resolves to an address fetches may not reach, or cannot be resolved."""


def parse_networks(values: Iterable[str], where: str) -> tuple[Network, ...]:
    """The ``allowed_networks`` setting as networks; a bad entry is a :class:`ZpiError` naming
    the setting and the entry."""
    out = []
    for i, value in enumerate(values):
        try:
            out.append(ipaddress.ip_network(value, strict=False))
        except ValueError as exc:
            raise ZpiError(f"setting {where}[{i}] {value!r} is not a network in CIDR form "
                           f"(such as 10.1.2.0/24): {exc}") from None
    return tuple(out)


def why_not_public(address: Address) -> str | None:
    """Why ``address`` is not a public address (``"loopback"`` ...), or None when it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return why_not_public(address.ipv4_mapped)
    for kind in ("loopback", "link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    if not address.is_global:
        return "not global"
    return None


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """Every address ``host`` resolves to (the system resolver, off the event loop)."""
    import anyio

    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressGuard:
    """Checks hosts for a fetch: resolves, checks every address, and gives the one to
    connect to."""

    def __init__(self, *, allow_private: bool, allowed: Sequence[Network] = (),
                 resolver: Resolver = system_resolver) -> None:
        self.allow_private = allow_private
        self.allowed = tuple(allowed)
        self.resolver = resolver

    def refusal(self, address: Address) -> str | None:
        """Why a fetch may not reach ``address``, or None."""
        why = why_not_public(address)
        if why is None or self.allow_private:
            return None
        if any(address in net for net in self.allowed if net.version == address.version):
            return None
        return why

    async def _addresses(self, host: str, literal: str, port: int) -> list[Address]:
        try:
            return [ipaddress.ip_address(literal)]
        except ValueError:
            pass
        try:
            found = await self.resolver(host, port)
        except OSError as exc:
            raise AddressRefused(f"the host {host!r} could not be resolved: {exc}") from None
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in found]
        if not addresses:
            raise AddressRefused(f"the host {host!r} resolves to no address")
        return addresses

    async def check(self, host: str, port: int) -> str:
        """The address to connect to for ``host``; raises :class:`AddressRefused` when the host
        cannot be resolved or any of its addresses is refused."""
        literal = host[1:-1] if host.startswith("[") else host
        addresses = await self._addresses(host, literal, port)
        for address in addresses:
            why = self.refusal(address)
            if why is not None:
                shown = "" if str(address) == literal else f" (it resolves to {address})"
                raise AddressRefused(
                    f"refused to fetch from {host}{shown}: a {why} address. Fetches reach "
                    "public addresses only; to allow private ones set "
                    "plugins.builtins.web.allow_private_addresses to true, or list the "
                    "network in plugins.builtins.web.allowed_networks")
        return str(addresses[0])


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to the address checked for each host (``pins``: host -> address)."""

    def __init__(self) -> None:
        self.pins: dict[str, str] = {}
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        address = self.pins.get(host)
        if address is None:
            raise httpcore.ConnectError(f"{host} was not checked before connecting")
        return await self._inner.connect_tcp(address, port, timeout=timeout,
                                             local_address=local_address,
                                             socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("fetches do not use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
