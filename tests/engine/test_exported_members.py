"""The engine's public API is exactly what __all__ lists (httpx's convention)."""

import rienda_kernel.engine as engine


def test_all_exports_exist_and_are_sorted():
    assert engine.__all__ == sorted(engine.__all__)
    missing = [name for name in engine.__all__ if not hasattr(engine, name)]
    assert missing == []


def test_the_engine_never_imports_jupyter():
    import subprocess
    import sys

    code = ("import sys, rienda_kernel.engine, rienda_kernel.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipykernel', 'ipywidgets')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
