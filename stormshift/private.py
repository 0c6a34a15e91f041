"""Secrets stay in their place: private files, and masks for everything shown.

The state's HMAC key guards against a tampered Redis becoming code execution,
and the embedded Redis's AOF/RDB hold the state itself: both are readable by
their owner only (files 0600, directories 0700), created that way (``os.open``
with a mode, not chmod after the fact) and tightened when found looser.
What commands show (``inspect``, ``--json``, summaries, logs, errors) never
carries a key, password or token: config entries whose name says secret are
masked, a URL's password is replaced by ``***`` (``redis://:***@host/0``), and
the values of the secret entries a command was given (``hide_secrets``) are
replaced wherever they turn up in a shown text.

Which config keys name a secret -- the one rule (``is_secret_key``; the README
and ``submit`` point here). Case-insensitive, on the key's dotted parts, each cut
into words at ``_``, ``-`` and camelCase humps (``hmacKey`` -> hmac, key):

1. any part is ``sasl`` (``kafka.sasl.jaas.config``, ``sasl.username``): Kafka's
   SASL settings carry credentials, whatever their last part is called;
2. the last part contains ``password``, ``passwd`` or ``secret``
   (``db.password``, ``redisPassword``, ``aws.secret_access_key``);
3. the last part has a word ``pwd``, ``passphrase``, ``token(s)``,
   ``credential(s)``, ``apikey`` or ``hmackey`` (``api.token``,
   ``accessToken``) -- a whole word: ``nlp.tokenizer`` is not a secret;
4. the last part's last word is ``key`` or ``keys`` after another word
   (``state.hmac_key``, ``api-key``, ``privateKey``): ``adclicks.key_field``,
   ``keyed`` and a bare ``key`` (a field name, as in ``shadow.results``) are not.

The rule errs on the side of masking (``partition_key`` is masked too): a mask
changes only what is shown, and for ``submit`` how the entry is shipped.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["MASK", "hide_secrets", "is_secret_key", "is_secret_option", "make_private",
           "mask_config", "mask_option", "mask_text", "mask_url", "private_dir", "private_umask",
           "write_private"]

MASK = "***"
_SUBSTRINGS = ("password", "passwd", "secret")  # rule 2 of the module doc
_WORDS = {"pwd", "passphrase", "token", "tokens", "credential", "credentials", "apikey",
          "hmackey"}  # rule 3
_KEY_WORDS = {"key", "keys"}  # rule 4
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-\s]+")
# scheme://user:password@ -> scheme://user:***@ (the user name is not a secret)
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/@:]*):[^\s/]*@")
MIN_HIDDEN_CHARS = 6
"""Shorter secret values (and numbers) are masked where their entry is shown, but not
searched for in free text: every "pw" or "3600" of every line replaced would make output
unreadable."""
_hidden: set[str] = set()


def _words(part: str) -> list[str]:
    return [w.lower() for w in _HUMP.split(part) if w]


def is_secret_key(key: str) -> bool:
    """Does a config key name a secret? The rule is the module doc's, numbered as there."""
    parts = str(key).split(".")
    if any(p.lower() == "sasl" for p in parts):  # 1.
        return True
    last = parts[-1]
    if any(s in last.lower() for s in _SUBSTRINGS):  # 2.
        return True
    words = _words(last)
    if _WORDS.intersection(words):  # 3.
        return True
    return len(words) > 1 and words[-1] in _KEY_WORDS  # 4.


def is_secret_option(key: str, value: Any) -> bool:
    """A ``-o KEY=VALUE`` that must not be shown nor put on a command line: its key names a
    secret, or its value holds one (a URL with a password)."""
    return is_secret_key(key) or mask_text(str(value)) != str(value)


def mask_option(text: str) -> str:
    """A ``KEY=VALUE`` text as it may be shown: ``state.hmac_key=***``; other entries with
    URL passwords (and known secret values) masked."""
    key, sep, _value = str(text).partition("=")
    if sep and is_secret_key(key.strip()):
        return f"{key}={MASK}"
    if not sep or not key.strip():  # no key to judge the value by: none of it shown
        return MASK if text else text
    return mask_text(text)


def hide_secrets(config: Mapping[str, Any]) -> None:
    """From now on (in this process) mask the values of ``config``'s secret entries in every
    text shown (``mask_text``): an error, a log line or a summary that happens to echo one.
    Strings of ``MIN_HIDDEN_CHARS`` or more only (see there)."""
    for key, value in config.items():
        if is_secret_key(str(key)) and isinstance(value, str) and len(value) >= MIN_HIDDEN_CHARS:
            _hidden.add(value)
            _hidden.add(json.dumps(value)[1:-1])  # as it appears inside a JSON string


def mask_url(url: str) -> str:
    """``redis://:pw@host/0`` -> ``redis://:***@host/0``; a URL without one unchanged.

    The user info ends at the URL's LAST ``@`` (a password may hold ``@``, ``/`` or ``:``),
    so a malformed URL is over-masked rather than shown."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:  # no scheme (a malformed URL): what comes before an @ is still user info
        scheme, rest = "", str(url)
    at = rest.rfind("@")
    if at < 0:
        return mask_text(str(url))
    user, colon, _password = rest[:at].partition(":")
    return f"{scheme}{sep}{user + ':' if colon else ''}{MASK}@{rest[at + 1:]}"


def mask_text(text: str) -> str:
    """Every URL password in a free text (an error, a warning, a log line) masked, and
    every secret value ``hide_secrets`` was given."""
    if "@" in text:
        text = _URL_PASSWORD.sub(rf"\1:{MASK}@", text)
    for value in sorted(_hidden, key=len, reverse=True) if _hidden else ():
        if value in text:
            text = text.replace(value, MASK)
    return text


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
