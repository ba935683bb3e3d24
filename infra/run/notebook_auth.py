"""A notebook run's password, made on the researcher's machine (security #73.16).

JupyterLab's default token is printed to the pod's log, which every submitter of the namespace reads (and Cloud
Logging keeps for whoever may read the project's logs); whoever may port-forward to the head could then use it.
Instead `submit --notebook` makes a random password here, gives JupyterLab only its salted hash
(`--PasswordIdentityProvider.hashed_password`: jupyter_server 2.x `auth/security.py` passwd_check, the
`algorithm:salt:hexdigest` form over hashlib; with a hashed password set no token is made, `auth/identity.py`
need_token), and keeps the password in the submitter's own config directory, mode 0600, for `notebook` to print.
The hash in the JobSet is of 144 random bits: reading it (any submitter of the namespace can) gives nothing to guess.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Optional

ALGORITHM = "sha256"


def new_password() -> str:
    return secrets.token_urlsafe(18)  # 144 bits


def hashed(password: str, salt: Optional[str] = None) -> str:
    """`sha256:<salt>:<hex>` as jupyter_server's passwd_check verifies it: hashlib over password + salt."""
    salt = salt if salt is not None else secrets.token_hex(6)
    digest = hashlib.new(ALGORITHM, password.encode("utf-8") + salt.encode("ascii")).hexdigest()
    return f"{ALGORITHM}:{salt}:{digest}"


def jupyter_flags(hashed_password: str) -> list[str]:
    """Password login only: no token made, no token login, no password change from the page."""
    return [f"--PasswordIdentityProvider.hashed_password={hashed_password}",
            "--PasswordIdentityProvider.password_required=True",
            "--PasswordIdentityProvider.allow_password_change=False"]


def store() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pathways" / "notebooks"


def _path(stack: str, namespace: str, run: str) -> Path:
    # the parts are a stack name, a namespace and a run name: DNS labels and stack names hold no '/'
    return store() / stack / namespace / run


def remember(stack: str, namespace: str, run: str, password: str) -> Path:
    """Write the password for `notebook` to print, readable by its owner only; never through a link."""
    path = _path(stack, namespace, run)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(password + "\n")
    os.chmod(path, 0o600)
    return path


def recall(stack: str, namespace: str, run: str) -> Optional[str]:
    path = _path(stack, namespace, run)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8") as f:
        return f.read().strip() or None
