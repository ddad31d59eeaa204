"""What the Rienda kernel's tests and the magics' tests (a python3 kernel) both check of a
cell, through jupyter_client: one body, run as each front end takes a prompt."""

from __future__ import annotations

from .homes import call_script, write_agent, write_extension, write_script

WAITING = "waiting on hook {name} (beforeToolExecute)… interrupt the kernel (■) to stop it"


def status_lines(messages) -> list[str]:
    return [m["content"]["data"]["text/plain"] for m in messages
            if m["msg_type"] in ("display_data", "update_display_data")
            and "-status-" in m["content"].get("transient", {}).get("display_id", "")]


def a_live_cell_names_the_hook_it_waits_on(fe, home, work, cell: str, ename: str) -> None:
    """What the kernel and the magics both show (``cell``: the prompt, as each takes it)."""
    write_extension(home, "hooks", "gate", "module.exports = { beforeToolExecute(ctx) { ctx.system.exec("
                    '"for i in $(seq 1500); do [ -e release ] && break; sleep 0.02; done"); } };')
    write_extension(home, "hooks", "loop", "module.exports = { beforeToolExecute() {"
                    " const end = Date.now() + 30000; while (Date.now() < end) {} } };")
    write_extension(home, "tools", "noop", 'module.exports = { description: "n", parameters: { type: "object" },'
                    ' execute: () => "ran" };')
    write_agent(home, "slow", ["noop"], ["gate"])
    write_agent(home, "stuck", ["noop"], ["loop"])
    write_script(work, call_script("noop"))

    assert fe.run("%rienda use slow")[0]["status"] == "ok"
    msg_id = fe.submit(cell, allow_stdin=True)  # a live cell: someone watches
    fe.collect(msg_id, until=lambda m: WAITING.format(name="gate") in str(m["content"]))
    (work / "release").touch()
    messages = fe.collect(msg_id)
    assert fe.reply(msg_id)["status"] == "ok"
    lines = status_lines(messages)
    # The hook returned: the status line says so (a tick already on its way may still say
    # waiting, not after), and never waiting again.
    working = next((i for i, line in enumerate(lines) if line.startswith("⏳ working… · ")), None)
    assert working is not None and not any("waiting on" in line for line in lines[working:]), lines

    assert fe.run("%rienda use stuck")[0]["status"] == "ok"
    msg_id = fe.submit(cell, allow_stdin=True)
    fe.collect(msg_id, until=lambda m: WAITING.format(name="loop") in str(m["content"]))
    fe.km.interrupt_kernel()
    messages = fe.collect(msg_id)
    reply = fe.reply(msg_id)
    assert reply["status"] == "error" and reply["ename"] == ename
    [result] = [m["content"]["data"]["text/plain"] for m in messages if m["msg_type"] == "display_data"
                and "-result-" in m["content"].get("transient", {}).get("display_id", "")]
    assert result.startswith("✗ noop failed: interrupted while hook loop was running (beforeToolExecute, ")
    assert result.endswith("; the tool never ran")


def executed(notebook_dir, name: str, kernel: str, cells: list[str], env: dict[str, str]) -> list[list[str]]:
    """``cells`` as a notebook of ``kernel`` run by a real ``jupyter nbconvert --to notebook
    --execute`` in ``notebook_dir`` (its working directory, as nbval runs one), with ``env``;
    each cell's saved outputs as text (a stream's text, a display's text/plain)."""
    import json
    import os
    import subprocess
    import sys

    import nbformat

    spec = {"rienda": {"name": "rienda", "display_name": "Rienda", "language": "markdown"},
            "python3": {"name": "python3", "display_name": "Python 3", "language": "python"}}[kernel]
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": spec})
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
    nbformat.write(notebook, notebook_dir / name)
    done = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           "--output", f"executed-{name}", name], cwd=notebook_dir, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    saved = json.loads((notebook_dir / f"executed-{name}").read_text())["cells"]
    return [["".join(output.get("text") or output.get("data", {}).get("text/plain", "")) for output in cell["outputs"]]
            for cell in saved]


TELLER_HOOK = ("module.exports = { beforeToolExecute(ctx, c) { ctx.notify({ title: 'gate', body: 'calling ' + c.name });"
               " } };")
TELLER_TOOL = ('module.exports = { description: "t", parameters: { type: "object" }, execute(ctx) {'
               ' ctx.notify({ title: "teller", body: "in the tool" }); return "told"; } };')
SHOWN_NOTICES = ["    [hook:gate.beforeToolExecute] notice: gate: calling teller",
                 "    [tool:teller] notice: teller: in the tool"]


def teller_home(home, work) -> None:
    """Agent ``teller`` (on the scripted model, which reports no usage): its hook and its
    tool each say a notice (ctx.notify) during its call; a prompt is a call, then an answer
    (two prompts in one session: twice)."""
    write_extension(home, "hooks", "gate", TELLER_HOOK)
    write_extension(home, "tools", "teller", TELLER_TOOL)
    write_agent(home, "teller", ["teller"], ["gate"])
    write_script(work, call_script("teller") * 2)


def closing_lines_name_the_session(shown: list[list[str]], asks: list[int], home) -> list[str]:
    """The session ids the last outputs of the cells ``asks`` name, each a session of
    ``home`` (``session ID · usage: none reported by the model (2 model turns)``, as
    ``rienda run`` ends)."""
    import re

    ids = []
    for index in asks:
        found = re.fullmatch(r"session (\S+) · usage: none reported by the model \(2 model turns\)", shown[index][-1])
        assert found, shown[index]
        assert (home / "sessions" / f"{found[1]}.jsonl").exists()
        ids.append(found[1])
    return ids
