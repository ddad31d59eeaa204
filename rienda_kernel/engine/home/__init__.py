"""What lives under ``RIENDA_HOME`` (default ``~/.rienda``), read and checked:
:mod:`.config` (where the files are, and ``config.yaml``), :mod:`.agents`
(``agents/<id>.md``) and :mod:`.extensions` (``tools/<name>/index.js`` and
``hooks/<name>/index.js``: discovery, checks and diagnostics)."""
