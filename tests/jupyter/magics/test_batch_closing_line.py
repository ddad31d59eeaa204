"""A batch notebook (a real ``jupyter nbconvert --execute``) of a python3 kernel that loads
the magics, on a model that reports no usage: each ``%rienda ask`` cell ends with the line
``rienda run`` ends with, naming its session; ``%rienda show`` shows the run's notices."""

from __future__ import annotations

from ...helpers.cells import SHOWN_NOTICES, closing_lines_name_the_session, executed, teller_home


def test_each_ask_names_its_session_and_show_has_the_notices(python_kernel, tmp_path):
    home, work, _ = python_kernel
    teller_home(home, work)
    shown = executed(work, "batch.ipynb", "python3", ["%load_ext rienda_kernel", "%rienda use teller",
                                                      "%rienda ask go", "r = %rienda ask again", "%rienda show"],
                     {"RIENDA_HOME": str(home), "IPYTHONDIR": str(tmp_path / "ipython")})
    first, second = closing_lines_name_the_session(shown, [2, 3], home)
    assert first == second  # the magics keep one session from cell to cell
    assert [line for line in shown[4][-1].splitlines() if " notice: " in line] == SHOWN_NOTICES * 2
