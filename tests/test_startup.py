"""Startup loads what it uses, when it uses it (bench/bench_startup.py measures the time;
these check, in fresh processes, which modules get loaded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import WITHOUT_IRI_GRAMMAR
from tests.helpers.ports import free_port

PROBE = """
import json, sys
{body}
print(json.dumps(sorted(name for name in {names} if name in sys.modules)))
"""


def loaded_after(body: str, names: list[str]) -> list[str]:
    """The ``names`` loaded after ``body`` runs in a fresh process, which has the real
    rfc3987_syntax (the suite's other processes go without it: tests/conftest.py)."""
    code = PROBE.format(body=body, names=names)
    path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p and p != WITHOUT_IRI_GRAMMAR)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                          env=env)
    return json.loads(done.stdout.splitlines()[-1])


def test_rienda_help_loads_no_part_of_the_engine_it_does_not_need():
    body = "from rienda_kernel.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    heavy = ["httpx", "yaml", "jsonschema", "py_mini_racer", "rienda_kernel.engine.runtime.rienda",
             "rienda_kernel.engine.providers", "mcp"]
    assert loaded_after(body, heavy) == []


def test_the_kernel_and_the_magics_start_without_jsonschema():
    """jsonschema (with rfc3987_syntax, 2 s on a loaded machine) is imported when a first
    schema is checked, in the background after start, never on the way to the first cell."""
    for body in ("import rienda_kernel.jupyter.kernel", "import rienda_kernel.jupyter.magics"):
        assert loaded_after(body, ["jsonschema", "rfc3987_syntax", "mcp"]) == [], body


def test_the_mcp_sdk_is_imported_only_when_config_yaml_names_a_server(tmp_path):
    """``mcp`` (and pydantic, ~1.5 s) is the ``rienda[mcp]`` extra: loading the whole engine
    API, %load_ext and a catalog without ``mcp_servers`` never import it."""
    body = ("import rienda_kernel, rienda_kernel.jupyter.extension, rienda_kernel.engine as e\n"
            "[getattr(e, name) for name in e.__all__]\n"
            f"e.Rienda(home={str(tmp_path)!r}).catalog()")
    assert loaded_after(body, ["mcp", "pydantic", "asyncio"]) == []


def test_the_notebooks_background_imports_leave_out_the_format_checkers_slow_import():
    """What %load_ext and the Rienda kernel import in the background for the first turn
    must not pull in rfc3987_syntax either: the first turn would wait for it (1.6 s to a
    fresh kernel's first buttons, in bench_kernel)."""
    body = "from rienda_kernel.jupyter.notebook import prewarm_first_turn\nprewarm_first_turn().join()"
    assert loaded_after(body, ["jsonschema", "ipywidgets", "rfc3987_syntax"]) == ["ipywidgets", "jsonschema"]


def test_importing_one_engine_module_loads_only_what_it_needs():
    assert loaded_after("import rienda_kernel.engine.errors", ["rienda_kernel.engine.runtime.rienda", "httpx"]) == []


def test_checking_a_tool_schema_leaves_out_the_format_checkers_slow_import(tmp_path):
    """jsonschema is loaded to check a JavaScript tool's parameters, but not the optional
    rfc3987_syntax behind its "iri" format checker, which Rienda never uses."""
    tool = tmp_path / "tools" / "count" / "index.js"
    tool.parent.mkdir(parents=True)
    tool.write_text('module.exports = { description: "Counts.", parameters: { type: "object" }, '
                    'execute: function () { return "1"; } };')
    body = (f"from rienda_kernel.engine.runtime.rienda import Rienda\n"
            f"catalog = Rienda(home={str(tmp_path)!r}).catalog()\n"
            f"assert 'count' in catalog.tools, catalog.diagnostics")
    assert loaded_after(body, ["jsonschema", "rfc3987_syntax"]) == ["jsonschema"]
    # and rfc3987_syntax itself stays importable afterwards
    body += "\nimport rfc3987_syntax"
    assert loaded_after(body, ["rfc3987_syntax"]) == ["rfc3987_syntax"]


def test_a_run_with_no_javascript_starts_no_v8_worker_and_one_with_a_hook_does(tmp_path):
    """A run whose agent declares no JavaScript tool or hook never makes the sandbox (whose
    first worker would boot on the cores the first request needs), even in a home that
    holds JavaScript; the same run with the hook declared makes it."""
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    (home / "hooks" / "audit").mkdir(parents=True)
    (home / "hooks" / "audit" / "index.js").write_text("module.exports = { beforeRun() {} };")
    work.mkdir()
    (work / "script.yaml").write_text("- text: Done.\n")
    for name, hooks in (("plain", "[]"), ("hooked", "[audit]")):
        (home / "agents" / f"{name}.md").write_text(f"---\nmodel: scripted/script.yaml\nhooks: {hooks}\n---\nBe brief.\n")
    run = ("from rienda_kernel.engine import Rienda, NonInteractiveUI\n"
           f"r = Rienda(home={str(home)!r}, workdir={str(work)!r})\n"
           "r.conversation({agent!r}).run('Hello.', NonInteractiveUI())\n")
    pool = "rienda_kernel.engine.sandbox.pool"
    assert loaded_after(run.format(agent="plain"), [pool]) == []
    assert loaded_after(run.format(agent="hooked"), [pool]) == [pool]


