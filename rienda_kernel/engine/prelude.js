// Rienda's prelude: evaluated once in every fresh isolate, before any extension code.
// It defines the synchronous host-call bridge, `ctx`, `console`, timers, and the
// `__rienda` object the Python side drives. Python only ever sends strings in and takes
// strings (JSON) out. See rienda_kernel/engine/v8.py for the Python half.
"use strict";
(function (global) {
  const MAILBOX_BYTES = __RIENDA_MAILBOX_BYTES__;
  const HEADER_INTS = 4; // [kind, total code units, chunk code units, unused]
  const KIND_REQUEST = 1;
  const KIND_MORE = 2;
  const mailbox = new SharedArrayBuffer(MAILBOX_BYTES);
  const header = new Int32Array(mailbox, 0, HEADER_INTS);
  const data = new Uint16Array(mailbox, HEADER_INTS * 4);
  const capacity = data.length;
  let ring = null; // the doorbell: a synchronous call into Python, installed by v8.py

  function writeRequest(text) {
    let offset = 0;
    do {
      const n = Math.min(capacity, text.length - offset);
      for (let i = 0; i < n; i++) data[i] = text.charCodeAt(offset + i);
      header[0] = KIND_REQUEST;
      header[1] = text.length;
      header[2] = n;
      offset += n;
      if (offset < text.length) ring();
    } while (offset < text.length);
  }

  function readChunk(parts) {
    const n = header[2];
    for (let i = 0; i < n; i += 8192) {
      parts.push(String.fromCharCode.apply(null, data.subarray(i, Math.min(n, i + 8192))));
    }
    return n;
  }

  function readReply() {
    const total = header[1];
    const parts = [];
    let got = readChunk(parts);
    while (got < total) {
      header[0] = KIND_MORE;
      ring();
      got += readChunk(parts);
    }
    return parts.join("");
  }

  function makeError(error) {
    const e = new Error(error.message);
    e.name = error.name;
    return e;
  }

  // One synchronous call into the host. Returns the value or throws the host's error.
  function host(op, args) {
    writeRequest(JSON.stringify([op, args === undefined ? null : args]));
    ring();
    const reply = JSON.parse(readReply());
    if (reply.error) throw makeError(reply.error);
    return reply.value;
  }

  function formatArg(value) {
    if (typeof value === "string") return value;
    if (value instanceof Error) return value.stack || String(value);
    if (typeof value === "object" && value !== null) {
      try { return JSON.stringify(value); } catch (e) { return String(value); }
    }
    return String(value);
  }

  function lazy(object, name, op) {
    let cached;
    let loaded = false;
    Object.defineProperty(object, name, {
      enumerable: true,
      get() {
        if (!loaded) { cached = deepFreeze(host(op)); loaded = true; }
        return cached;
      },
    });
  }

  function deepFreeze(value) {
    if (value && typeof value === "object") {
      Object.values(value).forEach(deepFreeze);
      Object.freeze(value);
    }
    return value;
  }

  function optionsOf(options, name) {
    if (options === undefined || options === null) return {};
    if (typeof options !== "object") throw new TypeError(name + ": options must be an object");
    return options;
  }

  const ctx = {
    file: Object.freeze({
      read: (path) => host("file.read", { path }),
      write: (path, text) => { host("file.write", { path, text }); },
      exists: (path) => host("file.exists", { path }),
      list: (dir) => host("file.list", { path: dir === undefined ? "." : dir }),
    }),
    http: Object.freeze({
      fetch: (url, options) => host("http.fetch", { url, options: optionsOf(options, "ctx.http.fetch") }),
    }),
    system: Object.freeze({
      exec: (command, options) => host("system.exec", { command, options: optionsOf(options, "ctx.system.exec") }),
    }),
    log: (...args) => { host("log", { text: args.map(formatArg).join(" ") }); },
    confirm: (request) => host("confirm", request === undefined ? {} : request),
    notify: (notice) => { host("notify", notice === undefined ? {} : notice); },
  };
  lazy(ctx, "workdir", "workdir");
  lazy(ctx, "session", "session");
  lazy(ctx, "agent", "agent");
  lazy(ctx, "config", "config");
  lazy(ctx, "env", "env");
  Object.freeze(ctx);

  const logTo = (level) => (...args) => {
    const text = args.map(formatArg).join(" ");
    host("log", { text: level === "log" ? text : level + ": " + text });
  };
  global.console = Object.freeze({
    log: logTo("log"), info: logTo("log"), debug: logTo("log"),
    warn: logTo("warn"), error: logTo("error"),
  });

  // Timers over Atomics.waitAsync (no event loop of ours is needed).
  let nextTimer = 1;
  const timers = new Set();
  global.setTimeout = (fn, delay, ...args) => {
    const id = nextTimer++;
    timers.add(id);
    const waited = Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.max(0, Number(delay) || 0));
    const fire = () => {
      if (!timers.delete(id)) return;
      try { fn(...args); } catch (e) { host("log", { text: "uncaught error in a timer: " + formatArg(e) }); }
      finally { afterTimer(); }
    };
    (waited.async ? waited.value : Promise.resolve()).then(fire);
    return id;
  };
  global.clearTimeout = (id) => { timers.delete(id); afterTimer(); };
  global.setInterval = undefined;

  // Describes a value for Python: {kind, value}; kind is typeof, refined for null/array.
  function describe(value) {
    let kind = typeof value;
    if (value === null) kind = "null";
    else if (Array.isArray(value)) kind = "array";
    if (kind === "function" || kind === "symbol" || kind === "bigint") {
      return { kind, value: String(value) };
    }
    if (kind === "undefined") return { kind };
    return { kind, value };
  }

  function describeError(error) {
    if (error instanceof Error) {
      return { name: error.name, message: error.message, stack: String(error.stack || "") };
    }
    return { name: "thrown value", message: formatArg(error), stack: "" };
  }

  function encode(outcome) {
    try {
      return JSON.stringify(outcome);
    } catch (e) {
      return JSON.stringify({ ok: false, error: { name: "TypeError", message: "the returned value cannot be serialized: " + e.message, stack: "" } });
    }
  }

  let pending = null; // the promise an async call returned, until it settles

  // Host calls are synchronous, so once the microtask queue is empty only a timer can
  // settle a pending promise. A 1 ms wait is a macrotask: it runs after the microtasks.
  function scheduleStuckCheck() {
    Atomics.waitAsync(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1).value.then(() => {
      if (pending && timers.size === 0) host("stuck", null);
    });
  }

  function afterTimer() {
    if (pending && timers.size === 0) scheduleStuckCheck();
  }

  const module = { exports: {} };

  // Loading: the module script's last step. Failure while loading is reported, not thrown.
  function loaded(error) {
    if (error !== undefined) return JSON.stringify({ ok: false, loading: true, error: describeError(error) });
    return null;
  }

  global.__rienda = Object.freeze({
    installDoorbell(fn) { if (ring === null) ring = fn; },
    // Runs the host-call path once while the isolate is prepared, so V8 compiles it then
    // rather than during the first real invocation. Touches no state an extension sees.
    warm() {
      host("warm", { text: "é" });
      encode({ ok: true, result: describe({ a: [1, "b", null] }) });
      describeError(new Error("warm"));
      return "warm";
    },
    mailbox,
    module,
    // Calls module.exports[name](ctx, ...payload), after deep-freezing the read-only
    // fields listed in `frozen` ([argument index, key] pairs). Returns a JSON string: the outcome,
    // or {pending: true} when the call returned a promise; its settlement then arrives
    // through the "settled" host call.
    loaded,
    call(name, payload, frozen) {
      const fn = module.exports[name];
      for (const [index, key] of frozen || []) deepFreeze(payload[index][key]);
      let result;
      try {
        result = fn.call(module.exports, ctx, ...payload);
      } catch (e) {
        return encode({ ok: false, error: describeError(e) });
      }
      if (result && typeof result.then === "function") {
        pending = result;
        Promise.resolve(result).then(
          (value) => { pending = null; host("settled", JSON.parse(encode({ ok: true, result: describe(value) }))); },
          (e) => { pending = null; host("settled", { ok: false, error: describeError(e) }); },
        );
        scheduleStuckCheck();
        return JSON.stringify({ pending: true });
      }
      return encode({ ok: true, result: describe(result) });
    },
    // The shape of module.exports, for loading: [{name, kind}].
    exportsShape() {
      const exported = module.exports;
      if (exported === null || (typeof exported !== "object" && typeof exported !== "function")) {
        return JSON.stringify({ kind: describe(exported).kind, names: [] });
      }
      return JSON.stringify({
        kind: "object",
        names: Object.keys(exported).map((name) => ({ name, kind: describe(exported[name]).kind })),
      });
    },
    // JSON of a data export (description, parameters); errors become {error}.
    exportValue(name) {
      try {
        return JSON.stringify({ value: module.exports[name] });
      } catch (e) {
        return JSON.stringify({ error: e.message });
      }
    },
  });
})(globalThis);
