"""An MCP stdio server in raw JSON-RPC that breaks the protocol on purpose (the SDK's own
server class would not let it). ``ROGUE`` in its environment says how:

- ``banner``: a banner and a debug line on stdout before and between its answers;
- ``surrogate``: ``tools/call`` answers with JSON holding a lone surrogate escape;
- ``surrogate-list``: ``tools/list`` does: in the tool's description, its parameter's
  description and its title (what a run sends the model, and ``rienda tools`` prints);
- ``garbage``: ``tools/call`` answers with a reply whose ``result`` is not a CallToolResult;
- ``deep``: ``tools/list`` answers with an ``inputSchema`` nested 300 levels;
- ``bytes``: before answering a call, a line that is not UTF-8, and a log notification
  the SDK cannot validate (an unknown level);
- ``huge``: ``tools/call`` answers with one text item of ``ROGUE_MB`` megabytes (50 by
  default): the argument's text, then ``x`` up to that size, sent in pieces as a server
  streams a big file (the line is never whole in this process either);
- ``huge-items``: ... as ``ROGUE_MB`` megabytes of text items of 100 characters each;
- ``huge-image``: ... as an image item whose base64 data is ``ROGUE_MB`` megabytes, then a
  text item saying ``after the image``.

Its one tool is ``echo`` (``{"text": string}``).
"""

import json
import os
import sys

HOW = os.environ.get("ROGUE", "")
SIZE = int(float(os.environ.get("ROGUE_MB", "50")) * 1000 * 1000)
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def raw(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def huge(ident, text):
    """A reply of SIZE bytes written in pieces of 1 MB (see the module's docstring)."""
    out = sys.stdout
    piece = 1000 * 1000
    if HOW == "huge":
        out.write('{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": %s'
                  % (json.dumps(ident), json.dumps(text)[:-1]))
        for _ in range(SIZE // piece):
            out.write("x" * piece)
        out.write('"}], "isError": false}}\n')
    elif HOW == "huge-items":
        out.write('{"jsonrpc": "2.0", "id": %s, "result": {"content": [' % json.dumps(ident))
        item = json.dumps({"type": "text", "text": "y" * 100})
        count = SIZE // len(item)
        for index in range(count):
            out.write(item + ("," if index + 1 < count else ""))
        out.write(']}}\n')
    else:
        out.write('{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "image", "mimeType": "image/png", '
                  '"data": "' % json.dumps(ident))
        for _ in range(SIZE // piece):
            out.write("QUJD" * (piece // 4))
        out.write('"}, {"type": "text", "text": "after the image"}]}}\n')
    out.flush()


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
        if HOW.startswith("huge"):
            huge(ident, text)
        elif HOW == "surrogate":
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
