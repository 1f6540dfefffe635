"""Suite-wide guards.

No test reaches a real provider: every socket connection to a public (global) IP address is refused
in the test process, and the test that tried fails at teardown naming the address — even when the code
under test swallowed the connection error. Loopback, private and link-local addresses (the local fake
servers, a local Ray cluster) and Unix sockets stay allowed. Subprocesses are not covered; they get
their providers from the settings the tests write, which point at 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class NetworkGuard:
    """The public addresses this test tried to reach (each refused)."""

    refused: list[str] = field(default_factory=list)

    def check(self, family: int, address: Any) -> None:
        if family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
            return
        host = str(address[0])
        try:
            ip = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return
        if ip.is_global:
            self.refused.append(host)
            raise ConnectionRefusedError(f"tests may not reach the network: connection to {host} refused")


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        guard.check(self.family, address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        guard.check(self.family, address)
        return connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    yield guard
    assert guard.refused == [], f"the test tried to reach a real network address: {guard.refused}"


@pytest.fixture(autouse=True)
def fresh_rate_limiter() -> Iterator[None]:
    """Each test starts with the process's shared rate limiter empty: a fake endpoint's port may be
    reused by a later test, which must not inherit its windows or lowered concurrency."""
    from corral.llm import HostRateLimiter, current_rate_limiter

    limiter = current_rate_limiter()
    if isinstance(limiter, HostRateLimiter):
        limiter.reset()
    yield


@pytest.fixture(autouse=True)
def no_user_skills(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own Claude Code and Codex skills (`~/.claude/skills`, `~/.codex/skills`) never
    reach an agent under test: both homes point at an empty directory (a test that wants skills
    writes them and points the variables there)."""
    empty = tmp_path_factory.getbasetemp() / "no-user-skills"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(empty / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(empty / "codex"))
