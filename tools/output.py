"""Where the developer tools write their results (--out): a plain file, written whole.

The directory the path names is opened once (its own path may pass through symbolic links, as /tmp does on
macOS: that is the directory the user named) and everything after is done relative to that open directory:
the check that the target is absent or a regular file (a symbolic link or a directory there is refused, so a
mistyped or planted --out can neither redirect the write elsewhere nor clobber a directory), the temporary
sibling the result is written to, and its rename over the target. A directory swapped for another after the
check changes nothing (no check-then-write race), and an interrupted run never leaves half a result."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


class OutputError(ValueError):
    pass


def _open_directory(path: Path, create: bool) -> int:
    """A file descriptor of the directory `path` is in: resolved once (links on the way included), opened with
    O_NOFOLLOW so that what was resolved is what is opened, O_DIRECTORY so that it is a directory."""
    parent = Path(os.path.realpath(path.parent))
    if create:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"--out {path}: cannot create {parent}: {e.strerror}") from None
    try:
        return os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as e:
        raise OutputError(f"--out {path}: cannot open its directory {parent}: {e.strerror}") from None


def _check_target(path: Path, directory: int) -> None:
    try:
        info = os.stat(path.name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise OutputError(f"--out {path}: is a symbolic link; give the path of a file, not of a link")
    if not stat.S_ISREG(info.st_mode):
        raise OutputError(f"--out {path}: exists and is not a regular file (a directory?); give a file path")


def checked(path: Path) -> Path:
    """`path` if it may be written: absent, or an existing regular file, never a link (checked again when written)."""
    if not path.name or path.name in (".", ".."):
        raise OutputError(f"--out {path}: give a file path")
    try:
        directory = _open_directory(path, create=False)
    except FileNotFoundError:
        return path  # its directory does not exist yet: write_text creates it
    try:
        _check_target(path, directory)
    finally:
        os.close(directory)
    return path


def write_text(path: Path, text: str) -> None:
    checked(path)
    directory = _open_directory(path, create=True)
    try:
        _check_target(path, directory)
        tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=directory)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=directory)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(directory)
