"""The CLI's profiles (``config.toml`` and ``profiles/<name>/``), read-only:
``heimdall login`` and ``heimdall dev`` write them."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import NamedTuple

from . import _native
from ._errors import HeimdallError


class Profile(NamedTuple):
    name: str
    api_url: str
    token: str
    ca_pem: str | None
    directory: Path

    def __repr__(self) -> str:
        return f"Profile(name={self.name!r}, api_url={self.api_url!r}, token=<redacted>)"


def config_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """``config_dir``, else ``$HEIMDALL_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/heimdall``
    (``~/.config/heimdall``): where the CLI keeps its profiles."""
    if directory is not None:
        return Path(directory)
    env = os.environ.get("HEIMDALL_CONFIG_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "heimdall"


_config_dir = config_dir


def load_profile(profile: str | None = None, *, config_dir: str | os.PathLike[str] | None = None) -> Profile:
    """The profile ``profile`` (else ``$HEIMDALL_PROFILE``, else the current one)."""
    directory = _config_dir(config_dir)
    path = directory / "config.toml"
    try:
        with open(path, "rb") as f:
            config = tomllib.load(f)
    except FileNotFoundError:
        raise HeimdallError("invalid", None, f"{path} does not exist: run `heimdall login` or `heimdall dev`") from None
    except (OSError, tomllib.TOMLDecodeError) as err:
        # The parser's message names a line and column, never the text.
        raise HeimdallError("invalid", None, f"cannot read {path}: {type(err).__name__}") from None
    name = profile or os.environ.get("HEIMDALL_PROFILE") or config.get("current_profile")
    if not name:
        raise HeimdallError("invalid", None, f"{path} has no current profile: name one")
    found = config.get("profiles", {}).get(name)
    if not isinstance(found, dict) or "api_url" not in found or "token" not in found:
        raise HeimdallError("invalid", None, f"{path} has no profile {name!r}")
    return Profile(name, found["api_url"], found["token"], found.get("ca"), directory / "profiles" / name)


def load_identity(profile: str | None = None, *, config_dir: str | os.PathLike[str] | None = None) -> _native.Identity:
    """The profile's client certificate, key and CA (``profiles/<name>/client.pem``,
    ``client.key``, ``ca.pem``), for reading values from an Agent as that person."""
    found = load_profile(profile, config_dir=config_dir)
    texts = []
    for file in ("client.pem", "client.key", "ca.pem"):
        try:
            texts.append((found.directory / file).read_text())
        except OSError:
            raise HeimdallError(
                "invalid", None, f"{found.directory / file} is missing: run `heimdall login` (or `heimdall dev`) again"
            ) from None
    return _native.Identity(*texts)
