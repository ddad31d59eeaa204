"""A batch notebook (a real ``jupyter nbconvert --execute``) of the Rienda kernel on a model
that reports no usage: each prompt's cell ends with the line ``rienda run`` ends with, naming
its session; ``%rienda show`` shows the notices the run said, where they happened."""

from __future__ import annotations

from ...helpers.cells import SHOWN_NOTICES, closing_lines_name_the_session, executed, teller_home


def test_each_cell_names_its_session_and_show_has_the_notices(kernelspec_path, home, tmp_path):
    agent_home, work = home
    teller_home(agent_home, work)
    shown = executed(work, "batch.ipynb", "rienda", ["%rienda use teller", "go", "%rienda new", "again",
                                                     "%rienda show last"],
                     {"RIENDA_HOME": str(agent_home), "IPYTHONDIR": str(tmp_path / "ipython")})
    first, second = closing_lines_name_the_session(shown, [1, 3], agent_home)
    assert first != second
    assert [line for line in shown[4][-1].splitlines() if " notice: " in line] == SHOWN_NOTICES
    assert shown[4][-1].splitlines()[0].startswith(f"session {second} ")
