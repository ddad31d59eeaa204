"""``rienda gate``: a Rienda agent's hooks as the policy of other coding agents.

Claude Code, Codex, Gemini CLI and Copilot CLI each start a hook command per tool call,
hand it the call as JSON on stdin and read its answer from stdout and its exit code.
:mod:`.protocols` reads each one's event into one normalized call (their shell tools all
become ``shell`` with ``{command}``) and writes each one's answer; :mod:`.decision` runs
a Rienda agent's ``beforeToolExecute`` (or ``afterToolExecute``) chain on it, bounded in
time and failing closed; :mod:`.record` saves every decision in a Rienda session per
the other agent's session, so ``rienda show``, ``rienda replay`` and
``pytest --rienda-replay`` read it like a run's. :mod:`.answering` is the whole reply
(never raising: a failure is a deny); :mod:`.server` the warm gate, a per-user server per
home on a Unix socket; :mod:`.command` the command once its words are read (ask the warm
server, else decide here); :mod:`.client` ``rienda-gate``, the lean client an agent's hook
entry runs.
"""
