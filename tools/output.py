"""Where the developer tools write their results (--out): a plain file, written whole.

A path that is a symlink, a directory or anything but a regular file is refused before the (long) run
starts, so a mistyped or planted --out can neither redirect the write elsewhere nor clobber a directory;
the file is written to a temporary sibling and renamed over the target, so an interrupted run never leaves
half a result."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class OutputError(ValueError):
    pass


def checked(path: Path) -> Path:
    """`path` if it may be written: absent, or an existing regular file; never through a symlink."""
    for p in (path, *path.parents):
        if p.is_symlink():
            raise OutputError(f"--out {path}: {p} is a symbolic link; give a path without links")
    if path.exists() and not path.is_file():
        raise OutputError(f"--out {path}: exists and is not a regular file (a directory?); give a file path")
    return path


def write_text(path: Path, text: str) -> None:
    checked(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
