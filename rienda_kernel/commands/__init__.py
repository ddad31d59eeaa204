"""The Rienda commands and the session state they act on, shared by every front end that
talks turn after turn: ``%rienda use reviewer`` in a notebook, ``/use reviewer`` in
``rienda chat``.

:mod:`.vocabulary` is the one table of commands (dispatch, help, completion);
:mod:`.session` the state one conversation keeps between turns (:class:`~.session.TurnSession`:
the engine, the current agent, model override, confirm policy and conversation);
:mod:`.listings` and :mod:`.tables` what the listing commands show; :mod:`.compaction` the
``compact`` and ``pin`` commands. Nothing here imports Jupyter (the notebook front ends are
in :mod:`rienda_kernel.jupyter`, the terminal's in :mod:`rienda_kernel.cli`).
"""
