"""Where a run is made: :mod:`.rienda` (:class:`~.rienda.Rienda`, the front door every front
end holds), :mod:`.conversation` (one session, and the set-up of each run in it: agent,
catalog, provider, session writer, ``ctx``), :mod:`.subagents` (a run starting another
agent's run: the chain it inherits, its limits, its link to the lead), and :mod:`.seams`
(what the conversation and the sub-agents ask of the Rienda that made them); ``gate/``:
``rienda gate``, a Rienda agent's hooks deciding the tool calls of other coding agents."""
