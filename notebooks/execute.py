"""Re-execute documentation notebooks in place, as nbval will run them, and store their outputs.

    python notebooks/execute.py                 # every notebook here
    python notebooks/execute.py tools.ipynb     # some of them

Each runs top to bottom in a fresh kernel of the kind its metadata names (the Rienda
kernelspec is installed into a temporary prefix for the run, RIENDA_HOME is an empty
temporary home until the notebook picks its own, shown as ~/.rienda: HOME is an empty
temporary folder too), with the notebook's folder
as the working directory and no stdin, like nbval and nbclient; cell timings are not
recorded, so a re-run changes only what the notebook shows. A cell that fails stops the
run with its error, leaving the file as it was. A notebook that records its model exchanges
(``%rienda record``, docs/recordings.md) is re-run from its recording; to record it anew, run
it with ``RIENDA_RECORD_MODE=live`` and its model reachable (``recorded.ipynb``: ``python
tests/helpers/llama_server.py 8731``), then once more to store the outputs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from rienda_kernel.jupyter.install import install

HERE = Path(__file__).resolve().parent


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, record_timing=False, resources={"metadata": {"path": str(path.parent)}},
                   kernel_name=notebook.metadata["kernelspec"]["name"]).execute()
    nbformat.write(notebook, path)


def main(names: list[str]) -> int:
    paths = [HERE / name for name in names] if names else sorted(HERE.glob("*.ipynb"))
    with tempfile.TemporaryDirectory() as prefix, tempfile.TemporaryDirectory(prefix="rienda-reader-") as reader:
        install(prefix=prefix)
        # A reader's machine: an empty home folder, so the Rienda home is shown as ~/.rienda,
        # what a reader who has not made one sees.
        os.environ["HOME"] = reader
        os.environ["RIENDA_HOME"] = os.path.join(reader, ".rienda")
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(Path(prefix) / "share" / "jupyter"),
                                                                   os.environ.get("JUPYTER_PATH")]))
        for path in paths:
            print(f"executing {path.name}", flush=True)
            execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
