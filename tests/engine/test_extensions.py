"""Discovery of tools and hooks under RIENDA_HOME, and their diagnostics (T01-T06, T23, H01-H03)."""

from __future__ import annotations

import os

import pytest

from rienda_kernel.engine import BUILTIN_TOOLS, BuiltinTool, ExtensionLoader, JSTool, rienda_home

GOOD_TOOL = """module.exports = {
  description: "Good.",
  parameters: { type: "object", properties: {} },
  execute: function () { return "good"; },
};
"""


def messages(catalog) -> list[str]:
    return [d.message for d in catalog.diagnostics]


# -- T01 / H01 / T02 / H02: location and names --------------------------------------------------
def test_T01_the_directory_name_is_the_tool_name(rig):
    path = rig.write_tool("word-count", GOOD_TOOL)
    tool = rig.catalog().tools["word-count"]
    assert isinstance(tool, JSTool)
    assert tool.path == str(path)
    assert tool.description == "Good."


def test_H01_the_directory_name_is_the_hook_name(rig):
    rig.write_hook("guard", "module.exports = { afterRun: function () {} };")
    assert rig.catalog().hooks["guard"].points == ("afterRun",)


def test_T01_rienda_home_overrides_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv("RIENDA_HOME", str(tmp_path / "elsewhere"))
    assert rienda_home() == (tmp_path / "elsewhere").resolve()
    monkeypatch.delenv("RIENDA_HOME")
    assert rienda_home() == (os.path.expanduser("~") / __import__("pathlib").Path(".rienda")).resolve()


def test_T02_H02_extensions_are_never_read_from_the_workspace(rig, monkeypatch):
    workspace_tool = rig.workdir / ".rienda" / "tools" / "sneaky" / "index.js"
    workspace_tool.parent.mkdir(parents=True)
    workspace_tool.write_text(GOOD_TOOL)
    (rig.workdir / "tools" / "sneaky2").mkdir(parents=True)
    (rig.workdir / "tools" / "sneaky2" / "index.js").write_text(GOOD_TOOL)
    monkeypatch.chdir(rig.workdir)
    catalog = rig.catalog()
    assert "sneaky" not in catalog.tools and "sneaky2" not in catalog.tools


# -- T03 / T04: built-ins, and shadowing them -----------------------------------------------------
def test_T04_built_in_tools_are_listed(rig):
    catalog = rig.catalog()
    assert set(BUILTIN_TOOLS) == {"shell", "http", "read", "write", "agent"}
    assert all(isinstance(catalog.tools[name], BuiltinTool) for name in BUILTIN_TOOLS)


def test_T03_a_user_tool_with_a_built_ins_name_shadows_it(rig):
    rig.write_tool("shell", GOOD_TOOL)
    catalog = rig.catalog()
    assert isinstance(catalog.tools["shell"], JSTool)
    assert catalog.shadowed == ("shell",)
    assert rig.tool("shell", {"command": "echo from the built-in"}).text == "good"


# -- T06: a tool file must export description, parameters, execute --------------------------------
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('module.exports = { parameters: { type: "object" }, execute: () => "" };', "missing export 'description' (string)"),
        ('module.exports = { description: "d", execute: () => "" };', "missing export 'parameters' (object)"),
        ('module.exports = { description: "d", parameters: { type: "object" } };', "missing export 'execute' (function)"),
        ('module.exports = { description: 5, parameters: { type: "object" }, execute: () => "" };',
         "export 'description' must be a string, got number"),
        ('module.exports = { description: "d", parameters: { type: "object" }, execute: "no" };',
         "export 'execute' must be a function, got string"),
        ('module.exports = { description: "d", parameters: { type: 12 }, execute: () => "" };',
         "'parameters' is not a valid JSON Schema"),
        ('module.exports = { description: "d", parameters: { type: "string" }, execute: () => "" };',
         "'parameters' must describe an object"),
        ('module.exports = "tool";', "module.exports must be an object, got string"),
    ],
)
def test_T06_a_tool_missing_an_export_is_skipped_with_a_diagnostic(rig, source, expected):
    path = rig.write_tool("broken", source)
    rig.write_tool("fine", GOOD_TOOL)
    catalog = rig.catalog()
    assert "broken" not in catalog.tools
    assert "fine" in catalog.tools
    [diagnostic] = catalog.diagnostics
    assert diagnostic.path == str(path)
    assert str(path) in diagnostic.message
    assert expected in diagnostic.message


