"""How pytest-xdist spreads the suite over workers (``--dist loadgroup``, pyproject.toml).

Each test is a unit of its own, handed to whichever worker is free, except the files of
:data:`TOGETHER` and the notebooks, which one worker runs whole, in file order:

- a notebook's cells (nbval) run top to bottom in one kernel, started by the file's setup;
- the files of :data:`TOGETHER` share a module- or class-scoped fixture (a llama.cpp server,
  MCP servers, a kernel, a recorded home); split over workers it would be started by each.

Units start in the order of :data:`FIRST` (the longest files, so that the run does not end
waiting on one of them), then in collection order. A wrong or missing name here costs time,
never a result: a file missing from TOGETHER is spread and builds its fixture per worker.

The tests of :data:`ALONE` run first, on one worker, while the others wait: what they check
would see what other tests do at the same time (the checkout's files, say).

pytest-xdist's own ``loadgroup`` reads ``@pytest.mark.xdist_group`` by appending the group
to the node id, which pytest 9.2 no longer lets a plugin change (pytest-xdist#1386): the
groups were silently ignored, so the files are named here, by path, which the controller
sees without importing the tests.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

TOGETHER = (
    "tests/engine/providers/test_real_compaction.py",  # window1k: a llama.cpp server
    "tests/engine/providers/test_real_model.py",  # llama, small: llama.cpp servers
    "tests/engine/providers/test_fakellm.py",  # fakellm's server
    "tests/engine/tools/test_mcp.py",  # shared: a Rienda with MCP servers started
    "tests/engine/sandbox/test_v8_bridge.py",  # local: an in-process sandbox
    "tests/jupyter/kernel/test_protocol.py",  # RiendaKernelTests: one kernel for the class
    "tests/test_pytest_plugin.py",  # recorded_once: sessions recorded through the loop
    "tests/cli/test_compact.py",  # long_session_once: five rienda runs
    "tests/gate/test_record.py",  # recorded_once: four rienda gate runs
)

ALONE = (
    # git status of the checkout before and after `rienda demo`: nothing else may write there meanwhile
    "tests/test_readme.py::test_the_first_readme_command_runs_an_agent_turn_offline_and_writes_nothing_into_the_checkout",
)

FIRST = (
    "tests/engine/providers/test_real_compaction.py",
    "tests/engine/providers/test_real_model.py",
    "tests/jupyter/browser/",
    "tests/agents/",
    "notebooks/",
)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def scope(nodeid: str) -> str:
    """The unit ``nodeid`` belongs to: its file's path for a notebook or a file of
    TOGETHER, else the node id itself."""
    path = _file(nodeid)
    return path if path.endswith(".ipynb") or path in TOGETHER else nodeid


def rank(unit: str) -> int:
    """Where ``unit`` starts: the index of the first entry of FIRST it falls under, else after them all."""
    return next((index for index, prefix in enumerate(FIRST) if unit.startswith(prefix)), len(FIRST))


class GroupedScheduling(LoadScopeScheduling):
    """Load scheduling by the units of :func:`scope`, started in the order of :func:`rank`,
    the tests of ALONE first while the other workers wait."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self.alone: set[str] = set()  # ALONE's tests not yet done: only self.lead works meanwhile
        self.lead = None

    def _split_scope(self, nodeid: str) -> str:
        return scope(nodeid)

    def schedule(self) -> None:
        """LoadScopeScheduling's, but with the units queued in the order of :func:`rank`
        (stable: collection order within a rank)."""
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        units: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
        alone = [unit for unit in units if unit in ALONE]
        for unit in alone + sorted((unit for unit in units if unit not in ALONE), key=rank):
            self.workqueue[unit] = units[unit]
        for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than units
            unused, _assigned = self.assigned_work.popitem()
            unused.shutdown()
        if alone:
            self.alone, self.lead = set(alone), self.nodes[0]
            for _ in alone:
                self._assign_work_unit(self.lead)
            self._reschedule(self.lead)  # a next test, so that the lead runs the last of ALONE
            return
        self._start_all()

    def _start_all(self) -> None:
        for node in self.nodes:
            if not self.assigned_work[node]:
                self._assign_work_unit(node) if self.workqueue else node.shutdown()
        for node in self.nodes:  # a second unit each: a worker runs a test once it knows the next (#277)
            self._reschedule(node)
        if not self.workqueue:
            for node in self.nodes:
                node.shutdown()

    def _reschedule(self, node) -> None:
        if self.alone and node is not self.lead:
            return  # waits for ALONE's tests
        super()._reschedule(node)

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        super().mark_test_complete(node, item_index, duration)
        if self.alone:
            self.alone.discard(self.registered_collections[node][item_index])
            if not self.alone:
                self._start_all()

    def remove_node(self, node):
        waiting, self.alone = bool(self.alone), set()  # a worker that crashed: nobody waits any longer
        crashed = super().remove_node(node)
        if waiting:
            self._start_all()
        return crashed


def make_scheduler(config, log):
    """The scheduler for ``--dist loadgroup`` (the hook ``pytest_xdist_make_scheduler`` of
    tests/conftest.py and notebooks/conftest.py, so that either folder run alone has it)."""
    return GroupedScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None
