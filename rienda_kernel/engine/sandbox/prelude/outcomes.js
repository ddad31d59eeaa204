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
      host("settled", outcome);
    } catch (e) { // the outcome could not be sent (too large for memory...): say so
      host("settled", failure("Error", "the result could not be sent: " + safeMessage(e), ""));
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

  ObjectDefineProperty(global, "__rienda", {
    __proto__: null,
    writable: false,
    configurable: false,
    enumerable: false,
    value: ObjectFreeze({
      installDoorbell(fn) { if (ring === null) ring = fn; },
      // Runs the host-call path once while the isolate is prepared, so V8 compiles it then
      // rather than during the first real invocation. Touches no state an extension sees.
      warm() {
        host("warm", { __proto__: null, text: "é" });
        success({ a: [1, "b", null] });
        thrown(new ErrorCtor("warm"));
        return "warm";
      },
      mailbox,
      module,
      loaded,
      // Calls module.exports[name](ctx, ...JSON.parse(payload)), after deep-freezing the
      // read-only fields listed in `frozen` ([argument index, key] pairs, JSON). Returns a
      // JSON outcome, or {"pending":true} when the call returned a promise; its settlement
      // then arrives through the "settled" host call.
      call(name, payload, frozen) {
        try {
          const args = JSONParse(payload);
          const fields = JSONParse(frozen);
          for (let i = 0; i < fields.length; i++) deepFreeze(args[fields[i][0]][fields[i][1]]);
          const argv = [ctx];
          for (let i = 0; i < args.length; i++) ObjectDefineProperty(argv, i + 1, own(args[i]));
          const exported = exportsOf();
          const result = ReflectApply(exported[name], exported, argv);
          if (thenOf(result) !== undefined) {
            pending = true;
            settle(result);
            stuckCheck();
            return '{"pending":true}';
          }
          return success(result);
        } catch (e) {
          return thrown(e);
        }
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
    }),
  });
})(globalThis);
