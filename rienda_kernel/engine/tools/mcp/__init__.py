"""MCP servers' tools as Rienda tools, under the same hooks, confirms and checks as every tool.

``config.yaml``'s ``mcp_servers`` names the servers (:mod:`.settings` checks it, with file
and line, and makes their ``env`` and ``headers`` values secrets). A server's tool ``T``
is the tool ``mcp__SERVER__T`` (:mod:`.names`); an agent declares it, or ``mcp__SERVER``
for all of them. The official SDK (``mcp``, the ``rienda[mcp]`` extra) speaks the
protocol; nothing here imports it until a server is needed.

How a call flows (every arrow that crosses a thread is bounded by the run's cancel token)::

    run thread                          "rienda-mcp" thread (one asyncio loop per Rienda)
    ----------                          ------------------------------------------------
    Rienda.catalog(tools=[...])  ──►  McpServers.tools(): start each needed server once
                                      (one task per server holds its transport and
                                      ClientSession, from initialize to close)
    hooks: beforeToolExecute
    invoke_tool: arguments checked
      against the tool's inputSchema
    McpTool.run(host, args)  ──────►  session.call_tool(...)  ──► the server
      waits on the future and on        progress and log notifications ──► host.emit_log
      host.cancel; a cancel cancels     (live, as ctx.log lines)
      the task (the SDK sends
      notifications/cancelled)   ◄────  CallToolResult ──► text (:mod:`.results`)
    hooks: afterToolExecute

:mod:`.servers` owns the loop thread and the servers (:class:`.servers.McpServers`, one
per :class:`~rienda_kernel.engine.runtime.rienda.Rienda`, closed by ``Rienda.close()``);
:mod:`.connection` is one server's connection (start, list, call, stop), :mod:`.server_lines`
how each line a stdio server writes is read, :mod:`.results` what a call's result becomes
for the model, :mod:`.catalog` the servers' tools in a catalog and in an agent's declared
tools. The tool object a catalog holds is :class:`..model.McpTool`, and what kept a server
or a tool out of it a :class:`..model.McpProblem`.
"""