def run_openai_agent(home: Path, port: int, tools: str = "[]") -> str:
    """A probe body: ``rienda run`` in ``home``, whose agent ``a`` answers from an
    OpenAI-compatible endpoint on ``port`` (where nothing listens: the run stops at its
    first request, having loaded all it needs to make it)."""
    (home / "agents").mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(json.dumps({"providers": {"local": {
        "api": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 0}}}))
    (home / "agents" / "a.md").write_text(f"---\nmodel: local/m\ntools: {tools}\n---\nBe brief.\n")
    return (f"import os\nos.environ['RIENDA_HOME'] = {str(home)!r}\n"
            "from rienda_kernel.cli import main\nmain(['run', '--agent', 'a', 'hi'])")


def test_a_run_against_an_openai_endpoint_imports_no_other_vendors_provider_nor_the_notebook_tools(tmp_path):
    """Each built-in provider's module is imported when one of its kind is made; the
    notebook tools (``python``, ``variables``) only where a front end gives a namespace."""
    providers = [f"rienda_kernel.engine.providers.{name}" for name in ("anthropic", "ollama", "openai", "scripted")]
    notebook = ["rienda_kernel.engine.builtins.notebook", "rienda_kernel.engine.builtins.code_runner"]
    body = run_openai_agent(tmp_path / "home", free_port())
    assert loaded_after(body, providers + notebook) == ["rienda_kernel.engine.providers.openai"]


def test_warm_http_makes_the_one_client_on_a_background_thread():
    """httpcore's import and the CA certificates are the first request's, made beside the
    caller's work; the first request then uses that client."""
    body = ("import threading\nfrom rienda_kernel.engine import http\nhttp.warm_http()\n"
            "[t.join() for t in threading.enumerate() if t.name == 'rienda-http-warm']\n"
            "assert 'httpcore' in sys.modules\nmade = http.client()\nhttp.warm_http()\nassert http.client() is made")
    assert loaded_after(body, ["httpcore"]) == ["httpcore"]


def test_a_run_on_the_scripted_model_never_imports_httpx(tmp_path):
    """httpx (and the CA certificates its client loads) belongs to the runs whose model speaks
    HTTP: a scripted run, as most of a test suite's are, starts without it."""
    home = tmp_path / "home"
    (home / "agents").mkdir(parents=True)
    (tmp_path / "script.yaml").write_text("- text: Hello.\n")
    (home / "agents" / "s.md").write_text(f"---\nmodel: scripted/{tmp_path / 'script.yaml'}\n---\nBe brief.\n")
    body = (f"import os\nos.environ['RIENDA_HOME'] = {str(home)!r}\nfrom rienda_kernel.cli import main\n"
            f"assert main(['run', '--agent', 's', '--workdir', {str(tmp_path)!r}, 'hi']) == 0")
    assert loaded_after(body, ["httpx", "httpcore", "ssl"]) == []


def test_an_http_provider_makes_its_client_on_a_background_thread_when_it_is_made(tmp_path):
    """The OpenAI-format provider starts the client's making (httpcore's import) beside the
    rest of the turn's setup, on the warm-up thread, before its first request."""
    started = ("import threading\nthreads = []\n\nclass Watch:\n    def find_spec(self, name, *args):\n"
               "        if name == 'httpcore':\n            threads.append(threading.current_thread().name)\n\n"
               "sys.meta_path.insert(0, Watch())\n")
    body = started + run_openai_agent(tmp_path / "home", free_port()) + "\nassert threads == ['rienda-http-warm'], threads"
    assert loaded_after(body, ["httpcore"]) == ["httpcore"]


def test_a_run_with_a_javascript_tool_imports_jsonschema_while_the_worker_boots(tmp_path):
    """``rienda run`` in a home with JavaScript imports jsonschema (which checks a tool's
    parameters) on a background thread from the start, without its slow format checkers;
    a home without JavaScript never imports it."""
    home = tmp_path / "home"
    (home / "tools" / "count").mkdir(parents=True)
    (home / "tools" / "count" / "index.js").write_text(
        'module.exports = { description: "Counts.", parameters: { type: "object" }, execute: () => "1" };')
    started = ("import threading\nthreads = []\n\nclass Watch:\n    def find_spec(self, name, *args):\n"
               "        if name == 'jsonschema':\n            threads.append(threading.current_thread().name)\n\n"
               "sys.meta_path.insert(0, Watch())\n")
    body = started + run_openai_agent(home, free_port(), "[count]") + "\nassert threads == ['rienda-prewarm'], threads"
    assert loaded_after(body, ["jsonschema", "rfc3987_syntax"]) == ["jsonschema"]
    body = started + run_openai_agent(tmp_path / "plain", free_port()) + "\nassert not threads, threads"
    assert loaded_after(body, ["jsonschema"]) == []


def test_the_lean_gate_client_imports_nothing_a_socket_round_trip_does_not_need():
    """rienda-gate runs on every tool call of every gated agent: its import adds none of
    these to what the interpreter itself loads (typing alone was 6 ms of a 20 ms call)."""
    heavy = ("typing", "re", "json", "hashlib", "subprocess", "tempfile", "pathlib", "argparse")
    probe = f"import sys\n{{}}\nprint(','.join(n for n in {heavy!r} if n in sys.modules))"
    loaded = [subprocess.run([sys.executable, "-c", probe.format(body)], capture_output=True, text=True, timeout=120,
                             check=True).stdout.strip() for body in ("", "import rienda_kernel.engine.gate.client")]
    assert loaded[1] == loaded[0], loaded