def test_T06_a_syntax_error_names_the_file_and_line(rig):
    path = rig.write_tool("typo", 'module.exports = {\n  description: "x",\n  parameters: { type: "object" },,\n};\n')
    [diagnostic] = rig.catalog().diagnostics
    assert diagnostic.line == 3
    assert diagnostic.message.startswith(f"{path}:3:34: SyntaxError: Unexpected token ','")


def test_T06_a_throw_while_loading_names_the_file_line_and_column(rig):
    path = rig.write_tool("loud", 'const config = JSON.parse("{oops");\nmodule.exports = {};\n')
    [diagnostic] = rig.catalog().diagnostics
    assert diagnostic.line == 1
    assert f"{path}:1:" in diagnostic.message
    assert "threw while loading: SyntaxError" in diagnostic.message


def test_T06_a_top_level_failure_is_a_diagnostic(rig):
    """ctx is not available while a module loads; using it there is reported."""
    rig.write_tool("eager", 'module.exports = {}; module.exports.x = this.ctx.file;')
    [diagnostic] = rig.catalog().diagnostics
    assert "threw while loading: TypeError" in diagnostic.message


def test_T06_a_directory_without_index_js_and_a_stray_file_are_reported(rig):
    (rig.home / "tools" / "empty").mkdir(parents=True)
    (rig.home / "tools" / "loose.js").write_text(GOOD_TOOL)
    found = messages(rig.catalog())
    assert any("empty/index.js: skipped: file not found" in m for m in found)
    assert any("loose.js: ignored: a tool is a directory holding index.js" in m for m in found)


# -- T23: name rules -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["has space", "dots.js", "ü", "x" * 65])
def test_T23_invalid_names_are_skipped_with_a_diagnostic(rig, name):
    rig.write_tool(name, GOOD_TOOL)
    rig.write_hook(name, "module.exports = { afterRun() {} };")
    catalog = rig.catalog()
    assert name not in catalog.tools and name not in catalog.hooks
    found = messages(catalog)
    assert len(found) == 2
    assert all("is not a valid" in m and "1 to 64 letters, digits, '_' or '-'" in m for m in found)


@pytest.mark.parametrize("name", ["a", "word_count-2", "X" * 64])
def test_T23_valid_names(rig, name):
    rig.write_tool(name, GOOD_TOOL)
    assert name in rig.catalog().tools


# -- H03: hook exports -------------------------------------------------------------------------------------
def test_H03_a_hook_may_export_any_subset_of_points(rig):
    rig.write_hook("all", """module.exports = {
      beforeRun() {}, afterRun() {}, beforeModelRequest() {}, afterModelResponse() {},
      beforeToolExecute() {}, afterToolExecute() {} };""")
    rig.write_hook("one", "module.exports = { afterToolExecute() {} };")
    catalog = rig.catalog()
    assert catalog.hooks["all"].points == ("beforeRun", "afterRun", "beforeModelRequest",
                                           "afterModelResponse", "beforeToolExecute", "afterToolExecute")
    assert catalog.hooks["one"].points == ("afterToolExecute",)
    assert catalog.diagnostics == []


def test_H03_an_unknown_export_name_is_a_diagnostic_not_a_silent_no_op(rig):
    path = rig.write_hook("typo", "module.exports = { beforeToolExec() {}, afterRun() {} };")
    catalog = rig.catalog()
    assert catalog.hooks["typo"].points == ("afterRun",)
    [diagnostic] = catalog.diagnostics
    assert diagnostic.path == str(path)
    assert "'beforeToolExec' is not a hook point and will never run (did you mean 'beforeToolExecute'?)" in diagnostic.message


def test_H03_a_hook_with_no_point_is_skipped(rig):
    rig.write_hook("nothing", "module.exports = { helper() {} };")
    catalog = rig.catalog()
    assert "nothing" not in catalog.hooks
    assert any("exports none of the hook points" in m for m in messages(catalog))


