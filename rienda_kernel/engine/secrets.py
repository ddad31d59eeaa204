"""Secrets: which values are secret, and keeping them out of every output.

**Which names hold secrets** (:func:`is_secret_name`, one rule for environment variables
and configuration keys alike). A name is cut into words at ``_``, ``-``, ``.`` and at
case changes (``apiKey`` is ``api key``). It holds a secret when its last word is KEY,
APIKEY, TOKEN, SECRET(S), CREDENTIAL(S), AUTH, AUTHORIZATION or PASSPHRASE, or when any
word contains PASSWORD or PASSWD; a name whose last word is ENV never does (it holds the
*name* of a variable). So ``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
``DB_PASSWORD``, ``apiKey`` hold secrets; ``GIT_AUTHOR_NAME``, ``max_tokens``,
``api_key_env``, ``AWS_ACCESS_KEY_ID`` and ``PWD`` do not.

**The secrets** are the values of such environment variables that are at least
:data:`MIN_SECRET_LENGTH` characters long (shorter values, ``1`` or ``true``, are too
common to replace wherever they occur), read at each use so that a key set later (a
notebook cell) is covered from then on; the password in the user info of a URL held by any
variable (``DATABASE_URL=postgres://app:PASSWORD@db/x``), whatever its name, when it is as
long; plus every value given to :func:`remember` (an ``Authorization`` header a tool sent,
which a server may echo back).

**Scrubbing** (:func:`scrub`) replaces each secret inside any string with
:data:`REDACTED`, and the whole string value of a credential field (``Authorization``,
``Proxy-Authorization``, ``X-Api-Key``, ``Api-Key``, any case); it also makes every string
valid Unicode (a lone surrogate becomes U+FFFD, :func:`.common.text.repair`), since every
output encodes it: a terminal, a session file, a notebook. Every output uses it: the
session store writes scrubbed lines, and the engine scrubs each event once where it
hands it to a front end (``ui.ScrubbingUI``), so ``--json`` lines, the terminal and
notebook cells never show a secret. :class:`StreamGuard` keeps a secret that arrives in two
pieces of a stream from slipping through, piece by piece.

**A URL** in a message (:func:`scrub_url`: a provider's endpoint) loses, besides the
secrets, the value of each query parameter whose name holds a secret (``?key=...``,
``&access_token=...``, by :func:`is_secret_name`) and the password in its user info.

**Configuration** shown to extensions (``ctx.config``) goes through
:func:`redact_config`: the value of every key whose name holds a secret is replaced, and so
every value of a ``headers`` mapping (what an MCP server is sent: ``Authorization``-like
names or not, headers are its credentials). An ``env`` mapping (what an MCP server is
started with) is an environment, and :func:`secrets_in` holds it to the process
environment's rule: a secret-named variable's value is redacted, the password in a URL a
variable holds is; a path, a mode or a greeting is shown as it is.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit, urlunsplit

from .common.json_value import JSON, JSONObject
from .common.text import repair

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Scrubber",
    "StreamGuard",
    "is_credential_field",
    "is_secret_name",
    "redact_config",
    "remember",
    "scrub",
    "scrub_text",
    "scrub_url",
    "secrets_in",
]

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z]*|[a-z]+|[0-9]+")
_SECRET_LAST_WORDS = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "SECRETS", "CREDENTIAL", "CREDENTIALS",
                                "AUTH", "AUTHORIZATION", "PASSPHRASE"})
_CREDENTIAL_FIELDS = frozenset({"authorization", "proxyauthorization", "apikey", "xapikey"})
_CREDENTIAL_MAPPINGS = frozenset({"headers"})  # redact_config: every value of these
_ENVIRONMENTS = frozenset({"env"})  # redact_config: as the process environment (secrets_in)

_remembered_lock = threading.Lock()


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a variable or key called ``name`` holds a secret (the rule above)."""
    words = [word.upper() for word in _WORDS.findall(name)]
    if not words or words[-1] == "ENV":
        return False
    return words[-1] in _SECRET_LAST_WORDS or any("PASSWORD" in word or "PASSWD" in word for word in words)


def is_credential_field(name: str) -> bool:
    """Whether a field (a header) called ``name`` carries a credential as its whole value."""
    return name.lower().replace("-", "").replace("_", "") in _CREDENTIAL_FIELDS


