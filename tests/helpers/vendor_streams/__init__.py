"""What the model vendors stream, built as their wire formats (the fake servers in
:mod:`tests.helpers.vendors` check every event against the vendors' own types):

- :mod:`.openai`: Chat Completions chunks;
- :mod:`.anthropic`: Messages API events;
- :mod:`.ollama`: /api/chat NDJSON lines.
"""
