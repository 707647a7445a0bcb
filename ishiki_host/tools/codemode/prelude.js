// The codemode prelude (see _prelude.py). Loaded as ONE line: whole-line comments are dropped and every
// statement must end with a semicolon. It never calls into Python; the worker polls host("poll").
(() => {
  "use strict";
  const g = globalThis;
  // Captured now, so a program that patches the builtins harms only itself.
  const stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply;
  const isArray = Array.isArray, objectKeys = Object.keys, freeze = Object.freeze;
  const ErrorC = Error, TypeErrorC = TypeError, PromiseC = Promise, StringC = String, MapC = Map;
  const promiseThen = PromiseC.prototype.then;
  const collections = [[Map, "Map"], [Set, "Set"], [WeakMap, "WeakMap"], [WeakSet, "WeakSet"]];
  const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  const label = (name) => identifier.test(name) ? "tools." + name : "tools[" + stringify(name) + "]";
  const keyPath = (key) => identifier.test(key) ? "." + key : "[" + stringify(key) + "]";
  const typeName = (v) => v === null ? "null" : isArray(v) ? "an array" : "a " + typeof v;
  const refuse = (path, what) => { throw new TypeErrorC(path + " is " + what); };

  // JSON.stringify silently drops functions and turns Maps into {}: refuse them instead, naming the path.
  const walkChildren = (v, path, ancestors, paths) => {
    if (isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (v[i] !== undefined) walk(v[i], path + "[" + i + "]", ancestors, paths);
      }
      return;
    }
    for (const k of objectKeys(v)) {
      if (v[k] !== undefined) walk(v[k], path + keyPath(k), ancestors, paths);
    }
  };
  const walk = (v, path, ancestors, paths) => {
    const t = typeof v;
    if (t === "function") refuse(path, "a function");
    if (t === "bigint") refuse(path, "a BigInt; convert it with String() or Number()");
    if (t === "symbol") refuse(path, "a Symbol");
    if (v === null || t !== "object") return;
    if (v instanceof PromiseC) refuse(path, "a Promise; did you forget await?");
    for (const [C, n] of collections) {
      if (v instanceof C) refuse(path, "a " + n + "; convert it first (Object.fromEntries(map), [...set])");
    }
    if (typeof v.toJSON === "function") return;
    const at = ancestors.indexOf(v);
    if (at >= 0) refuse(path, "a cycle: it refers back to " + paths[at]);
    ancestors.push(v);
    paths.push(path);
    walkChildren(v, path, ancestors, paths);
    ancestors.pop();
    paths.pop();
  };
  const toJson = (v, root) => {
    if (v === undefined) throw new TypeErrorC(root + " is undefined");
    walk(v, root, [], []);
    return stringify(v);
  };

  const errorJson = (name, message, stack) => stringify({name: name, message: message, stack: stack});
  const describe = (e) => {
    try {
      if (e instanceof ErrorC) return errorJson(StringC(e.name), StringC(e.message), StringC(e.stack || ""));
      let text = typeof e === "string" ? e : undefined;
      try { if (text === undefined) text = stringify(e); } catch (_) { text = undefined; }
      if (text === undefined) text = StringC(e);
      return errorJson("Uncaught", text, "");
    } catch (_) {
      return errorJson("Uncaught", "a value that cannot be shown", "");
    }
  };

  const calls = [], logs = [];
  let outcome = null, logChars = 0, maxLogChars = 0, nextId = 0;
  const finish = (kind, text) => { if (outcome === null) outcome = [kind, text]; };

  const show = (x) => {
    if (typeof x === "string") return x;
    try { const s = stringify(x); if (s !== undefined) return s; } catch (_) {}
    try { return StringC(x); } catch (_) { return "[unprintable]"; }
  };
  const logger = (level) => (...args) => {
    if (logChars > maxLogChars) return;
    const line = (level === "log" ? "" : "[" + level + "] ") + args.map(show).join(" ");
    logChars += line.length;
    logs.push(logChars > maxLogChars ? "[logs truncated]" : line);
  };
  g.console = freeze({
    log: logger("log"), info: logger("info"), warn: logger("warn"), error: logger("error"), debug: logger("debug"),
  });

  // The Error is made at call time so its stack points at the program line that called the tool.
  const pending = new MapC();
  const invoke = (name, input) => {
    const error = new ErrorC("");
    return new PromiseC((resolve, reject) => {
      const refuseInput = (why) => reject(new TypeErrorC(label(name) + ": " + why));
      let text = "{}";
      if (input !== undefined) {
        if (input === null || typeof input !== "object" || isArray(input)) {
          return refuseInput("input must be an object, got " + typeName(input));
        }
        try { text = toJson(input, "input"); } catch (e) { return refuseInput(e.message); }
      }
      const id = ++nextId;
      calls.push([id, name, text]);
      pending.set(id, [resolve, (message) => { error.message = message; reject(error); }]);
    });
  };
  const settle = (id, ok, payload) => {
    const entry = pending.get(id);
    if (entry === undefined) return;
    pending.delete(id);
    if (!ok) return entry[1](payload);
    let value;
    try { value = parse(payload); } catch (e) { return entry[1]("the tool's output is not JSON: " + e.message); }
    entry[0](value);
  };
  const poll = () => {
    if (calls.length === 0 && logs.length === 0 && outcome === null) return null;
    return stringify({calls: calls.splice(0), logs: logs.splice(0), outcome: outcome});
  };
  const host = (op, id, ok, payload) => op === "poll" ? poll() : settle(id, ok, payload);

  return (namesJson, program, maxLog) => {
    maxLogChars = maxLog;
    const tools = {};
    for (const name of parse(namesJson)) tools[name] = (input) => invoke(name, input);
    freeze(tools);
    if (typeof program !== "function") {
      finish("thrown", errorJson("SyntaxError", "the code must be the body of an async function", ""));
      return host;
    }
    const onValue = (value) => {
      let text;
      try { text = toJson(value, "result"); } catch (e) { return finish("result", describe(e)); }
      finish("ok", text);
    };
    apply(promiseThen, program(tools), [onValue, (e) => finish("thrown", describe(e))]);
    return host;
  };
})()
