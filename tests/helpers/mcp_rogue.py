"""An MCP stdio server in raw JSON-RPC that breaks the protocol on purpose (the SDK's own
server class would not let it). ``ROGUE`` in its environment says how:

- ``banner``: a banner and a debug line on stdout before and between its answers;
- ``surrogate``: ``tools/call`` answers with JSON holding a lone surrogate escape;
- ``surrogate-list``: ``tools/list`` does: in the tool's description, its parameter's
  description and its title (what a run sends the model, and ``rienda tools`` prints);
- ``garbage``: ``tools/call`` answers with a reply whose ``result`` is not a CallToolResult;
- ``deep``: ``tools/list`` answers with an ``inputSchema`` nested 300 levels;
- ``bytes``: before answering a call, a line that is not UTF-8, and a log notification
  the SDK cannot validate (an unknown level).

Its one tool is ``echo`` (``{"text": string}``).
"""

import json
import os
import sys

HOW = os.environ.get("ROGUE", "")
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def raw(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def deep_schema(levels):
    schema = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


if HOW == "banner":
    raw("Rogue server 1.0 starting (debug mode)")
for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue  # a notification
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "rogue", "version": "1.0"}}})
        if HOW == "banner":
            raw("DEBUG initialized, waiting for requests")
    elif method == "tools/list":
        schema = deep_schema(300) if HOW == "deep" else SCHEMA
        if HOW == "surrogate-list":
            raw('{"jsonrpc": "2.0", "id": %s, "result": {"tools": [{"name": "echo", "title": "Echo \\udc00", '
                '"description": "Says \\ud83d it back.", "inputSchema": {"type": "object", "properties": '
                '{"text": {"type": "string", "description": "what \\ud800 to say"}}}}]}}' % json.dumps(ident))
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "echo", "description": "Says it back.", "inputSchema": schema}]}})
    elif method == "tools/call":
        text = message["params"]["arguments"].get("text", "")
        if HOW == "bytes":
            sys.stdout.flush()
            sys.stdout.buffer.write(b"\xff\xfe not utf-8 \xc3\x28\n")
            sys.stdout.buffer.flush()
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "loud", "data": "x"}})
        if HOW == "surrogate":
            raw('{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "half \\ud83d of it"}]}}'
                % json.dumps(ident))
        elif HOW == "garbage":
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": "not a list"}})
        else:
            if HOW == "banner":
                raw("DEBUG echoing " + text)
            send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no such method"}})
