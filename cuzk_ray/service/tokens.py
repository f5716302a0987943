"""The service's bearer token: ``service.token``, or generated once into ``service.token_file``
(default ``<cache_dir>/service/token``, mode 0600) and read from there on later starts and by
the batch job's client mode (``jobs/prove.py service.url=...``) on the same machine."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


def token_path(cfg: dict) -> Path:
    s = cfg["service"]
    if s.get("token_file"):
        return Path(os.path.expanduser(s["token_file"]))
    return Path(os.path.expanduser(cfg["cache_dir"])) / "service" / "token"


def read_token(path: Path) -> str:
    """The token in ``path``, refused when others may read it (it must be 0600 or tighter)."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ValueError(f"{path}: mode {mode:o}, others may read the token: chmod 600 {path}")
    token = path.read_text().strip()
    if not token:
        raise ValueError(f"{path}: empty token file")
    return token


def service_token(cfg: dict) -> tuple[str, Path | None]:
    """(token, the file it is in: None when given as service.token)."""
    if cfg["service"].get("token"):
        return str(cfg["service"]["token"]), None
    path = token_path(cfg)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another start made it just now
            return read_token(path), path
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    return read_token(path), path
