// Rienda's prelude: evaluated in every fresh realm (or, where there are no realms, in a
// fresh isolate's main context) before any extension code. It defines `ctx`, `console`,
// timers, and the `__rienda` object the Python side drives. Python only ever sends strings
// in and takes strings (JSON) out. The prelude is one function of a `transport`, the
// kernel's (kernel.js) synchronous path to Python: transport(op, args) writes a host call
// (op and arguments as JSON texts), transport() delivers it and returns the reply's JSON. It returns the function the kernel
// calls to run an export: (name, payload JSON, frozen JSON) -> the outcome's JSON text.
//
// The prelude is one function in two files, joined in order (isolate.py): this one (the
// bridge, ctx, console, timers) and outcomes.js (results, loading, invocations).
//
// Immunity: extension code may replace or pollute any global (JSON, Object.prototype,
// Array.prototype, Function.prototype, Promise, String.prototype...). The bridge only
// uses what it captured here before any extension ran, builds its own JSON envelopes by
// concatenation (never through objects an inherited `toJSON` or setter could reach), and
// awaits only promises it made, with an own `constructor`, so `await` looks nothing up.
// Every read of an extension's value is guarded: a throw becomes the invocation's error.
"use strict";
(function (transport) {
  const global = globalThis;
  // -- primordials --------------------------------------------------------------------
  const ReflectApply = Reflect.apply;
  const ObjectCreate = Object.create;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectFreeze = Object.freeze;
  const ObjectKeys = Object.keys;
  const ObjectHasOwn = Object.hasOwn;
  const FunctionBind = Function.prototype.bind;
  const FunctionCall = Function.prototype.call;
  const ArrayIsArray = Array.isArray;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const StringCtor = String;
  const StringSlice = String.prototype.slice;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const SharedArrayBufferCtor = SharedArrayBuffer;
  const Int32ArrayCtor = Int32Array;
  const AtomicsWaitAsync = Atomics.waitAsync;
  const MathMax = Math.max;
  const NumberCtor = Number;

  // uncurry(f)(self, ...args) is f.call(self, ...args) through the captured `call`.
  const uncurry = (fn) => ReflectApply(FunctionBind, FunctionCall, [fn]);
  const slice = uncurry(StringSlice);
  const quote = (text) => JSONStringify(text); // for strings only: no toJSON is consulted
  function own(value) { // a data-property descriptor no inherited field can alter
    return { __proto__: null, value, writable: true, enumerable: true, configurable: true };
  }

  function hostError(error) {
    const e = new ErrorCtor(error.message);
    ObjectDefineProperty(e, "name", { __proto__: null, value: error.name, writable: true, configurable: true });
    return e;
  }

  // Writes the request [op, args] (its JSON text is garbage once this returns: no frame
  // that outlives the call holds it while the reply is read).
  function request(op, args) {
    let json;
    try {
      json = JSONStringify(args === undefined ? null : args);
    } catch (e) {
      throw new TypeErrorCtor(op + ": the arguments cannot be sent as JSON: " + safeMessage(e));
    }
    transport(quote(op), json === undefined ? "null" : json);
  }

  // One synchronous call into the host. Returns the value or throws the host's error.
  function host(op, args) {
    request(op, args);
    const reply = JSONParse(transport());
    if (ObjectHasOwn(reply, "error")) throw hostError(reply.error);
    return reply.value;
  }

  // -- reading an extension's values, never trusting them -----------------------------
  function safeString(value) {
    try {
      return StringCtor(value);
    } catch (e) {
      return "[a value that cannot be converted to a string]";
    }
  }

  function safeMessage(error) {
    try {
      const message = error !== null && typeof error === "object" ? error.message : error;
      return typeof message === "string" ? message : safeString(message);
    } catch (e) {
      return "[an error whose message cannot be read]";
    }
  }

  function formatArg(value) {
    try {
      if (typeof value === "string") return value;
      if (value instanceof ErrorCtor) {
        const stack = value.stack;
        return typeof stack === "string" && stack ? stack : safeString(value);
      }
      if (typeof value === "object" && value !== null) {
        try {
          const json = JSONStringify(value);
          if (typeof json === "string") return json;
        } catch (e) { /* fall through to String() */ }
      }
      return safeString(value);
    } catch (e) {
      return "[a value that cannot be printed]";
    }
  }

  function formatArgs(args) {
    let text = "";
    for (let i = 0; i < args.length; i++) text += (i ? " " : "") + formatArg(args[i]);
    return text;
  }

  function deepFreeze(value) { // only on values the bridge parsed itself (plain data)
    if (value !== null && typeof value === "object") {
      const keys = ObjectKeys(value);
      for (let i = 0; i < keys.length; i++) deepFreeze(value[keys[i]]);
      ObjectFreeze(value);
    }
    return value;
  }

  function optionsOf(options, name) {
    if (options === undefined || options === null) return { __proto__: null };
    if (typeof options !== "object") throw new TypeErrorCtor(name + ": options must be an object");
    return options;
  }

  // -- ctx and console ----------------------------------------------------------------
  function lazy(object, name, op) { // null from the host reads as undefined (ctx.subagent at the top level)
    let cached;
    let loaded = false;
    ObjectDefineProperty(object, name, {
      __proto__: null,
      enumerable: true,
      get() {
        if (!loaded) { const value = host(op); cached = value === null ? undefined : deepFreeze(value); loaded = true; }
        return cached;
      },
    });
  }

  const ctx = {
    file: ObjectFreeze({
      read: (path) => host("file.read", { __proto__: null, path }),
      write: (path, text) => { host("file.write", { __proto__: null, path, text }); },
      exists: (path) => host("file.exists", { __proto__: null, path }),
      list: (dir) => host("file.list", { __proto__: null, path: dir === undefined ? "." : dir }),
    }),
    http: ObjectFreeze({
      fetch: (url, options) => host("http.fetch", { __proto__: null, url, options: optionsOf(options, "ctx.http.fetch") }),
    }),
    system: ObjectFreeze({
      exec: (command, options) => host("system.exec", { __proto__: null, command, options: optionsOf(options, "ctx.system.exec") }),
    }),
    log: (...args) => { host("log", { __proto__: null, text: formatArgs(args) }); },
    confirm: (request) => host("confirm", request === undefined ? { __proto__: null } : request),
    notify: (notice) => { host("notify", notice === undefined ? { __proto__: null } : notice); },
  };
  lazy(ctx, "workdir", "workdir");
  lazy(ctx, "session", "session");
  lazy(ctx, "agent", "agent");
  lazy(ctx, "subagent", "subagent");
  lazy(ctx, "config", "config");
  lazy(ctx, "env", "env");
  ObjectFreeze(ctx);

  const logTo = (level) => (...args) => {
    const text = formatArgs(args);
    host("log", { __proto__: null, text: level === "log" ? text : level + ": " + text });
  };
  global.console = ObjectFreeze({
    log: logTo("log"), info: logTo("log"), debug: logTo("log"),
    warn: logTo("warn"), error: logTo("error"),
  });

  // -- timers over Atomics.waitAsync (no event loop of ours is needed) -----------------
  // A promise the bridge made, safe to await: its own `constructor` is the intrinsic
  // Promise, so `await` neither reads Promise.prototype nor calls a polluted `then`.
  function sleep(ms) {
    const waited = AtomicsWaitAsync(new Int32ArrayCtor(new SharedArrayBufferCtor(4)), 0, 0, ms);
    if (!waited.async) return undefined;
    ObjectDefineProperty(waited.value, "constructor", { __proto__: null, value: PromiseCtor });
    return waited.value;
  }

  let nextTimer = 1;
  let liveTimers = 0;
  const timers = ObjectCreate(null);
  async function runTimer(id, fn, delay, args) {
    await sleep(delay);
    if (timers[id] !== true) return;
    delete timers[id];
    liveTimers--;
    try {
      ReflectApply(fn, undefined, args);
    } catch (e) {
      host("log", { __proto__: null, text: "uncaught error in a timer: " + formatArg(e) });
    } finally {
      afterTimer();
    }
  }
  global.setTimeout = (fn, delay, ...args) => {
    if (typeof fn !== "function") throw new TypeErrorCtor("setTimeout: the callback must be a function");
    const id = nextTimer++;
    timers[id] = true;
    liveTimers++;
    runTimer(id, fn, MathMax(0, NumberCtor(delay) || 0), args);
    return id;
  };
  global.clearTimeout = (id) => {
    if (timers[id] === true) { delete timers[id]; liveTimers--; }
    afterTimer();
  };
  global.setInterval = undefined;

  // An extension's own Atomics.waitAsync is work left behind too, as a pending timer is:
  // an invocation that ends with either says so (its runtime is not reused for anything).
  let liveWaits = 0;
  const promiseThen = uncurry(PromiseCtor.prototype.then);
  ObjectDefineProperty(Atomics, "waitAsync", {
    __proto__: null, writable: true, configurable: true, enumerable: false,
    value: function waitAsync(...args) {
      const waited = ReflectApply(AtomicsWaitAsync, Atomics, args);
      if (waited !== null && typeof waited === "object" && waited.async === true) {
        liveWaits++;
        ObjectDefineProperty(waited.value, "constructor", { __proto__: null, value: PromiseCtor, configurable: true });
        promiseThen(waited.value, () => { liveWaits--; });
      }
      return waited;
    },
  });
  const leftBehind = () => liveTimers + liveWaits > 0;
