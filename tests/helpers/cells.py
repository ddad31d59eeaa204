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
    assert lines[0].startswith("⏳ working… · ")  # the hook returned: the status line says so at once
    assert not any("waiting on" in line for line in lines)

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
