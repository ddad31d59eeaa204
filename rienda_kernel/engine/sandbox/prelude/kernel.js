// Rienda's kernel: evaluated first in the main context of every isolate. It owns the
// mailbox and the doorbell (the one synchronous path into Python, see isolate.py) and, in
// an isolate that hosts realms (realms.py), the realms: each invocation runs in a
// ShadowRealm of its own (a fresh global object and fresh intrinsics, nothing an earlier
// invocation touched), with the prelude (bridge.js + outcomes.js) and its module already
// evaluated in it. Only strings and functions cross a realm's boundary: a realm reaches
// the host through the transport function the kernel gave it, tagged with the realm's id
// (Python answers only the live invocation's realm), and the kernel reaches the realm
// through the `call` function its prelude returned.
//
// In an isolate without realms (loading a module, the bridge's tests) the prelude is
// installed in the main context itself with the realm id 0, and extension code runs
// beside the kernel: the kernel, like the prelude, uses only what it captured before any
// extension ran.
"use strict";
(function (global) {
  const ReflectApply = Reflect.apply;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectFreeze = Object.freeze;
  const FunctionBind = Function.prototype.bind;
  const FunctionCall = Function.prototype.call;
  const StringCtor = String;
  const StringFromCharCode = String.fromCharCode;
  const StringCharCodeAt = String.prototype.charCodeAt;
  const SharedArrayBufferCtor = SharedArrayBuffer;
  const Int32ArrayCtor = Int32Array;
  const Uint16ArrayCtor = Uint16Array;
  const MathMin = Math.min;
  const JSONStringify = JSON.stringify;
  const MapCtor = Map;
  const MapGet = Map.prototype.get;
  const MapSet = Map.prototype.set;
  const MapDelete = Map.prototype.delete;
  const ShadowRealmCtor = typeof ShadowRealm === "function" ? ShadowRealm : undefined;
  const RealmEvaluate = ShadowRealmCtor ? ShadowRealmCtor.prototype.evaluate : undefined;
  ObjectFreeze(Object.getPrototypeOf(Uint16Array.prototype));
  ObjectFreeze(Uint16Array.prototype);
  ObjectFreeze(Int32Array.prototype);

  const uncurry = (fn) => ReflectApply(FunctionBind, FunctionCall, [fn]);
  const charCodeAt = uncurry(StringCharCodeAt);
  const mapGet = uncurry(MapGet);
  const mapSet = uncurry(MapSet);
  const mapDelete = uncurry(MapDelete);
  const evaluateIn = RealmEvaluate ? uncurry(RealmEvaluate) : undefined;

  // -- the mailbox ----------------------------------------------------------------------
  const MAILBOX_BYTES = __RIENDA_MAILBOX_BYTES__;
  const HEADER_INTS = 4; // [kind, total code units, chunk code units, unused]
  const KIND_REQUEST = 1;
  const KIND_MORE = 2;
  const READ_SLICE = 8192;
  const mailbox = new SharedArrayBufferCtor(MAILBOX_BYTES);
  const header = new Int32ArrayCtor(mailbox, 0, HEADER_INTS);
  const data = new Uint16ArrayCtor(mailbox, HEADER_INTS * 4);
  const capacity = data.length;
  let ring = null; // the doorbell: a synchronous call into Python, installed by isolate.py

  // Writes the concatenation of `pieces` (an array literal of strings), in chunks of the
  // mailbox's capacity, without building the concatenated string.
  function writeRequest(pieces) {
    let total = 0;
    for (let p = 0; p < pieces.length; p++) total += pieces[p].length;
    let n = 0;
    for (let p = 0; p < pieces.length; p++) {
      const piece = pieces[p];
      for (let i = 0; i < piece.length; i++) {
        if (n === capacity) { send(total, n); n = 0; }
        data[n++] = charCodeAt(piece, i);
      }
    }
    header[0] = KIND_REQUEST;
    header[1] = total;
    header[2] = n;
  }

  function send(total, n) { // a full chunk, more to come
    header[0] = KIND_REQUEST;
    header[1] = total;
    header[2] = n;
    ring();
  }

  function readChunk() {
    const n = header[2];
    let text = "";
    for (let i = 0; i < n; i += READ_SLICE) {
      const view = new Uint16ArrayCtor(mailbox, HEADER_INTS * 4 + i * 2, MathMin(READ_SLICE, n - i));
      text += ReflectApply(StringFromCharCode, null, view);
    }
    return text;
  }

  function readReply() {
    const total = header[1];
    let text = readChunk();
    while (text.length < total) {
      header[0] = KIND_MORE;
      ring();
      text += readChunk();
    }
    return text;
  }

  // The transport of realm `id`, in two steps so that a large request's text is garbage
  // before the reply is read: transport(op, args) writes a host call (its op and its
  // arguments as JSON texts) for Python as '[id,"op",args]'; transport() then rings and
  // returns the reply's JSON text ({"value": ...} or {"error": ...}).
  function transport(id) {
    const tag = "[" + StringCtor(id) + ",";
    return (op, args) => {
      if (op !== undefined) {
        writeRequest([tag, op, ",", args, "]"]);
        return "";
      }
      ring();
      return readReply();
    };
  }

  // -- realms ---------------------------------------------------------------------------
  let prelude = null; // the prelude's source (bridge.js + outcomes.js): a function of a transport
  const realms = new MapCtor(); // realm id -> its prelude's `call` (a wrapped function)

  function failure(message) {
    return '{"ok":false,"loading":true,"error":{"name":"Error","message":' + JSONStringify(message) + ',"stack":""}}';
  }

  ObjectDefineProperty(global, "__kernel", {
    __proto__: null,
    writable: false,
    configurable: false,
    enumerable: false,
    value: ObjectFreeze({
      installDoorbell(fn) { if (ring === null) ring = fn; },
      mailbox,
      transport,
      // Rings once with op "hello" (Python installs the realm factory on this thread).
      hello() { writeRequest(['[0,"hello",null]']); ring(); return readReply(); },
      setPrelude(text) { if (prelude === null) prelude = text; },
      // A fresh realm for invocation `id`, with the prelude installed. Returns null when
      // it is ready, else the outcome of its failure (JSON text).
      create(id) {
        try {
          const realm = new ShadowRealmCtor();
          const install = evaluateIn(realm, prelude);
          mapSet(realms, id, { __proto__: null, realm, call: install(transport(id)) });
        } catch (e) {
          mapDelete(realms, id);
          return failure("the realm could not be prepared: " + StringCtor(e && e.message));
        }
        return null;
      },
      // Evaluates `moduleScript` (the module wrapped by inprocess.py, ending in `null`) in
      // realm `id`, then rehearses a call there. Returns null when the realm is ready, else
      // the outcome of its failure (JSON text; the realm is forgotten).
      load(id, moduleScript) {
        const entry = mapGet(realms, id);
        let loaded;
        try {
          loaded = evaluateIn(entry.realm, moduleScript);
          const call = entry.call; // a wrapped function: called with no `this` (an object
          if (loaded === null) call(null, "", ""); // as `this` would not cross the boundary)
        } catch (e) {
          loaded = failure("the module could not be loaded in a realm: " + StringCtor(e && e.message));
        }
        if (loaded !== null) mapDelete(realms, id);
        return loaded;
      },
      prepare(id, moduleScript) {
        const created = this.create(id);
        return created === null ? this.load(id, moduleScript) : created;
      },
      // Runs export `name` in realm `id` (once: the realm is forgotten), returning the
      // prelude's outcome (JSON text).
      invoke(id, name, payload, frozen) {
        const entry = mapGet(realms, id);
        mapDelete(realms, id);
        if (entry === undefined) return failure("no prepared realm " + StringCtor(id));
        const call = entry.call;
        return call(name, payload, frozen);
      },
      discard(id) { mapDelete(realms, id); },
    }),
  });
})(globalThis);