def test_H03_a_point_that_is_not_a_function_is_a_diagnostic(rig):
    rig.write_hook("odd", "module.exports = { afterRun: 3, beforeRun() {} };")
    catalog = rig.catalog()
    assert catalog.hooks["odd"].points == ("beforeRun",)
    assert any("export 'afterRun' must be a function, got number" in m for m in messages(catalog))


# -- discovery is cached per file and follows edits ------------------------------------------------------------
def test_an_edited_file_is_loaded_again(rig):
    path = rig.write_tool("t", GOOD_TOOL)
    assert rig.catalog().tools["t"].description == "Good."
    path.write_text(GOOD_TOOL.replace("Good.", "Better, and longer."))
    assert rig.catalog().tools["t"].description == "Better, and longer."


def test_discovery_with_no_home_directories_lists_only_builtins(tmp_path, sandbox):
    catalog = ExtensionLoader(sandbox).discover(tmp_path / "missing", builtin_tools=BUILTIN_TOOLS)
    assert set(catalog.tools) == set(BUILTIN_TOOLS)
    assert catalog.hooks == {} and catalog.diagnostics == []


# -- schemas are checked whole at load: every $ref resolves ---------------------------------------
def schema_tool(parameters: str) -> str:
    return f'module.exports = {{ description: "d", parameters: {parameters}, execute: () => "ok" }};'


@pytest.mark.parametrize(("parameters", "ref"), [
    ('{ type: "object", properties: { a: { $ref: "#/$defs/missing" } } }', "#/$defs/missing"),
    ('{ type: "object", $defs: { a: { items: { $ref: "#/nowhere" } } } }', "#/nowhere"),
    ('{ type: "object", properties: { a: { $ref: "https://example.com/schema.json" } } }',
     "https://example.com/schema.json"),
    ('{ type: "object", properties: { a: { $ref: "#/$defs/b" } }, $defs: { b: { $ref: "#/$defs/c" }, c: { $ref: "#/$defs/b" } } }',
     "#/$defs/b"),
])
def test_a_schema_with_a_ref_that_does_not_resolve_is_skipped_at_load(rig, parameters, ref):
    path = rig.write_tool("broken", schema_tool(parameters))
    catalog = rig.catalog()
    assert "broken" not in catalog.tools
    [diagnostic] = catalog.diagnostics
    assert diagnostic.message.startswith(f"{path}: skipped: 'parameters' has a $ref that cannot be resolved: ")
    assert f"cannot be resolved: {ref!r} (" in diagnostic.message


@pytest.mark.parametrize("parameters", [
    '{ type: "object", properties: { a: { $ref: "#/$defs/name" }, tree: { $ref: "#" } }, $defs: { name: { type: "string" } } }',
    '{ type: "object", properties: { s: { $ref: "https://json-schema.org/draft/2020-12/schema" } } }',
    '{ $id: "https://rienda.example/p", type: "object", properties: { a: { $ref: "p#/$defs/x" } }, $defs: { x: {} } }',
])
def test_a_schema_whose_refs_all_resolve_loads(rig, parameters):
    rig.write_tool("fine", schema_tool(parameters))
    catalog = rig.catalog()
    assert "fine" in catalog.tools, messages(catalog)
def test_an_unreadable_extension_is_skipped_with_a_diagnostic_and_the_rest_load(unprivileged):
    for name in ("locked", "open"):
        (unprivileged.directory / "tools" / name).mkdir(parents=True)
        (unprivileged.directory / "tools" / name / "index.js").write_text(
            'module.exports = { description: "d", parameters: { type: "object" }, execute: () => "" };')
    locked = unprivileged.directory / "tools" / "locked" / "index.js"
    locked.chmod(0)
    seen = unprivileged.run("""
        import json
        from pathlib import Path
        from rienda_kernel.engine import ExtensionLoader, Sandbox
        catalog = ExtensionLoader(Sandbox()).discover(Path.cwd())
        print(json.dumps({"tools": sorted(catalog.tools), "diagnostics": [[d.path, d.message] for d in catalog.diagnostics]}))
    """)
    assert "open" in seen["tools"] and "locked" not in seen["tools"]
    [(path, message)] = seen["diagnostics"]
    assert path == str(locked)
    assert message.startswith(f"{locked}: skipped: cannot be read: ") and "Permission denied" in message