def remember(value: str) -> None:
    """Treat ``value`` as a secret in this process from now on (if it is long enough).

    For a credential sent at run time, e.g. an ``Authorization`` header: the value itself
    and, for ``Bearer xyz``-like values, the credential after the scheme.
    """
    if not isinstance(value, str):
        return
    found = {item for item in (value, value.partition(" ")[2].strip()) if len(item) >= MIN_SECRET_LENGTH}
    with _remembered_lock:
        if not found <= set(_Current.remembered):
            _Current.remembered = tuple(set(_Current.remembered) | found)


class Scrubber:
    """Removes secrets from anything about to be output.

    With ``environ`` given, the environment's secrets are read from it once; by default
    they are read from ``os.environ`` at each use. Remembered secrets always count.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._fixed = None if environ is None else secrets_in(environ)
        self._sorted: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] = ((), (), ())

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secrets now, longest first (a secret that contains another is replaced whole)."""
        environment = self._fixed if self._fixed is not None else _environment_secrets()
        remembered = _Current.remembered
        if (environment, remembered) != self._sorted[:2]:  # sorted again only when they change
            self._sorted = (environment, remembered,
                            tuple(sorted(set(environment) | set(remembered), key=len, reverse=True)))
        return self._sorted[2]

    def scrub(self, obj: JSON) -> JSON:
        """``obj`` (JSON-like: dicts, lists, tuples, scalars) with every secret inside any
        string (keys included) replaced by :data:`REDACTED`, and the string value of any
        credential field replaced whole. The input is never modified; what has nothing to
        replace is returned as is (the same object)."""
        return _scrub(obj, self.secrets)

    def scrub_text(self, text: str, also: Iterable[str] = ()) -> str:
        """``text`` without the secrets and without each non-empty string in ``also``."""
        extra = tuple(sorted((item for item in also if item), key=len, reverse=True))
        return _scrub_text(_scrub_text(text, extra), self.secrets)


_DEFAULT = Scrubber()


def scrub(obj: JSON) -> JSON:
    """:meth:`Scrubber.scrub` with the process's secrets (``os.environ`` as it is now)."""
    return _DEFAULT.scrub(obj)


def scrub_text(text: str, also: Iterable[str] = ()) -> str:
    """:meth:`Scrubber.scrub_text` with the process's secrets."""
    return _DEFAULT.scrub_text(text, also)


def scrub_url(url: str) -> str:
    """``url`` fit for a message: the value of each query parameter whose name holds a
    secret (:func:`is_secret_name`) and the password of its user info are :data:`REDACTED`,
    then :func:`scrub_text`. A URL it cannot take apart is only scrubbed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub_text(url)
    user, at, host = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in user:
        netloc = f"{user.partition(':')[0]}:{REDACTED}@{host}"
    pieces = []
    for piece in parts.query.split("&") if parts.query else ():
        name, equals, value = piece.partition("=")
        pieces.append(f"{name}={REDACTED}" if equals and value and is_secret_name(unquote(name)) else piece)
    return scrub_text(urlunsplit(parts._replace(netloc=netloc, query="&".join(pieces))))


def secrets_in(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The secrets among the variables of an environment ``environ`` by the process
    environment's rule (see above): the value of each secret-named variable and the
    password of each URL any variable holds, when :data:`MIN_SECRET_LENGTH` long."""
    items = ((os.fsencode(name), os.fsencode(value)) for name, value in environ.items()
             if isinstance(name, str) and isinstance(value, str))
    return _secrets_of(items)


def redact_config(config: JSON) -> JSON:
    """A copy of ``config`` in which the value of every key whose name holds a secret
    (:func:`is_secret_name`), and every value of a ``headers`` mapping, is :data:`REDACTED`;
    in an ``env`` mapping, the secrets :func:`secrets_in` finds too (a URL's password);
    ``None`` values are kept."""
    if isinstance(config, dict):
        return {key: REDACTED if isinstance(key, str) and is_secret_name(key) and value is not None
                else {name: REDACTED for name in value} if key in _CREDENTIAL_MAPPINGS and isinstance(value, dict)
                else _redact_environment(value) if key in _ENVIRONMENTS and isinstance(value, dict)
                else redact_config(value) for key, value in config.items()}
    if isinstance(config, list):
        return [redact_config(item) for item in config]
    return config


