"""The ``%rienda`` IPython extension: ``%load_ext rienda_kernel`` (or ``%load_ext magics``)."""

from __future__ import annotations

import sys

# Not typing.TYPE_CHECKING: this module is imported with the package, so by the lean gate
# client (rienda-gate) on every call, and typing costs it milliseconds. mypy reads the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["load_ipython_extension"]


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register %rienda, %%rienda, %%rienda_tool and %%rienda_hook and their Tab
    completion in this shell, and print one line: the home, the agent and its model.

    Imports only what that needs, so loading takes a fraction of a second; what the first
    turn needs (jsonschema, ipywidgets) is imported on a background thread meanwhile.
    """
    from IPython.core.error import UsageError

    from ..engine import RiendaError
    from ..frontend.output import error_line
    from .cell import READER
    from .notebook import prewarm_first_turn

    from .completion import rienda_matcher
    from .magics import RiendaMagics, keep_questions

    magics = RiendaMagics(ipython)
    ipython.register_magics(magics)
    if keep_questions not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(keep_questions)
    matchers = ipython.Completer.custom_matchers
    matchers[:] = [m for m in matchers if getattr(m, "matcher_identifier", None) != "rienda"]
    matchers.append(rienda_matcher(lambda: magics.notebook))
    prewarm_first_turn()
    try:
        notebook = magics.notebook
        agent, _ = notebook.rienda.agent(notebook.agent_id)
    except Exception as exc:  # noqa: BLE001 - a broken home is reported, the magics still load
        message = str(exc) if isinstance(exc, (RiendaError, UsageError)) else error_line(exc)
        print(READER.text(f"Rienda magics loaded, but: {message}"), file=sys.stderr)
        return
    print(READER.text(f"Rienda: home {notebook.rienda.home}, agent {agent.id} (model "
                      f"{notebook.model or agent.model_label}); %rienda help lists the commands."))
