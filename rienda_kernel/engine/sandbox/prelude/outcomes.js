  // The second half of the prelude's function (bridge.js is the first): ctx, host and
  // the primordials are in scope.

  // -- outcomes: JSON text built by concatenation --------------------------------------
  // A result is {"ok":true,"json":<the value's JSON>} for a JSON value, or
  // {"ok":true,"kind":<typeof>,"text":<String(value)>} for undefined, functions, symbols
  // and bigints; a failure is {"ok":false,"error":{"name","message","stack"}}.
  // `marks` are extra leading fields of the outcome, e.g. '"loading":true,'.
  function failure(name, message, stack, marks = "") {
    return "{" + marks + '"ok":false,"error":{"name":' + quote(name) + ',"message":' + quote(message) +
      ',"stack":' + quote(stack) + "}}";
  }

  function thrown(error, marks = "") {
    try {
      if (error instanceof ErrorCtor) {
        const name = error.name;
        const stack = error.stack;
        return failure(typeof name === "string" ? name : safeString(name), safeMessage(error),
          typeof stack === "string" ? stack : "", marks);
      }
    } catch (e) {
      return failure("Error", "an error that cannot be read was thrown", "", marks);
    }
    return failure("thrown value", formatArg(error), "", marks);
  }

  function success(value) {
    const kind = typeof value;
    if (kind === "undefined" || kind === "function" || kind === "symbol" || kind === "bigint") {
      return '{"ok":true,"kind":' + quote(kind) + ',"text":' + quote(kind === "undefined" ? "" : safeString(value)) + "}";
    }
    let json;
    try {
      json = JSONStringify(value);
    } catch (e) {
      return failure("TypeError", "the returned value cannot be read as JSON: " + safeMessage(e), "");
    }
    if (json === undefined) return '{"ok":true,"kind":"undefined","text":""}';
    return '{"ok":true,"json":' + json + "}";
  }

  // The `then` of a returned value, if it is a thenable (reading it may throw).
  function thenOf(value) {
    if (value === null || (typeof value !== "object" && typeof value !== "function")) return undefined;
    const then = value.then;
    return typeof then === "function" ? then : undefined;
  }

  let pending = false; // an async call's promise has not settled yet

  async function settle(result) {
    let outcome;
    try {
      outcome = success(await result);
    } catch (e) {
      outcome = thrown(e);
    }
    pending = false;
    try {
      host("settled", marked(outcome));
    } catch (e) { // the outcome could not be sent (too large for memory...): say so
      host("settled", marked(failure("Error", "the result could not be sent: " + safeMessage(e), "")));
    }
  }

  // Host calls are synchronous, so once the microtask queue is empty only a timer can
  // settle a pending promise. A 1 ms wait is a macrotask: it runs after the microtasks.
  async function stuckCheck() {
    await sleep(1);
    if (pending && liveTimers === 0) host("stuck", null);
  }

  function afterTimer() {
    if (pending && liveTimers === 0) stuckCheck();
  }

  // An outcome with "left":true when the invocation leaves timers or waits behind.
  function marked(outcome) {
    return leftBehind() ? '{"left":true,' + slice(outcome, 1) : outcome;
  }

  const module = { exports: {} };
  const exportsOf = () => module.exports;

  // Loading: the module script's last step. Failure while loading is reported, not thrown.
  function loaded(error) {
    if (error !== undefined) return thrown(error, '"loading":true,');
    return null;
  }

  function exportsShape() {
    const exported = exportsOf();
    const kind = exported === null ? "null" : ArrayIsArray(exported) ? "array" : typeof exported;
    if (kind !== "object" && kind !== "function") return '{"kind":' + quote(kind) + ',"names":[]}';
    const names = ObjectKeys(exported);
    let items = "";
    for (let i = 0; i < names.length; i++) {
      const value = exported[names[i]];
      const itemKind = value === null ? "null" : ArrayIsArray(value) ? "array" : typeof value;
      items += (i ? "," : "") + '{"name":' + quote(names[i]) + ',"kind":' + quote(itemKind) + "}";
    }
    return '{"kind":"object","names":[' + items + "]}";
  }

  // Calls target.apply(self, [ctx, ...JSON.parse(payload)]), after deep-freezing the
  // read-only fields listed in `frozen` ([argument index, key] pairs, JSON). Returns a JSON
  // outcome, or {"pending":true} when the call returned a promise; its settlement then
  // arrives through the "settled" host call.
  function invoke(target, self, payload, frozen) {
    try {
      const args = JSONParse(payload);
      const fields = JSONParse(frozen);
      for (let i = 0; i < fields.length; i++) deepFreeze(args[fields[i][0]][fields[i][1]]);
      const argv = [ctx];
      for (let i = 0; i < args.length; i++) ObjectDefineProperty(argv, i + 1, own(args[i]));
      const result = ReflectApply(target, self, argv);
      if (thenOf(result) !== undefined) {
        pending = true;
        settle(result);
        stuckCheck();
        return '{"pending":true}';
      }
      return marked(success(result));
    } catch (e) {
      return marked(thrown(e));
    }
  }

  // A rehearsal of an invocation's path (a host call, an argument, a frozen field, a
  // result) through a function of the bridge's own, so that V8 compiles that path
  // and fills its inline caches while the realm is prepared, not during the first real
  // invocation (in a fresh realm that first pass costs ~0.25 ms). Not a throw: reading a
  // stack costs more than it saves (V8 recomputes source positions). Touches nothing an
  // extension sees: no export runs, no timer starts, the host answers "warm" with nothing.
  function rehearse(c, call, result) {
    try { host("warm", { __proto__: null, text: "é" }); } catch (e) { /* answered or not: warm */ }
    return call.arguments && result.text ? { text: result.text + c.constructor.name } : undefined;
  }
  const REHEARSAL = '[{"id":"w","name":"w","arguments":{"a":"é"}},{"text":"t","isError":false}]';

  const rienda = ObjectFreeze({
    warm() {
      invoke(rehearse, undefined, REHEARSAL, '[[0,"arguments"]]');
      return "warm";
    },
    module,
    loaded,
    // Runs module.exports[name] (see invoke).
    call(name, payload, frozen) {
      let exported, target;
      try {
        exported = exportsOf();
        target = exported[name];
      } catch (e) {
        return marked(thrown(e));
      }
      return invoke(target, exported, payload, frozen);
    },
    // The shape of module.exports, for loading: {kind, names: [{name, kind}]}.
    shape() {
      try {
        return exportsShape();
      } catch (e) {
        return thrown(e, '"loading":true,');
      }
    },
    // JSON of a data export (description, parameters): {"json": ...} or {"error": text}.
    exportValue(name) {
      try {
        const json = JSONStringify(exportsOf()[name]);
        return json === undefined ? '{"json":null}' : '{"json":' + json + "}";
      } catch (e) {
        return '{"error":' + quote(safeMessage(e)) + "}";
      }
    },
  });
  ObjectDefineProperty(global, "__rienda", {
    __proto__: null, writable: false, configurable: false, enumerable: false, value: rienda,
  });
  // What the kernel calls to run an export (in a realm, through the realm's boundary);
  // with a null name, the rehearsal.
  return (name, payload, frozen) => name === null ? rienda.warm() : rienda.call(name, payload, frozen);
})