def _redact_environment(environ: JSONObject) -> JSONObject:
    found = secrets_in(environ)
    return {name: value if not isinstance(value, str) else
            REDACTED if isinstance(name, str) and is_secret_name(name) else _scrub_text(value, found)
            for name, value in environ.items()}


class StreamGuard:
    """Re-cuts a text that arrives in pieces (a model's stream, a command's output) so that
    no secret is split across two pieces, where scrubbing each piece would miss it.

    :meth:`feed` returns what may be shown now: all of it except a tail that could be the
    beginning of a secret, held until the next piece shows whether it is one.
    :meth:`flush` returns what is held. Nothing is replaced here: the pieces are scrubbed
    on their way out like any other output.
    """

    def __init__(self, scrubber: Scrubber | None = None) -> None:
        self._scrubber = scrubber or _DEFAULT
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        keep = _secret_start(text, self._scrubber.secrets)
        self._held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def _secret_start(text: str, secrets: tuple[str, ...]) -> int:
    """The length of the longest tail of ``text`` that a secret starts with (but is not)."""
    longest = 0
    for secret in secrets:
        index = text.find(secret[0], max(0, len(text) - len(secret) + 1))
        while index != -1:
            if secret.startswith(text[index:]):
                longest = max(longest, len(text) - index)
                break
            index = text.find(secret[0], index + 1)
    return longest


class _Current:
    """The remembered secrets as a tuple, replaced (never changed) by :func:`remember`."""

    remembered: tuple[str, ...] = ()


_URL_PASSWORD = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:([^@\s/]+)@")


def _secrets_of(items: Iterable[tuple[bytes, bytes]]) -> tuple[str, ...]:
    """The secrets among environment ``(name, value)`` pairs: whole values of secret names,
    and URL passwords in any value."""
    found = []
    for name, value in items:
        if len(value) < MIN_SECRET_LENGTH:
            continue
        if _is_secret_name_bytes(name):
            found.append(os.fsdecode(value))
        elif b"://" in value:
            found += [os.fsdecode(password) for password in _URL_PASSWORD.findall(value)
                      if len(password) >= MIN_SECRET_LENGTH]
    return tuple(found)


def _environment_secrets() -> tuple[str, ...]:
    """:func:`secrets_in` of ``os.environ`` as it is now. This runs for every event, so it
    reads the mapping's own dict of bytes when there is one (CPython's ``_data``, faster
    than iterating the mapping), decodes only the values that are secrets, and reuses the
    last answer while that dict equals the copy it was computed from (a comparison in C)."""
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return _secrets_of(os.environb.items())
    seen, found = _EnvironmentSeen.last
    if raw != seen:
        seen = dict(raw)
        found = _secrets_of(seen.items())
        _EnvironmentSeen.last = (seen, found)
    return found


class _EnvironmentSeen:
    """The environment (a copy) and its secrets, as :func:`_environment_secrets` last found
    them; replaced whole, never changed."""

    last: tuple[dict[bytes, bytes], tuple[str, ...]] = ({}, ())


@functools.lru_cache(maxsize=4096)
def _is_secret_name_bytes(name: bytes) -> bool:
    return is_secret_name(os.fsdecode(name))


def _scrub(obj: JSON, secrets: tuple[str, ...]) -> JSON:
    if isinstance(obj, str):
        return _scrub_text(obj, secrets)
    if isinstance(obj, dict):
        clean = {_scrub(key, secrets): (REDACTED if isinstance(value, str) and isinstance(key, str)
                                        and is_credential_field(key) else _scrub(value, secrets))
                 for key, value in obj.items()}
        return obj if all(k is o and clean[k] is obj[o] for k, o in zip(clean, obj)) else clean
    if isinstance(obj, (list, tuple)):
        items = [_scrub(item, secrets) for item in obj]
        return obj if all(a is b for a, b in zip(items, obj)) else type(obj)(items)
    return obj


def _scrub_text(text: str, secrets: tuple[str, ...]) -> str:
    text = repair(text)  # every output is encoded: no lone surrogate may reach one
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
