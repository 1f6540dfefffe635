"""The suite-wide guard (tests/conftest.py) refuses public addresses and lets local ones through."""

from __future__ import annotations

import asyncio
import socket

import httpx2 as httpx
import pytest

from tests.conftest import NetworkGuard


def test_a_public_address_is_refused_and_recorded(network_guard: NetworkGuard) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("1.1.1.1", 443))
    assert network_guard.refused == ["1.1.1.1"]
    network_guard.refused.clear()  # this test tripped the guard on purpose


def test_an_sdk_request_to_a_provider_address_is_refused(network_guard: NetworkGuard) -> None:
    async def request() -> None:
        async with httpx.AsyncClient() as client:
            await client.get("https://1.1.1.1/v1/models", timeout=5)

    with pytest.raises(httpx.ConnectError):
        asyncio.run(request())
    assert network_guard.refused == ["1.1.1.1"]
    network_guard.refused.clear()


def test_loopback_is_allowed(network_guard: NetworkGuard) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    assert network_guard.refused == []
