"""Helpers shared by the test modules (no test module imports another's helpers).

- :mod:`.paths`: the repository's folders (examples, README, docs, notebooks).
- :mod:`.docs`: the documentation pages: their code blocks, links, and a shell to run their commands in.
- :mod:`.processes`, :mod:`.pipes`: real processes, their files and pipes, with deadlines.
- :mod:`.frontend`: real kernels through jupyter_client, and clients that act like
  JupyterLab, VS Code and ``jupyter console``.
- :mod:`.vendor_wire`, :mod:`.vendors`, :mod:`.llama_server`: HTTP servers on 127.0.0.1
  speaking the model vendors' wire formats, and a real llama.cpp server.
- :mod:`.secret_config`: a config.yaml holding secrets, and the check that they stay out.
"""
