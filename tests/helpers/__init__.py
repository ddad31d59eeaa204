"""Helpers shared by the test modules (no test module imports another's helpers; shared
fixtures live in the conftest.py of the narrowest folder that holds their users).

- :mod:`.paths`: the repository's folders (examples, README, docs, notebooks).
- :mod:`.docs`: the documentation pages: their code blocks, links, and a shell to run their commands in.
- :mod:`.homes`: a RIENDA_HOME and a workdir on disk: agents, extensions, the scripted
  model's script, the session files a run leaves.
- :mod:`.extensions`: extensions' JavaScript sources the tests share (word-count, publish,
  slow, careful) and builders of such sources (``returning``, ``hook``).
- :mod:`.recorded_session`: a session recorded by a real run, for the replay tests.
- :mod:`.cli`: the ``rienda`` command as a real process.
- :mod:`.processes`, :mod:`.pipes`: real processes, their files and pipes, with deadlines
  (``wait_for``, ``wait_for_file``, ``alive``, ``wait_exit``, ``read_until``).
- :mod:`.ports`: a free port on 127.0.0.1.
- :mod:`.frontend`: real kernels through jupyter_client, and clients that act like
  JupyterLab, VS Code and ``jupyter console``.
- :mod:`.vendor_wire`, :mod:`.vendors`, :mod:`.llama_server`: HTTP servers on 127.0.0.1
  speaking the model vendors' wire formats, and a real llama.cpp server.
- :mod:`.vendor_streams`: what each vendor streams (OpenAI, Anthropic, Ollama), built in
  its wire format.
- :mod:`.secret_config`: a config.yaml holding secrets, and the check that they stay out.
- :mod:`.scheduling`: how pytest-xdist spreads the suite over workers (``--dist loadgroup``):
  which files one worker runs whole, which start first, which run alone.
"""
