"""Jupyter protocol conformance of the Rienda kernel (jupyter_kernel_test)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import jupyter_kernel_test
import yaml

from rienda_kernel.jupyter.install import install


class RiendaKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "rienda"
    language_name = "markdown"
    file_extension = ".md"

    # Two cells reach the (scripted) model, in this order: display_data's, then hello world's;
    # the rest are commands and extension cells. The kernel never clears a cell's output,
    # so test_clear_output has no sample and stays skipped.
    code_hello_world = "Say hello, world."
    code_display_data = [{"code": "Say hello, world.", "mime": "text/markdown"}]
    code_generate_error = "%rienda frobnicate"
    code_stderr = "%%rienda_hook typo\nmodule.exports = { beforeToolExec(ctx, call) {} };"  # a diagnostic
    code_page_something = "%rienda?"
    code_inspect_sample = "%rienda use"
    completion_samples = [{"text": "%rienda h", "matches": {"help", "hook", "hooks", "home"}}]
    complete_code_samples = ["Count the words in notes.txt", "%rienda agents"]
    incomplete_code_samples = ["A prompt continued on the next line \\"]
    # IPython's history numbers the running session 0 in a range reply (ipykernel's own
    # conformance tests skip "range" for that reason).
    supported_history_operations = ("tail", "search")
    code_history_pattern = "%rienda mod*"

    @classmethod
    def setUpClass(cls) -> None:
        cls._root = Path(tempfile.mkdtemp())
        install(prefix=str(cls._root / "prefix"))
        home = cls._root / "home"
        (home / "agents").mkdir(parents=True)
        script = cls._root / "script.yaml"
        script.write_text(yaml.safe_dump([
            {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "echo hello, world"}}]},
            {"text": "I said hello."},
        ] * 2))
        (home / "agents" / "default.md").write_text(
            f"---\nmodel: scripted/{script}\ntools: [shell]\n---\nYou greet.\n")
        cls.code_execute_result = [
            {"code": "%rienda model", "result": f"Model: scripted/{script} (agent default's model)."},
            {"code": "%rienda home", "result": f"RIENDA_HOME is {home}"},
        ]
        cls._saved = {key: os.environ.get(key) for key in ("JUPYTER_PATH", "RIENDA_HOME", "IPYTHONDIR")}
        os.environ["JUPYTER_PATH"] = str(cls._root / "prefix" / "share" / "jupyter")
        os.environ["RIENDA_HOME"] = str(home)
        os.environ["IPYTHONDIR"] = str(cls._root / "ipython")
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        for key, value in cls._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(cls._root, ignore_errors=True)
