"""A run's UI: the front end's, plus the session's memory (the decision ledger, approvals)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..cancel import CancelToken
from ..common.json_value import JSONObject
from ..events import Confirm, Event, HookDecision, Notify
from ..sessions.records import ApprovalRecord, Record
from ..ui import Answer, Approvals, ScrubbingUI

__all__ = ["RunUI"]

_Append = Callable[[JSONObject], None]  # appends one record to the run's session (its writer's append_record)


class RunUI(ScrubbingUI):
    """The front end's (scrubbing) UI, plus the session's memory: hook decisions, confirms
    and notices are saved (``record``), and a request allowed "for this session" (same title
    and body) is not asked again. Events and questions are scrubbed once, by ``front`` (the
    ScrubbingUI the run got), so they pass here as they are; decisions are saved with the
    run's ``depth`` (0 at the top, n in a sub-agent's run)."""

    def __init__(self, front: ScrubbingUI, record: Callable[[Record], None], approvals: set[tuple[str, str]] | Approvals,
                 depth: int = 0) -> None:
        super().__init__(front)
        self._keep = record
        self._depth = depth
        self._approvals = approvals if isinstance(approvals, Approvals) else Approvals(
            approvals, lambda title, body: record(ApprovalRecord(title, body)))

    @property
    def approvals(self) -> Approvals:
        return self._approvals

    def emit(self, event: Event) -> None:
        if isinstance(event, (HookDecision, Confirm, Notify)):  # the ledger; confirms (replay answers as they were); notices
            self._keep(replace(event, depth=self._depth))
        self.front.emit(event)

    def ask(self, title: str, body: str, cancel: CancelToken) -> Answer:
        return Answer(*self.front.ask(title, body, cancel))
