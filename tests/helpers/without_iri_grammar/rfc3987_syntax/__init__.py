"""Stands in for ``rfc3987_syntax`` in the suite's processes: importing it fails, as if the
package were not installed.

``jsonschema`` imports ``rfc3987_syntax``, when it is installed (``jupyter-events`` asks for
it, so it is wherever JupyterLab is), for the checker of its ``iri`` format, and that import
compiles a grammar: 0.9 CPU-seconds in every process that imports ``nbformat`` or
``jupyter_server`` (nbval's pytest, ``jupyter nbconvert``, JupyterLab, each pytest-xdist
worker): about 40 CPU-seconds of the suite. No test checks an ``iri`` format, and Rienda
itself never imports it (``engine/common/imports.py`` leaves it out). ``tests/conftest.py``
puts this folder first on ``PYTHONPATH`` for every process the suite starts, except the
probes of ``tests/test_startup.py``, which check that Rienda leaves the real one out.
"""

raise ImportError("rfc3987_syntax is left out of the test suite's processes (tests/helpers/without_iri_grammar)")
