"""`benchmarks/bench_peer.py`'s fake model server: what it must not add to the figures it serves."""

from __future__ import annotations

import importlib.util
import socket
import struct
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests._waits import eventually

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

SWARM = 100
"""The largest swarm the benchmark runs by default (`--n 1,20,50,100`)."""

_TCP_ESTABLISHED = 1
"""`tcpi_state` (the first byte of Linux's `struct tcp_info`) of a connection whose handshake is done."""


@pytest.fixture
def bench_peer(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script as a module (it puts `benchmarks/` on `sys.path` for `_common`: undone after)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    spec = importlib.util.spec_from_file_location("bench_peer", BENCHMARKS / "bench_peer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_peer", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _handshake_done(client: socket.socket) -> bool:
    info = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    return bool(struct.unpack_from("B", info)[0] == _TCP_ESTABLISHED)


@pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="reads connection states from Linux's TCP_INFO")
async def test_a_swarm_connecting_at_once_has_no_syn_dropped(bench_peer: ModuleType) -> None:
    """Every member of a swarm opens its connection at the same moment. The server's listen backlog
    must hold them all while its accept thread has not run yet (it does not run at all here): a
    connection beyond the backlog has its SYN dropped and resent by the kernel 1 s later, then 2 s —
    the idle wait some N=20 runs had. No handshake may be left waiting for the server."""
    server = bench_peer._Server(("127.0.0.1", 0), bench_peer._Handler)  # listening, never accepting
    clients: list[socket.socket] = []
    try:
        for _ in range(SWARM):
            client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            clients.append(client)
            client.setblocking(False)
            client.connect_ex(server.server_address)
        await eventually(lambda: all(_handshake_done(c) for c in clients))
        assert server.listen_drops() == 0
    finally:
        for client in clients:
            client.close()
        server.server_close()
