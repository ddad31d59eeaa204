"""What every other part of the engine stands on, and which imports none of them:
:mod:`.text` (foreign text made valid Unicode), :mod:`.bounded` (JSON from outside, within
depth and size), :mod:`.imports` (third-party modules imported without the parts Rienda
does not use, and imported ahead in the background), :mod:`.background` (warm-ups that never
outlive the process), :mod:`.json_value` (``JSON``, the one alias for JSON from outside) and
:mod:`.hints` (the one "did you mean" hint)."""
