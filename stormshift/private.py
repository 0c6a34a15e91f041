"""Secrets stay in their place: private files, and masks for everything shown.

The state's HMAC key guards against a tampered Redis becoming code execution,
and the embedded Redis's AOF/RDB hold the state itself: both are readable by
their owner only (files 0600, directories 0700), created that way (``os.open``
with a mode, not chmod after the fact) and tightened when found looser.
What commands show (``inspect``, ``--json``, summaries, logs) never carries a
key, password or token: config entries whose name says secret are masked, and
a URL's password is replaced by ``***`` (``redis://:***@host/0``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["MASK", "is_secret_key", "make_private", "mask_config", "mask_text", "mask_url",
           "private_dir", "private_umask", "write_private"]

MASK = "***"
# words of a config key's last dotted part that name a secret: state.hmac_key, db.password,
# api.token, aws.secret_access_key, sasl.credentials (not "tokenizer", not "key_field")
_SECRET_WORDS = {"password", "passwd", "pwd", "secret", "token", "credential", "credentials"}
_SECRET_ENDINGS = ("hmac_key", "hmackey", "api_key", "apikey", "private_key", "access_key",
                   "secret_key", "auth_key")
# scheme://user:password@ -> scheme://user:***@ (the user name is not a secret)
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/@:]*):[^\s/]*@")


def is_secret_key(key: str) -> bool:
    """Does a config key name a secret (matched on its last dotted part)?"""
    last = str(key).rsplit(".", 1)[-1].lower()
    words = re.split(r"[_\-]", last)
    return bool(_SECRET_WORDS.intersection(words)) or last.replace("-", "_").endswith(_SECRET_ENDINGS)


def mask_url(url: str) -> str:
    """``redis://:pw@host/0`` -> ``redis://:***@host/0``; a URL without one unchanged."""
    return _URL_PASSWORD.sub(rf"\1:{MASK}@", url)


def mask_text(text: str) -> str:
    """Every URL password in a free text (an error, a warning, a log line) masked."""
    return _URL_PASSWORD.sub(rf"\1:{MASK}@", text) if "@" in text else text


def mask_config(value: Any, key: str = "") -> Any:
    """A config (mapping, list or scalar) as it may be shown: secret entries' values
    replaced by ``***``, URL passwords masked, the rest as it is."""
    if key and is_secret_key(key) and value not in (None, "", {}, []):
        return MASK
    if isinstance(value, Mapping):
        return {k: mask_config(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_config(v) for v in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def make_private(path: str | os.PathLike[str]) -> None:
    """Tighten an existing file to 0600 / a directory to 0700 (a no-op when it already is,
    or when it belongs to someone else: that is the operator's call)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
    if stat.S_IMODE(st.st_mode) & ~want and st.st_uid == os.getuid():
        os.chmod(path, want)


def private_dir(path: str | os.PathLike[str]) -> str:
    """Create ``path`` (and parents) as 0700 when missing; tighten it when it exists."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    make_private(path)
    return os.fspath(path)


def write_private(path: str | os.PathLike[str], text: str) -> bool:
    """Create ``path`` with ``text``, readable by its owner only (0600 from the start,
    whatever the umask); False when it already exists (left as it is, mode tightened)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        make_private(path)
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return True


@contextmanager
def private_umask() -> Iterator[None]:
    """Files a child process started inside creates are 0600 (its umask is inherited):
    the embedded Redis's AOF and RDB, and the rewrites it makes later."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)
