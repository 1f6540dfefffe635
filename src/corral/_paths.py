"""Where corral keeps its data and reads its configuration.

`CORRAL_HOME` (default `$XDG_DATA_HOME/corral`, else `~/.local/share/corral`)
holds sessions and, later, the store. User configuration lives in
`$XDG_CONFIG_HOME/corral` (else `~/.config/corral`). Data directories are
created `0700`; files written there should be `0600`.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["config_home", "corral_home", "ensure_private_dir", "sessions_root"]


def corral_home() -> Path:
    """The data root: `$CORRAL_HOME`, else the XDG data directory's `corral`."""
    explicit = os.environ.get("CORRAL_HOME")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return (base / "corral").resolve()


def config_home() -> Path:
    """The user configuration directory: `$XDG_CONFIG_HOME/corral`, else `~/.config/corral`."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return (base / "corral").resolve()


def sessions_root() -> Path:
    """Where session files live: `<data root>/sessions`."""
    return corral_home() / "sessions"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` and its missing parents with mode `0700`; tighten `path` if it exists.

    Every directory this creates is `0700` whatever the umask (`mkdir -p`
    would give the parents the umask's mode). Parents that already exist are
    left as they are. Returns the path.
    """
    missing: list[Path] = []
    current = path
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue
        directory.chmod(0o700)
    if not path.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(path))
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path
