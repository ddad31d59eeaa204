"""README.md and the pages of docs/: every command and code block, true as written.

The README's first two commands are the newcomer's pair: CI (``.ci/run``) runs both exactly
as the README shows them, on a fresh clone, and checks that the first leaves the checkout
clean; the first tests below check the same promises from inside the suite (without
running the suite from inside itself).

Every other block is run or checked the way a reader would use it: ``sh`` blocks line by
line in a checkout of their own (``tests/helpers/docs.py``), notebook cells in real
kernels, agent files and YAML through the engine that reads them, file contents against
the files. ``BLOCKS`` names the test of each block; a block no test claims fails
:func:`test_every_block_of_the_readme_and_docs_is_claimed_by_a_test`, and so does a claim
whose block is gone. The llama.cpp block of docs/agents-and-models.md is also run against a
real server by ``tests/engine/providers/test_real_model.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

from rienda_kernel.engine import CompactionRecord, ConfigError, NonInteractiveUI, read_config
from rienda_kernel.engine.gate.protocols import WIRED_EVENTS
from rienda_kernel.engine.home.config import SETTINGS
from rienda_kernel.engine.runtime.rienda import Rienda
from rienda_kernel.engine.providers import provider_for

from tests.helpers.cli import table_rows
from tests.helpers.docs import PAGES, Shell, all_blocks, anchors, block, commands, inline_code, links
from tests.helpers.frontend import JupyterLab, streams, texts
from tests.helpers.hook_walk import walk_home
from tests.helpers.homes import scripted_home
from tests.helpers.paths import EXAMPLES, REPO

ROOT = REPO

# Each block of the README and docs/, by (page, heading, index under it): its test.
BLOCKS = {
    ("README.md", "Rienda", 0): "test_the_readme_starts_with_the_install_and_run_command_then_the_test_command",
    ("README.md", "A tool", 0): "test_the_readmes_tool_hook_and_agent_are_the_example_files",
    ("README.md", "A hook", 0): "test_the_readmes_tool_hook_and_agent_are_the_example_files",
    ("README.md", "An agent", 0): "test_the_readmes_tool_hook_and_agent_are_the_example_files",
    ("README.md", "Three front ends", 0): "test_the_readmes_kernel_example_installs_the_kernel_and_answers",
    ("README.md", "Three front ends", 1): "test_the_readmes_kernel_example_installs_the_kernel_and_answers",
    ("README.md", "Three front ends", 2): "test_the_readmes_magics_example_answers_in_a_python_kernel",
    ("README.md", "Three front ends", 3): "test_the_readmes_command_example_answers",
    ("docs/jupyter.md", "The Rienda kernel", 0): "test_the_kernel_install_command_and_the_options_it_names",
    ("docs/jupyter.md", "The magics, in any IPython kernel", 0): "test_the_magics_blocks_run_in_a_python_kernel",
    ("docs/jupyter.md", "The magics, in any IPython kernel", 1): "test_the_magics_blocks_run_in_a_python_kernel",
    ("docs/jupyter.md", "The magics, in any IPython kernel", 2): "test_the_magics_blocks_run_in_a_python_kernel",
    ("docs/jupyter.md", "The agent in your notebook", 0): "test_the_notebook_agent_block_runs_in_a_python_kernel",
    ("docs/cli.md", "A tour", 0): "test_the_command_tour_runs_as_written",
    ("docs/cli.md", "`rienda run`", 0): "test_the_hook_action_lines_are_what_rienda_run_prints",
    ("docs/testing.md", "One hook point, directly", 0): "test_the_hook_commands_run_as_written",
    ("docs/testing.md", "Recorded sessions as tests", 0): "test_recorded_sessions_replay_as_pytest_items_as_written",
    ("docs/testing.md", "Recorded sessions as tests", 1): "test_the_replay_failure_is_what_pytest_prints",
    ("docs/testing.md", "Expectations: what a hook change must alter", 0):
        "test_the_expectations_example_turns_a_hook_change_into_a_passing_replay",
    ("docs/agents-and-models.md", "Agents", 0): "test_the_agent_file_example_runs",
    ("docs/agents-and-models.md", "Options", 0): "test_the_options_example_passes_the_checks_of_its_endpoint",
    ("docs/agents-and-models.md", "A local model server, or any compatible endpoint", 0):
        "test_the_options_example_passes_the_checks_of_its_endpoint",
    ("docs/agents-and-models.md", "The scripted model", 0): "test_the_scripted_model_example_runs",
    ("docs/agents-and-models.md", "Sub-agents", 0): "test_the_sub_agents_example_runs_with_its_guard_and_limits",
    ("docs/configuration.md", "The Rienda home", 0): "test_the_home_layout_is_where_rienda_reads_and_writes",
    ("docs/configuration.md", "`config.yaml`", 0): "test_the_config_example_loads_without_a_diagnostic",
    ("docs/architecture.md", "The layout", 0): "test_the_layout_map_names_every_module_and_only_real_paths",
    ("docs/compaction.md", "Hooks", 0): "test_the_compaction_hook_is_the_example_file_and_keeps_the_teams_rules",
    ("docs/mcp.md", "MCP servers", 0): "test_the_mcp_extra_and_the_mcp_config_example_are_real",
    ("docs/mcp.md", "MCP servers", 1): "test_the_mcp_extra_and_the_mcp_config_example_are_real",
    **{("docs/gate.md", "The policy", i): "test_the_gate_page_runs_as_written" for i in range(3)},
    **{("docs/gate.md", "The four setups", i): "test_the_gate_page_runs_as_written" for i in range(4)},
    ("docs/recordings.md", "Recording a notebook", 0): "test_the_recordings_commands_run_as_written",
    ("docs/recordings.md", "In CI", 0): "test_the_recordings_ci_command_and_its_sanitize_rule",
    ("docs/recordings.md", "In CI", 1): "test_the_recordings_ci_command_and_its_sanitize_rule",
    ("docs/gate.md", "Wired in one command", 0): "test_the_gate_page_runs_as_written",
    ("docs/threads.md", "Threads and processes: the map of one notebook turn", 0):
        "test_the_thread_map_names_every_thread_the_code_starts_and_no_other",
}


def readme_commands() -> list[str]:
    block_ = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block_, "README.md must start with a ```sh block holding the two commands"
    return [line for line in block_.group(1).splitlines() if line.strip()][:2]


def checkout_state() -> str:
    """Everything git sees in the checkout, ignored files included (but the virtualenv
    CI makes there before running the README's commands)."""
    listing = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    return "\n".join(line for line in listing.splitlines() if not line[3:].startswith(".venv/"))


@pytest.fixture
def shell(tmp_path) -> Shell:
    return Shell(tmp_path)


def ran(shell: Shell, lines: list[str], cwd: Path | None = None, **substitutions: str) -> list:
    """Each line run in ``shell``, in order (words in ``substitutions`` replaced): the
    results, whose exit statuses the caller checks (:func:`failed`)."""
    done = []
    for line in lines:
        for word, value in substitutions.items():
            line = re.sub(rf"\b{word}\b", value, line)
        done.append(shell.run(line, cwd=cwd))
    return done


def failed(results: list) -> list[str]:
    return [f"{r.args}: exit {r.returncode}\n{r.stderr}" for r in results if r.returncode != 0]


# -- what is claimed, what is linked ------------------------------------------------------

def test_every_block_of_the_readme_and_docs_is_claimed_by_a_test():
    found = {b.key: b for b in all_blocks()}
    unclaimed = [f"{b.page}:{b.line} ({b.heading!r}, block {b.index})" for key, b in found.items() if key not in BLOCKS]
    assert unclaimed == [], "blocks no test checks:\n" + "\n".join(unclaimed)
    assert sorted(set(BLOCKS) - set(found)) == [], "claimed blocks that are not there"
    missing = {name for name in BLOCKS.values() if not callable(globals().get(name))}
    assert missing == set()


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_every_repository_path_the_pages_name_exists():
    tops = ("rienda_kernel/", "tests/", "bench/", "notebooks/", "docs/", "examples/", "magics/", ".ci/")
    missing = [f"{page.relative_to(REPO)}: {code}" for page in PAGES for code in inline_code(page)
               if code.startswith(tops) and not re.search(r"[\s<>*$|{]", code) and not (REPO / code).exists()]
    assert missing == []


# -- the README ------------------------------------------------------------------------

def test_the_readme_starts_with_the_install_and_run_command_then_the_test_command():
    first, second = readme_commands()
    assert first.split(" && ") == ["pip install .", "rienda demo"]
    assert second.split(" && ") == ["pip install -e '.[test]'", "python -m pytest -q"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "readme_command 1" in ci and "readme_command 2" in ci  # CI runs these very lines
    assert block("README.md", "Rienda").text.splitlines()[:2] == [first, second]


def test_the_first_readme_command_runs_an_agent_turn_offline_and_writes_nothing_into_the_checkout(tmp_path):
    first, _ = readme_commands()
    command = shlex.split(first.split(" && ")[1])
    before = checkout_state()
    rienda = Path(sys.executable).parent / command[0]  # the entry point pip installed beside this Python
    # PYTHONDONTWRITEBYTECODE: the bytecode Python caches in __pycache__ for modules this
    # run is the first to import is the interpreter's doing, not the demo's (CI's first
    # command runs an installed copy, which writes none here either).
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path / "user"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("RIENDA_HOME", None)
    done = subprocess.run([str(rienda), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("notes.txt has 27 words.\n")
    assert "← word-count: 27" in done.stderr
    assert "registered the Rienda Jupyter kernel in" in done.stderr and '"Rienda" in the launcher' in done.stderr
    sessions = list((tmp_path / "data" / "rienda" / "demo" / "home" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    assert f"{sessions[0].stem} saved" in done.stderr
    assert checkout_state() == before


def test_the_demo_run_twice_keeps_its_sessions_and_refreshes_its_examples(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    demo = [sys.executable, "-m", "rienda_kernel.cli", "demo", "--no-kernel"]
    subprocess.run(demo, cwd=tmp_path, env=env, capture_output=True, check=True, timeout=120)
    tool = tmp_path / "data" / "rienda" / "demo" / "home" / "tools" / "word-count" / "index.js"
    tool.write_text("broken(")
    done = subprocess.run(demo, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "registered the Rienda Jupyter kernel" not in done.stderr
    assert len(list(tool.parents[2].joinpath("sessions").glob("*.jsonl"))) == 2
    assert list(tmp_path.iterdir()) == [tmp_path / "data"]  # nothing in the directory it ran from


def test_the_readmes_tool_hook_and_agent_are_the_example_files():
    shown = {
        "A tool": EXAMPLES / "tools" / "word-count" / "index.js",
        "A hook": EXAMPLES / "hooks" / "guard" / "index.js",
        "An agent": EXAMPLES / "agents" / "counter.md",
    }
    for heading, path in shown.items():
        assert block("README.md", heading).text == path.read_text(encoding="utf-8"), path


def start_jupyter_line(line: str, checkout: Path) -> tuple[Path, str]:
    """``cd DIR && RIENDA_HOME=$PWD/HOME jupyter lab`` in ``checkout``: the folder Jupyter
    (and so each kernel) starts in, and RIENDA_HOME as the shell expands it there."""
    match = re.fullmatch(r"cd (\S+) && RIENDA_HOME=(\S+) jupyter lab", line)
    assert match, line
    assert shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)), "jupyter lab is not installed"
    folder = checkout / match.group(1)
    return folder, match.group(2).replace("$PWD", str(folder))


@pytest.fixture
def frontends():
    started = []

    def start(kind=JupyterLab, **kwargs):
        frontend = kind(**kwargs)
        started.append(frontend)
        return frontend

    yield start
    for frontend in started:
        frontend.close()


def run_cell(frontend, code: str) -> list[dict]:
    reply, messages = frontend.run(code)
    assert reply["status"] == "ok", (code, reply)
    return messages


def test_the_readmes_kernel_example_installs_the_kernel_and_answers(shell, frontends, monkeypatch):
    install, start = commands(block("README.md", "Three front ends", 0))
    done = shell.run(install)
    assert done.returncode == 0, done.stderr
    kernelspec = Path(shell.env["JUPYTER_DATA_DIR"]) / "kernels" / "rienda" / "kernel.json"
    assert json.loads(kernelspec.read_text())["display_name"] == "Rienda"
    folder, home = start_jupyter_line(start, shell.checkout)
    monkeypatch.setenv("JUPYTER_DATA_DIR", shell.env["JUPYTER_DATA_DIR"])  # the kernel as installed just now
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "0")  # a virtualenv's own kernels would come first
    fe = frontends(home=Path(home), workdir=folder, env={"RIENDA_HOME": home, "IPYTHONDIR": shell.env["IPYTHONDIR"]})
    assert fe.km.kernel_spec.resource_dir == str(kernelspec.parent)
    assert "`%rienda use counter`" in (REPO / "README.md").read_text()  # the first cell, named in the text
    run_cell(fe, "%rienda use counter")
    messages = run_cell(fe, block("README.md", "Three front ends", 1).text)
    shown = "\n".join(texts(messages)) + streams(messages)
    assert "notes.txt has 27 words." in shown and "word-count" in shown and "run finished: end_turn" in shown


def test_the_readmes_magics_example_answers_in_a_python_kernel(shell, frontends):
    folder, home = start_jupyter_line(commands(block("README.md", "Three front ends", 0))[1], shell.checkout)
    fe = frontends(home=Path(home), workdir=folder,
                   env={"RIENDA_HOME": home, "IPYTHONDIR": shell.env["IPYTHONDIR"]}, kernel_name="python3")
    assert "after a first cell\n`%load_ext rienda_kernel`," in (REPO / "README.md").read_text()
    run_cell(fe, "%load_ext rienda_kernel")
    messages = run_cell(fe, block("README.md", "Three front ends", 2).text)
    assert texts(messages, ("execute_result",)) == ["'notes.txt has 27 words.'"]


def test_the_readmes_command_example_answers(shell):
    done = ran(shell, commands(block("README.md", "Three front ends", 3)))
    assert failed(done) == []
    assert done[-1].stdout.endswith("notes.txt has 27 words.\n")
    assert "← word-count: 27" in done[-1].stderr


# -- docs/jupyter.md ---------------------------------------------------------------------

def test_the_kernel_install_command_and_the_options_it_names(shell):
    install, lab = commands(block("docs/jupyter.md", "The Rienda kernel"))
    done = shell.run(install)
    assert done.returncode == 0, done.stderr
    assert (Path(shell.env["JUPYTER_DATA_DIR"]) / "kernels" / "rienda" / "kernel.json").is_file()
    options = shell.run("python -m rienda_kernel install --help").stdout
    for named in re.findall(r"--[\w-]+", install.partition("#")[2]):
        assert named in options, named
    assert "{ask,allow,deny}" in options and "RIENDA_CONFIRM" in install
    assert shlex.split(lab, comments=True) == ["jupyter", "lab"]
    assert shutil.which("jupyter-lab", path=str(Path(sys.executable).parent))


@pytest.fixture
def python_kernel(shell, frontends):
    """A python3 kernel in the checkout's examples/, with examples/home as RIENDA_HOME."""
    work = shell.checkout / "examples"
    return frontends(home=work / "home", workdir=work, env={"IPYTHONDIR": shell.env["IPYTHONDIR"]},
                     kernel_name="python3")


def value(frontend, expression: str):
    return eval(streams(run_cell(frontend, f"print(repr({expression}))")))  # a Python literal it printed


def test_the_magics_blocks_run_in_a_python_kernel(python_kernel):
    fe = python_kernel
    loaded = run_cell(fe, block("docs/jupyter.md", "The magics, in any IPython kernel", 0).text)
    assert streams(loaded).startswith("Rienda: home ") and streams(loaded).count("\n") == 1  # one line
    asked = run_cell(fe, block("docs/jupyter.md", "The magics, in any IPython kernel", 1).text)
    [result] = texts(asked, ("execute_result",))
    assert result.startswith("('notes.txt has 27 words.',\n [ToolCallResult(") and result.endswith("'end_turn')")
    assert value(fe, "r.messages[0].text") == "How many words are in notes.txt?"
    run_cell(fe, block("docs/jupyter.md", "The magics, in any IPython kernel", 2).text)
    [session] = [p for p in (fe.home / "sessions").glob("*.jsonl") if "A longer prompt" in p.read_text()]
    assert "with notes.txt from your namespace." in session.read_text()


def test_the_notebook_agent_block_runs_in_a_python_kernel(python_kernel):
    fe = python_kernel
    (fe.home / "agents" / "analyst.md").write_text(
        "---\ndescription: Answers from the notebook's data.\nmodel: scripted/analyst.yaml\n"
        "tools: [variables, python]\n---\nLook at the user's variables before answering.\n")
    code = "revenue = {region: sum(amounts) for region, amounts in sales.items()}\nmax(revenue, key=revenue.get)"
    (fe.workdir / "analyst.yaml").write_text(yaml.safe_dump([
        {"text": "Looking.", "tool_calls": [{"name": "variables", "arguments": {}},
                                            {"name": "python", "arguments": {"code": code}}]},
        {"text": "The north earns most."}]))
    assert "After `%load_ext rienda_kernel`:" in (REPO / "docs" / "jupyter.md").read_text()
    run_cell(fe, "%load_ext rienda_kernel")
    run_cell(fe, "def load_sales():\n    return {'north': [3, 4], 'south': [1, 2]}")  # the reader's own
    messages = run_cell(fe, block("docs/jupyter.md", "The agent in your notebook").text)
    assert texts(messages, ("execute_result",)) == ["{'north': 7, 'south': 3}"]
    assert value(fe, "r.text") == "The north earns most."
    assert value(fe, "[call.text for call in r.tool_calls][1]") == "'north'"


# -- docs/cli.md -------------------------------------------------------------------------

def test_the_hook_action_lines_are_what_rienda_run_prints(tmp_path):
    """Each line of the block, in its order, is a line ``rienda run`` prints on stderr for
    the walk-through home (tests/helpers/hook_walk.py), run from the folder holding it."""
    home, work = scripted_home(tmp_path)
    walk_home(home, work)
    done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", "--home", "home", "run", "--workdir", "work",
                           "--agent", "walk", "go"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=os.environ)
    assert done.returncode == 0, done.stderr
    printed = iter(done.stderr.splitlines())
    missing = [line for line in block("docs/cli.md", "`rienda run`").text.splitlines()
               if not any(candidate == line for candidate in printed)]
    assert missing == [], done.stderr


def test_the_command_tour_runs_as_written(shell):
    lines = commands(block("docs/cli.md", "A tour"))
    ends = [i for i, line in enumerate(lines) if line.startswith("rienda sessions")]
    assert len(ends) == 1  # the lines after it use the ID it lists
    done = ran(shell, lines[:ends[0] + 1])
    ids = [row["id"] for row in table_rows(done[-1].stdout)]
    assert len(ids) == 2
    done += ran(shell, lines[ends[0] + 1:], ID=ids[0])
    by_line = dict(zip(lines, done))
    resume = next(line for line in lines if "--session ID" in line)
    assert (by_line[resume].returncode, "is exhausted" in by_line[resume].stderr) == (1, True)  # as the text says
    assert failed(r for line, r in by_line.items() if line != resume) == []
    out = {line.split("#")[0].split()[1] if line.startswith("rienda") else line.split()[0]: r.stdout
           for line, r in by_line.items() if line != resume}
    assert out["demo"].endswith("notes.txt has 27 words.\n") and "notes.txt has 27 words." in out["run"]
    assert "counter" in out["agents"] and "default" in out["agents"]
    assert "word-count" in out["tools"] and {"name": "guard", "points": "afterRun, beforeToolExecute",
                                              "path": "examples/home/hooks/guard/index.js"} in table_rows(out["hooks"])
    events = [json.loads(line)["type"] for line in out["echo"].splitlines()]
    assert events[0] == "run_start" and events[-1] == "run_end" and "tool_call" in events
    assert "← word-count [call_1_1]: 27" in out["show"]
    assert int(out["call"]) == len((shell.checkout / "README.md").read_text().split())
    assert "refused the call: refused by the user" in out["hook"]


# -- docs/testing.md ---------------------------------------------------------------------

def test_the_hook_commands_run_as_written(shell):
    lines = commands(block("docs/testing.md", "One hook point, directly"))
    done = ran(shell, lines)
    assert failed(done) == []
    denied, allowed, upper, date = (r.stdout for r in done[1:])
    assert "refused the call: refused by the user" in denied
    assert json.loads(allowed)["confirms"][0]["answer"] is True
    assert '"DONE"' in upper and "Today is " in date and "You count words" in date


def record(home: Path, work: Path, agent: str, responses: list, session_id: str | None = None) -> str:
    """One run of ``agent`` on ``responses`` (the scripted model's file): its session id,
    renamed to ``session_id`` when given."""
    (work / "script.yaml").write_text(yaml.safe_dump(responses))
    result = Rienda(home=home, workdir=work).conversation(agent).run("please", NonInteractiveUI())
    assert result.reason == "end_turn", result.error
    if session_id is None:
        return result.session_id
    old = home / "sessions" / f"{result.session_id}.jsonl"
    first, rest = old.read_text().split("\n", 1)
    header = {**json.loads(first), "id": session_id}
    (home / "sessions" / f"{session_id}.jsonl").write_text(json.dumps(header) + "\n" + rest)
    old.unlink()
    return session_id


def write(home: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_recorded_sessions_replay_as_pytest_items_as_written(shell):
    home = Path(shell.env["HOME"]) / ".rienda"
    shutil.copytree(EXAMPLES, home, ignore=shutil.ignore_patterns("sessions"))
    work = shell.checkout / "examples"
    script = yaml.safe_load((work / "script.yaml").read_text())
    kept = record(home, work, "counter", script, "20250101-120000-000000-3b88")
    record(home, work, "counter", script)  # a session the glob leaves out
    project = shell.root / "project"
    project.mkdir()
    done = ran(shell, commands(block("docs/testing.md", "Recorded sessions as tests")), cwd=project)
    assert failed(done) == []
    assert [p.name for p in (project / "tests" / "sessions").iterdir()] == [f"{kept}.jsonl"]
    for pytest_run in done[2:]:
        assert re.search(r"\b1 passed\b", pytest_run.stdout), pytest_run.stdout


ECHO = 'module.exports = { description: "Echoes.", parameters: { type: "object" }, ' \
       'execute: (ctx, a) => "got " + JSON.stringify(a) };'


def test_the_replay_failure_is_what_pytest_prints(tmp_path):
    shown = block("docs/testing.md", "Recorded sessions as tests", 1).text.splitlines()
    session_id = re.search(r"replay of (\S+)\.jsonl", shown[0]).group(1)
    hooks = re.search(r"through hooks: (.+)$", shown[1]).group(1).split(", ")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    write(home, {
        "tools/echo/index.js": ECHO,
        "hooks/https/index.js": (EXAMPLES / "hooks" / "https" / "index.js").read_text(),
        "hooks/deny-rm/index.js": """module.exports = { beforeToolExecute(ctx, call) {
            if (/rm -rf/.test(call.arguments.command || "")) return { allow: false, reason: "no rm -rf" }; } };""",
        "agents/worker.md": "---\nmodel: scripted/script.yaml\ntools: [echo]\nhooks: []\n---\nWork.\n",
    })
    record(home, work, "worker", [
        {"text": "Cleaning.", "tool_calls": [{"name": "echo", "arguments": {"command": "ls"}},
                                             {"name": "echo", "arguments": {"command": "rm -rf build"}}]},
        {"text": "Cleaned."}], session_id)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rienda-replay",
                           str(home / "sessions"), "--rienda-home", str(home), "--rienda-hooks", ",".join(hooks)],
                          cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    assert re.search(rf"^_+ {re.escape(shown[0].strip('_ '))} _+$", done.stdout, re.M), done.stdout
    assert "\n".join(shown[1:]) in done.stdout


def test_the_expectations_example_turns_a_hook_change_into_a_passing_replay(shell):
    home, work = shell.root / "home", shell.checkout / "examples"
    write(home, {
        "tools/http/index.js": 'module.exports = { description: "Fetches.", parameters: { type: "object" }, '
                               'execute: () => "got it" };',
        "tools/shell/index.js": 'module.exports = { description: "Runs.", parameters: { type: "object" }, '
                                'execute: () => "ran" };',
        "hooks/https/index.js": (EXAMPLES / "hooks" / "https" / "index.js").read_text(),
        "hooks/guard/index.js": (EXAMPLES / "hooks" / "guard" / "index.js").read_text(),
        "agents/ops.md": "---\nmodel: scripted/script.yaml\ntools: [http, shell]\nhooks: []\n---\nOperate.\n",
    })
    session = record(home, work, "ops", [
        {"text": "On it.", "tool_calls": [{"name": "http", "arguments": {"url": "http://example.org"}},
                                          {"name": "shell", "arguments": {"command": "rm -rf build"}}]},
        {"text": "Done."}])
    (home / "agents" / "ops.md").write_text(  # the change: https and the guard now watch this agent
        "---\nmodel: scripted/script.yaml\ntools: [http, shell]\nhooks: [https, guard]\n---\nOperate.\n")
    shell.env["RIENDA_HOME"] = str(home)
    unexpected = shell.run(f"rienda replay {session}")
    assert unexpected.returncode == 1 and "now refused by hook guard" in unexpected.stdout, unexpected.stdout
    (home / "sessions" / f"{session}.expect.yaml").write_text(
        block("docs/testing.md", "Expectations: what a hook change must alter").text)
    expected = shell.run(f"rienda replay {session}")
    assert expected.returncode == 0, expected.stdout + expected.stderr


# -- docs/agents-and-models.md -----------------------------------------------------------

def test_the_agent_file_example_runs(shell):
    home = shell.checkout / "examples" / "home"
    (home / "agents" / "counter.md").write_text(block("docs/agents-and-models.md", "Agents").text)
    shell.env["RIENDA_HOME"] = str(home)
    listed = shell.run("rienda agents")
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    assert {"id": "counter", "model": "scripted/script.yaml", "description": "Counts words in workspace files, carefully.",
            "file": "examples/home/agents/counter.md"} in table_rows(listed.stdout)
    done = shell.run('rienda run --agent counter --workdir examples "Count notes.txt"')
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("notes.txt has 27 words.\n")


def test_the_sub_agents_example_runs_with_its_guard_and_limits(tmp_path):
    """The lead of the page, with the examples' guard: its cleaner's rm -rf is refused (no
    one can be asked), and its researcher, one level down, may not start a sub-agent."""
    home, work = tmp_path / "home", tmp_path / "work"
    calls = lambda *pairs: [{"text": "", "tool_calls": [{"name": n, "arguments": a}]} for n, a in pairs]
    write(home, {"agents/lead.md": block("docs/agents-and-models.md", "Sub-agents").text,
                 "agents/cleaner.md": "---\nmodel: scripted/cleaner.yaml\ntools: [shell]\n---\nClean.\n",
                 "agents/researcher.md": "---\nmodel: scripted/researcher.yaml\ntools: [agent]\n---\nFind.\n",
                 "hooks/guard/index.js": (EXAMPLES / "hooks" / "guard" / "index.js").read_text()})
    write(work, {
        "lead.yaml": yaml.safe_dump(calls(("agent", {"agent": "cleaner", "prompt": "Delete build."}),
                                          ("agent", {"agent": "researcher", "prompt": "Ask the cleaner."}))
                                    + [{"text": "done"}]),
        "cleaner.yaml": yaml.safe_dump(calls(("shell", {"command": "rm -rf build"})) + [{"text": "not allowed"}]),
        "researcher.yaml": yaml.safe_dump(calls(("agent", {"agent": "cleaner", "prompt": "x"})) + [{"text": "alone"}])})
    (work / "build").mkdir()
    rienda = Rienda(home=home, workdir=work)
    lead, diagnostics = rienda.agent("lead")
    assert diagnostics == [] and (lead.agents, lead.max_depth, lead.hooks) == (("cleaner", "researcher"), 1, ("guard",))
    result = rienda.conversation("lead").run("Go.", NonInteractiveUI())
    assert result.reason == "end_turn" and (work / "build").exists()
    assert [answer.text for _, answer in result.tool_calls] == ["not allowed", "alone"]
    researcher = result.tool_calls[1][1].meta.subagent.session_id
    [refused] = [m for m in rienda.load_session(researcher).messages if m.role == "tool"]
    assert refused.text == ("cannot start sub-agent 'cleaner': it would run at depth 2, past the limit of 1 "
                            f"(max_depth: 1 in {home / 'agents' / 'lead.md'})")


def test_the_options_example_passes_the_checks_of_its_endpoint(tmp_path):
    home = tmp_path / "home"
    config_text = block("docs/agents-and-models.md", "A local model server, or any compatible endpoint").text
    agent_text = block("docs/agents-and-models.md", "Options").text
    write(home, {"config.yaml": config_text, "agents/local.md": agent_text})
    config, diagnostics = read_config(home)
    assert diagnostics == []
    agent, diagnostics = Rienda(home=home).agent("local")
    assert diagnostics == [] and agent.model == "local/qwen2.5"
    provider, name = provider_for(agent.model, config)
    provider.preflight(name, agent.options, agent.path, workdir=tmp_path)  # raises for a bad option
    (home / "config.yaml").write_text(config_text.replace("max_tokens:", "max_tokenz:"))
    quoted = "config.yaml: providers.local: unknown option(s) max_tokenz (did you mean max_tokens?)"
    assert quoted in (REPO / "docs" / "agents-and-models.md").read_text()
    with pytest.raises(ConfigError, match=re.escape(quoted)):
        provider_for(agent.model, read_config(home)[0])


def test_the_scripted_model_example_runs(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    write(home, {"tools/word-count/index.js": (EXAMPLES / "tools" / "word-count" / "index.js").read_text(),
                 "agents/counter.md": "---\nmodel: scripted/script.yaml\ntools: [word-count]\n---\nCount.\n"})
    write(work, {"script.yaml": block("docs/agents-and-models.md", "The scripted model").text,
                 "notes.txt": "one two three"})
    result = Rienda(home=home, workdir=work).conversation("counter").run("Count notes.txt", NonInteractiveUI())
    assert (result.reason, result.text) == ("end_turn", "There are 42 words.")
    assert [tool_result.text for _, tool_result in result.tool_calls] == ["3"]


# -- docs/configuration.md ---------------------------------------------------------------

def test_the_home_layout_is_where_rienda_reads_and_writes(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    made = {
        "tools/<name>/index.js": ECHO,
        "hooks/<name>/index.js": "module.exports = { afterRun(ctx, event) {} };",
        "agents/<id>.md": "---\nmodel: scripted/script.yaml\ntools: [x]\nhooks: [x]\n---\nBe brief.\n",
        "config.yaml": "max_turns: 3\nmax_turn: 4\n",
    }
    listed = [line.split()[0].removeprefix("$RIENDA_HOME/")
              for line in block("docs/configuration.md", "The Rienda home").text.splitlines()]
    assert sorted(listed) == sorted([*made, "sessions/<id>.jsonl"])
    write(home, {path.replace("<name>", "x").replace("<id>", "x"): text for path, text in made.items()})
    rienda = Rienda(home=home, workdir=work)
    catalog = rienda.catalog()
    assert "x" in catalog.tools and "x" in catalog.hooks
    assert "x" in [agent.id for agent in rienda.agents()[0]]
    config, diagnostics = read_config(home)
    assert config["max_turns"] == 3 and "did you mean 'max_turns'?" in diagnostics[0].message
    (work / "script.yaml").write_text("- text: Done.\n")
    result = rienda.conversation("x").run("hello", NonInteractiveUI())
    assert (home / "sessions" / f"{result.session_id}.jsonl").is_file()


def test_the_config_example_loads_without_a_diagnostic(tmp_path):
    write(tmp_path, {"config.yaml": block("docs/configuration.md", "`config.yaml`").text})
    config, diagnostics = read_config(tmp_path)
    assert diagnostics == []
    table = (REPO / "docs" / "configuration.md").read_text().split("| key | type | what it does |", 1)[1]
    documented = re.findall(r"^\| `(\w+)` \|", table.split("\n\n", 1)[0], re.M)
    assert sorted(documented) == sorted(SETTINGS)  # every setting in the table
    assert sorted(config) == sorted(set(SETTINGS) - {"auto_approve"})  # and in the example, but the older spelling
    provider_for("local/qwen2.5", config)


# -- docs/architecture.md ----------------------------------------------------------------

def test_the_layout_map_names_every_module_and_only_real_paths():
    text = block("docs/architecture.md", "The layout").text
    folders, missing = [], []
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if indent % 2 or not line.strip() or indent > 2 * len(folders) or line.startswith(" " * 30):
            continue  # a continued description
        folders = folders[: indent // 2]
        for name in re.split(r",\s*", line.strip().split("  ")[0]):
            path = REPO.joinpath(*folders, name)
            if not path.exists():
                missing.append(str(path.relative_to(REPO)))
        if line.strip().split()[0].endswith("/"):
            folders.append(line.strip().split()[0].rstrip("/"))
    assert missing == []
    modules = sorted(p for p in (REPO / "rienda_kernel").rglob("*") if p.suffix in (".py", ".js")
                     and p.name != "__init__.py" and "__pycache__" not in p.parts)
    unnamed = [str(p.relative_to(REPO)) for p in modules if not re.search(rf"\b{re.escape(p.stem)}\b", text)]
    assert unnamed == []
    assert sorted(re.findall(r"\bbench_\w+", text)) == sorted(p.stem for p in (REPO / "bench").glob("bench_*.py"))


def test_the_thread_map_names_every_thread_the_code_starts_and_no_other():
    """Each thread Rienda names (``name="rienda-..."``) is in docs/threads.md, and each
    thread the map names is started somewhere."""
    started = set()
    for path in (REPO / "rienda_kernel").rglob("*.py"):
        started |= set(re.findall(r'name=f?"(rienda-[a-z-]+)', path.read_text(encoding="utf-8")))
    mapped = set(re.findall(r"`(rienda-[a-z-]+)`", (REPO / "docs" / "threads.md").read_text(encoding="utf-8")))
    assert started and (sorted(started - mapped), sorted(mapped - started)) == ([], [])


def test_the_mcp_extra_and_the_mcp_config_example_are_real(tmp_path):
    """The install line names the extra pyproject.toml declares; the config example is one
    config.yaml reads without a word (its servers are checked, not started)."""
    install = block("docs/mcp.md", "MCP servers", 0).text
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "pip install 'rienda[mcp]'" in install and "mcp" in extras
    write(tmp_path, {"config.yaml": block("docs/mcp.md", "MCP servers", 1).text})
    config, diagnostics = read_config(tmp_path)
    assert diagnostics == [] and sorted(config["mcp_servers"]) == ["docs", "time"]


def test_the_gate_page_runs_as_written(shell):
    """The policy, tried as written; each agent's hook entry runs ``rienda gate`` for that
    agent on the events it sends, and the policy denies through it."""
    home = Path(shell.env["HOME"]) / ".rienda"
    shell.env["TMPDIR"] = str(shell.root / "tmp")  # a path too long for a socket: the gate decides cold, no server left
    (shell.root / "tmp").mkdir()
    write(home, {"agents/gate.md": block("docs/gate.md", "The policy", 0).text,
                 "hooks/team-policy/index.js": block("docs/gate.md", "The policy", 1).text})
    hooked, gated, shown = ran(shell, block("docs/gate.md", "The policy", 2).text.splitlines())
    assert failed([hooked, gated, shown]) == []
    assert "npm install left-pad --ignore-scripts" in hooked.stdout
    assert json.loads(gated.stdout) == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "no rm -rf here (asked by claude-code)"}}
    assert "  ✗ shell [" in shown.stdout and "no rm -rf here (asked by claude-code)" in shown.stdout
    claude, codex, gemini, copilot = (block("docs/gate.md", "The four setups", i).text for i in range(4))
    entries = {"claude-code": json.loads(claude)["hooks"], "codex": tomllib.loads(codex)["hooks"],
               "gemini-cli": json.loads(gemini)["hooks"], "copilot-cli": json.loads(copilot)["hooks"]}
    assert tomllib.loads(codex)["features"]["hooks"] is True and json.loads(copilot)["version"] == 1
    samples = REPO / "tests" / "gate" / "samples"
    for agent, events in entries.items():
        lines = {hook["command"] for matchers in events.values() for matcher in matchers for hook in matcher["hooks"]}
        assert lines == {f"rienda-gate {agent}"}
        assert (set(events) <= set(WIRED_EVENTS[agent])) if agent == "codex" else sorted(events) == sorted(
            WIRED_EVENTS[agent])  # Codex's block shows one event, and says the others are alike
        [sample] = [p for p in samples.glob("*.json") if p.name.startswith(agent.split("-")[0])]
        event = json.loads(sample.read_text())
        assert event["hook_event_name"] in events
        event["tool_input"]["command"] = "rm -rf build"
        (shell.root / "event.json").write_text(json.dumps(event))
        done = shell.run(f"{lines.pop()} --home {home} < {shell.root / 'event.json'}")
        assert done.returncode == 0 and f"no rm -rf here (asked by {agent})" in done.stdout, done.stderr
    installed, project, status, dry = ran(shell, block("docs/gate.md", "Wired in one command", 0).text.splitlines())
    assert failed([installed, project, status, dry]) == []
    settings = json.loads((Path(shell.env["HOME"]) / ".claude" / "settings.json").read_text())
    assert sorted(settings["hooks"]) == sorted(WIRED_EVENTS["claude-code"])
    assert "gemini-cli (project): 7 events wired in" in status.stdout and "GEMINI_CLI_TRUST_WORKSPACE" in project.stdout
    assert dry.stdout.count("-            \"command\": ") == 6 and "(--dry-run:" in dry.stdout


def test_the_compaction_hook_is_the_example_file_and_keeps_the_teams_rules(tmp_path):
    """The page's hook, in a session past a small window: a manual compaction without
    instructions is cancelled with its reason; with instructions it keeps the ticket rule
    and the summary ends with the team's rules."""
    path = EXAMPLES / "hooks" / "team-rules" / "index.js"
    assert block("docs/compaction.md", "Hooks").text == path.read_text(encoding="utf-8")
    home, work = scripted_home(tmp_path)
    write(home, {"hooks/team-rules/index.js": path.read_text(encoding="utf-8"),
                 "agents/long.md": "---\ndescription: Long.\nmodel: scripted/script.yaml\nhooks: [team-rules]\n"
                                   "options:\n  context_window: 4000\n---\nYou help.\n",
                 "config.yaml": "default_model: scripted/script.yaml\ncompaction:\n  keep_recent_tokens: 100\n"})
    (work / "script.yaml").write_text(yaml.safe_dump([{"text": f"Answer {i}: " + "words " * 60} for i in range(6)]))
    conversation = Rienda(home=home, workdir=work).conversation("long")
    for index in range(4):
        assert conversation.run(f"prompt {index + 1}", NonInteractiveUI()).reason == "end_turn"
    refused = conversation.compact(NonInteractiveUI())
    assert (refused.outcome, refused.message) == ("cancelled", "compaction cancelled by hook team-rules (say what to "
                                                  "keep: %rienda compact keep the test results)")
    made = conversation.compact(NonInteractiveUI(), "keep the test results")
    assert made.outcome == "compacted", made.message
    record = conversation.rienda.store.load(conversation.session_id).records_of(CompactionRecord)[-1]
    assert record.instructions == "keep the test results Keep every ticket number (ABC-123)."
    assert record.view is not None and record.view.summary.endswith("\n\nTeam rules: answer in English; never push to main without a review.")


# -- docs/recordings.md ------------------------------------------------------------------

def test_the_recordings_commands_run_as_written(tmp_path, monkeypatch):
    """The page's two ``rienda run --record`` lines against an OpenAI-wire server on
    127.0.0.1: the second asks nothing and prints what the first printed."""
    from tests.helpers.homes import write_agent
    from tests.helpers.recording_server import echo_server
    from tests.helpers.vendor_wire import serving

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha beta")
    monkeypatch.setenv("RIENDA_HOME", str(home))
    monkeypatch.delenv("RIENDA_RECORD_MODE", raising=False)
    lines = [shlex.split(line) for line in block("docs/recordings.md", "Recording a notebook").text.splitlines()]
    assert [line[0] for line in lines] == ["rienda", "rienda"]
    outs = []
    with serving(echo_server()) as server:
        (home / "agents").mkdir(parents=True)
        (home / "config.yaml").write_text(yaml.safe_dump({"providers": {"local": {"api": "openai",
                                                                                   "base_url": server.url}}}))
        write_agent(home, "analyst", ["read"], [], "local/echo")
        for index, line in enumerate(lines):
            done = subprocess.run([sys.executable, "-m", "rienda_kernel.cli", *line[1:]], cwd=work,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            outs.append(done)
            if index == 0:
                asked = len(server.requests)
        assert len(server.requests) == asked == 1
    assert outs[0].stdout == outs[1].stdout == "You said: Summarise notes.txt\n"
    assert "(replayed: 0 spent now)" in outs[1].stderr.splitlines()[-1]


def test_the_recordings_ci_command_and_its_sanitize_rule():
    from rienda_kernel.engine.providers.recordings import RECORD_MODE_ENV
    from rienda_kernel.frontend.terminal import replay_note

    command = block("docs/recordings.md", "In CI", 0).text.split()
    assert command[0] == f"{RECORD_MODE_ENV}=replay" and "--nbval" in command
    assert (ROOT / command[command.index("--nbval-sanitize-with") + 1]).exists()
    rule = block("docs/recordings.md", "In CI", 1).text
    as_nbval_reads = re.compile(r"^regex: (.*)$\n^replace: (.*)$", re.M)
    [(regex, replace)] = as_nbval_reads.findall(rule)
    assert (regex, replace) in as_nbval_reads.findall((ROOT / "notebooks" / "sanitize.cfg").read_text())
    live = "tokens: 33 in · 8 out over 2 model turns · context 1 % of 4,096"
    replayed = live.replace(" · context", replay_note([None, None], 2) + " · context")
    assert replayed != live and re.sub(regex, replace, replayed) == live
