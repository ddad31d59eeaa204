"""Sessions: :mod:`.messages` (the conversation as the engine stores it), :mod:`.store` (the
append-only JSON Lines store and its tolerant readers), :mod:`.writer` (one writer per
session, whole lines), :mod:`.pairing` (each tool call with one result, as vendors
require), :mod:`.seen` (what a rewriting hook point was given, kept for replay),
:mod:`.reading` (the fast reader of a session file's lines), :mod:`.ids` (ids that sort by
creation time), :mod:`.records` (every other line's typed record), :mod:`.fill` (how full
the window is), ``compaction/`` (long sessions folded into a summary)."""
