"""Rienda's one error hierarchy.

    RiendaError                 every error Rienda raises on purpose
     ├── ArgumentsError         a model's tool arguments do not fit the tool (names the field)
     ├── ConfigError            a malformed configuration or agent file (names file and line)
     │    └── SessionError      a session that does not exist or cannot be read (names it)
     │         └── SessionBusy  another process (or conversation) is writing that session
     ├── ExtensionError         a tool or hook file that cannot be used (names file and line)
     ├── Interrupted            the invocation or run was stopped from another thread
     │    └── HookStopped       ...while a hook was running (names the hook, its point, the call)
     ├── PayloadError           a payload that is not what a hook point receives (names the field)
     ├── ProviderError          a model provider failed; says what the server sent
     │    ├── AnswerCutOff      an answer stopped at a length limit (names what to raise)
     │    ├── ContextOverflow   the request does not fit the model's context window
     │    └── NotInRecording    a replay-mode recording does not hold a request (names the difference)
     ├── SessionWriteError      a session file could not be written (a full disk...)
     └── SandboxError           JavaScript failed inside an invocation
          ├── ScriptError       the script threw; carries the JS error's name and location
          └── OutOfMemory       an invocation ran out of memory (its isolate or its worker)

Foreign errors (mini-racer's, httpx's, OSError) are mapped to the most specific type here
with ``raise ... from exc`` at the boundary where they enter the engine. ``from None`` only
where hiding the cause is the point, and a comment beside it says why (a cause quoting a
secret before redaction, a RecursionError's thousands of frames, a lookup table's
KeyError); ``tests/test_layout.py`` holds the engine to it.
"""

from __future__ import annotations

__all__ = [
    "AnswerCutOff",
    "ArgumentsError",
    "ConfigError",
    "ContextOverflow",
    "ExtensionError",
    "HookStopped",
    "Interrupted",
    "NotInRecording",
    "OutOfMemory",
    "PayloadError",
    "ProviderError",
    "RiendaError",
    "SandboxError",
    "ScriptError",
    "SessionBusy",
    "SessionError",
    "SessionWriteError",
]


class RiendaError(Exception):
    """Base of every error Rienda raises on purpose; its message is for a person."""


class ArgumentsError(RiendaError):
    """A tool call's arguments are not JSON, not an object, or do not match ``parameters``."""


class ConfigError(RiendaError):
    """A configuration or agent file is malformed; the message names the file and line."""


class SessionError(ConfigError):
    """A session that does not exist, already exists, or whose file cannot be used.

    The message names the session id and directory, or the file and line at fault.
    """


class SessionBusy(SessionError):
    """The session is being written by another run (one writer per session at a time).

    The message names the session, its file and, where the system tells, the pid of the
    process holding it.
    """


class SessionWriteError(RiendaError):
    """A line could not be appended to a session file (a full disk, a file-size limit).

    The message names the file and the system's reason; the file keeps every complete
    line written before.
    """


class ExtensionError(RiendaError):
    """A tool or hook file cannot be used.

    ``path`` is the file at fault and ``line`` the 1-based line where known.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


class Interrupted(RiendaError):
    """The work was stopped from another thread before it finished."""


class HookStopped(Interrupted):
    """The run was stopped while hook ``hook`` was running at ``point`` (for the tool call
    ``call_id`` at a call's point), ``seconds`` after it started; the message says so."""

    def __init__(self, hook: str, point: str, seconds: float, call_id: str | None = None) -> None:
        super().__init__(f"stopped while hook {hook} was running ({point}), after {seconds:.1f} s")
        self.hook, self.point, self.seconds, self.call_id = hook, point, seconds, call_id

    def call_result(self) -> str:
        """The result the stopped call gets: what ran, and what became of the tool."""
        ran = f"interrupted while hook {self.hook} was running ({self.point}, {self.seconds:.1f} s)"
        if self.point == "beforeToolExecute":
            return f"{ran}; the tool never ran"
        return f"{ran} on the tool's result; that result was not kept"


class PayloadError(RiendaError):
    """A payload given to one hook point (``rienda hook``) does not fit what the point
    receives; the message names the point and the field."""


class ProviderError(RiendaError):
    """A model provider failed (refused key, bad stream, exhausted script...).

    The message says what went wrong and what the server sent, never a secret.
    """


class NotInRecording(ProviderError):
    """A model request a recording in ``replay`` mode does not hold: the model is not asked.
    The message names the cell or turn, the recording and the first difference."""


class AnswerCutOff(ProviderError):
    """An answer stopped at a length limit (``max_tokens``, or the context window filling
    up); ``tokens`` is the request's and the answer's tokens together as the server
    reported them (None when it did not)."""

    def __init__(self, message: str, *, tokens: int | None = None) -> None:
        super().__init__(message)
        self.tokens = tokens


class ContextOverflow(ProviderError):
    """The model's server refused a request for its length: the conversation no longer fits
    the model's context window.

    ``tokens`` (the request's) and ``window`` are the server's figures where it gave them,
    else Rienda's (None when unknown); the run's message names both and the session kept.
    """

    def __init__(self, message: str, *, tokens: int | None = None, window: int | None = None) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.window = window


class SandboxError(RiendaError):
    """JavaScript failed inside an invocation."""


class ScriptError(SandboxError):
    """The extension's JavaScript threw.

    ``name`` is the JS error's name (``TypeError``, ``Error``...), ``location`` the
    ``file:line:column`` of the extension where it was thrown, when known.
    """

    def __init__(self, message: str, *, name: str = "Error", location: str | None = None):
        super().__init__(message)
        self.name = name
        self.location = location

    def __str__(self) -> str:
        text = f"{self.name}: {self.args[0]}"
        return f"{text} (at {self.location})" if self.location else text


class OutOfMemory(SandboxError):
    """An invocation ran out of memory: its isolate's heap limit, or its V8 worker's memory
    bound (the worker was then replaced); the host process is unharmed."""
