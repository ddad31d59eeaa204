"""Compaction: keeping a long session's requests inside the model's window, by rule.

:mod:`.view` is what a request holds after a compaction (the session file keeps every
message; a ``compaction`` record says which are sent, and how); :mod:`.plan` decides what a
compaction keeps, prunes and folds; :mod:`.settings` reads ``compaction:`` in config.yaml;
:mod:`.summary` is the summariser's prompt. The run's side (hooks, the summariser's call,
the record) is :mod:`...runtime.compactor`.
"""
