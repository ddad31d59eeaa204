"""``python -m rienda_kernel install``: install the ``rienda`` kernelspec.

The convention wrapper kernels follow (bash_kernel, ipykernel): kernel.json runs
``python -m rienda_kernel -f {connection_file}`` with the Python that installed it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from ..engine import CONFIRM_POLICIES, JSONObject

__all__ = ["KERNEL_NAME", "install", "main"]

KERNEL_NAME = "rienda"


def kernel_json(env: dict[str, str] | None = None) -> JSONObject:
    """The kernelspec's kernel.json: this Python runs ``python -m rienda_kernel``, with ``env``."""
    spec: JSONObject = {
        "argv": [sys.executable, "-m", "rienda_kernel", "-f", "{connection_file}"],
        "display_name": "Rienda",
        "language": "markdown",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }
    if env:
        spec["env"] = env
    return spec


def install(user: bool = False, prefix: str | None = None, env: dict[str, str] | None = None) -> str:
    """Install the kernelspec; returns the directory it went to."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kernel.json").write_text(json.dumps(kernel_json(env), indent=1))
        return KernelSpecManager().install_kernel_spec(folder, KERNEL_NAME, user=user, prefix=prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rienda_kernel install",
                                     description="Install the Rienda kernelspec.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user")
    where.add_argument("--sys-prefix", action="store_true", help="install into sys.prefix (e.g. a virtualenv)")
    where.add_argument("--prefix", help="install into this prefix")
    parser.add_argument("--confirm", choices=CONFIRM_POLICIES,
                        help="set RIENDA_CONFIRM in kernel.json's env (the confirm policy of every run)")
    args = parser.parse_args(argv)
    prefix = sys.prefix if args.sys_prefix else args.prefix
    env = {"RIENDA_CONFIRM": args.confirm} if args.confirm else None
    path = install(user=args.user, prefix=prefix, env=env)
    print(f"Installed the Rienda kernelspec in {path}")
    return 0
