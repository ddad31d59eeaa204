"""Jupyter protocol conformance of the Rienda kernel (jupyter_kernel_test)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import jupyter_kernel_test
import yaml

from rienda_kernel.install import install


class RiendaKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "rienda"
    language_name = "markdown"
    file_extension = ".md"

    # Only the hello-world cell reaches the (scripted) model; the rest are commands.
    code_hello_world = "Say hello, world."
    code_display_data = [{"code": "%rienda help", "mime": "text/markdown"}]
    code_generate_error = "%rienda frobnicate"
    completion_samples = [{"text": "%rienda h", "matches": {"help", "hook", "hooks", "home"}}]
    complete_code_samples = ["Count the words in notes.txt", "%rienda agents"]
    incomplete_code_samples = ["A prompt continued on the next line \\"]

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
        ]))
        (home / "agents" / "default.md").write_text(
            f"---\nmodel: scripted/{script}\ntools: [shell]\n---\nYou greet.\n")
        cls._saved = {key: os.environ.get(key) for key in ("JUPYTER_PATH", "RIENDA_HOME")}
        os.environ["JUPYTER_PATH"] = str(cls._root / "prefix" / "share" / "jupyter")
        os.environ["RIENDA_HOME"] = str(home)
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
