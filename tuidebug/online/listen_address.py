"""What a listen address means: which addresses a server bound to `host:port` answers on,
and how to say so.

Why a module of its own: the server reports the addresses it listens on and `tuidebug online`
warns who can reach an unauthenticated server, and the two must tell the same story about
a wildcard host. gRPC binds one (0.0.0.0, ::, [::] or "") as a single socket on [::],
dual-stack where the machine has IPv6 (it clears IPV6_V6ONLY), so 0.0.0.0 listens on every
IPv6 address too — a warning that said "every IPv4 address" would understate the exposure.
Only `socket` is imported, so the CLI can say this without loading gRPC.
"""

from __future__ import annotations

import socket

__all__ = ["WILDCARD_HOSTS", "bound_addresses", "format_address", "has_ipv6", "reachable_at"]

WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", ""})


def format_address(host: str, port: int) -> str:
    """`host:port`, an IPv6 host in brackets (as gRPC and a browser read it)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def has_ipv6() -> bool:
    """Whether this machine can bind an IPv6 socket (what gRPC tries first for a wildcard)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::", 0))
    except OSError:
        return False
    return True


def bound_addresses(host: str, port: int) -> tuple[str, ...]:
    """The addresses a server bound to `host:port` listens on."""
    if host not in WILDCARD_HOSTS:
        return (format_address(host, port),)
    if has_ipv6():
        return (f"0.0.0.0:{port}", f"[::]:{port}")
    return (f"0.0.0.0:{port}",)


def reachable_at(host: str, port: int) -> str:
    """Who can reach a server bound to `host:port`, in words (for the no-authentication
    warning): a wildcard host is every address of this machine, IPv6 included where gRPC
    binds it dual-stack."""
    if host not in WILDCARD_HOSTS:
        return format_address(host, port)
    if has_ipv6():
        also = " (0.0.0.0 listens on IPv6 too: gRPC binds it as [::])" if host == "0.0.0.0" else ""
        return f"port {port} on every IPv4 and IPv6 address of this machine{also}"
    return f"port {port} on every IPv4 address of this machine"
