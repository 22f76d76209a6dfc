// OpenWhisk's nodejs action contract on QuickJS-NG, evaluated once per action before its code.
// `host` is the Rust side (main.rs): write(fd, text), evalScript(source, filename) and
// httpGet(url) (the executor's HTTP GET: {code, status, body}).
// Everything here ends up in the action's snapshot; nothing reads the environment or the
// clock's absolute value at this point.
(function (host) {
    'use strict';

    // --- console: log/info/debug to stdout, error/warn/trace to stderr, as Node does ------
    // `Name: message` and the frames of the action's code (not this prelude's), as V8 writes it.
    function v8Stack(error) {
        const head = `${error.name}: ${error.message}`;
        const frames = typeof error.stack === 'string'
            ? error.stack.split('\n').filter((f) => f.trim() !== '' && !f.includes('(prelude.js:'))
                .join('\n')
            : '';
        return frames.startsWith(head) ? frames : frames ? `${head}\n${frames}` : head;
    }
    function inspect(value) {
        if (typeof value === 'string') return value;
        if (value instanceof Error) return v8Stack(value);
        if (typeof value === 'function') return `[Function: ${value.name || 'anonymous'}]`;
        if (value === undefined || typeof value === 'symbol' || typeof value === 'bigint') {
            return String(value);
        }
        try {
            const text = JSON.stringify(value);
            return text === undefined ? String(value) : text;
        } catch (_) {
            return String(value);
        }
    }
    const line = (fd) => (...args) => host.write(fd, args.map(inspect).join(' '));
    globalThis.console = {
        log: line(1), info: line(1), debug: line(1),
        error: line(2), warn: line(2), trace: line(2),
    };

    // --- timers: run by main.rs between the promise jobs, by sleeping until the next one ----
    const timers = new Map();
    let nextTimerId = 1;
    function addTimer(callback, delay, args, every) {
        if (typeof callback !== 'function') throw new TypeError('the callback must be a function');
        const id = nextTimerId++;
        const ms = Math.max(0, Number(delay) || 0);
        timers.set(id, { callback, args, due: Date.now() + ms, every: every ? ms : -1 });
        return id;
    }
    globalThis.setTimeout = (f, ms, ...args) => addTimer(f, ms, args, false);
    globalThis.setInterval = (f, ms, ...args) => addTimer(f, ms, args, true);
    globalThis.setImmediate = (f, ...args) => addTimer(f, 0, args, false);
    globalThis.clearTimeout = globalThis.clearInterval = globalThis.clearImmediate =
        (id) => { timers.delete(id); };
    if (typeof globalThis.queueMicrotask !== 'function') {
        globalThis.queueMicrotask = (f) => { Promise.resolve().then(f); };
    }

    // --- fetch: GET through the executor, for actions annotated net_access -------------------
    class Headers {
        get() { return null; }
        has() { return false; }
        forEach() {}
    }
    class Response {
        constructor(url, status, body) {
            this.url = url;
            this.status = status;
            this.ok = status >= 200 && status < 300;
            this.statusText = '';
            this.headers = new Headers();
            this.redirected = false;
            this.type = 'basic';
            this.bodyUsed = false;
            Object.defineProperty(this, 'body_', { value: body });
        }
        text() { this.bodyUsed = true; return Promise.resolve(this.body_); }
        json() { return this.text().then((text) => JSON.parse(text)); }
    }
    globalThis.Headers = Headers;
    globalThis.Response = Response;
    // Node's fetch for GET: the response once the executor has it (the activation waits
    // without its CPU); a TypeError `fetch failed` (the reason as its cause) when the request
    // cannot be made: no net_access, a host the operator does not allow, a network error.
    globalThis.fetch = function fetch(resource, options) {
        return new Promise((resolve) => {
            const url = String(resource && typeof resource === 'object' && 'url' in resource
                ? resource.url : resource);
            const method = String((options && options.method) || 'GET').toUpperCase();
            if (method !== 'GET') {
                throw new TypeError(`fetch: the executor makes GET requests only, not ${method}`);
            }
            const reply = host.httpGet(url);
            if (reply.code !== 0) {
                const error = new TypeError(`fetch failed: ${reply.body}`);
                error.cause = new Error(reply.body);
                throw error;
            }
            resolve(new Response(url, reply.status, reply.body));
        });
    };

    // --- process ------------------------------------------------------------------------------
    globalThis.process = {
        env: {},
        argv: ['node', 'action'],
        platform: 'wasi',
        version: 'v20.0.0',
        versions: { quickjs: 'ng' },
        nextTick: (f, ...args) => queueMicrotask(() => f(...args)),
    };
    function setEnv(env) {
        for (const name of Object.keys(process.env)) delete process.env[name];
        Object.assign(process.env, env);
    }

    // --- require: the action's own files and bundled node_modules; no Node built-ins ---------
    const BUILTINS = new Set(('assert async_hooks buffer child_process cluster console constants ' +
        'crypto dgram diagnostics_channel dns domain events fs http http2 https inspector module ' +
        'net os path perf_hooks process punycode querystring readline repl stream string_decoder ' +
        'sys timers tls trace_events tty url util v8 vm wasi worker_threads zlib').split(' '));
    const isBuiltin = (name) => name.startsWith('node:') || BUILTINS.has(name.split('/')[0]);
    const builtinRefusal = (name) =>
        `the action requires the Node.js module '${name}', which actions on the WebAssembly ` +
        'executor cannot use (it has no file system, processes or sockets)';
    function notFound(name, from) {
        const error = new Error(`Cannot find module '${name}'` + (from ? ` from '${from}'` : ''));
        error.code = 'MODULE_NOT_FOUND';
        return error;
    }

    let files = {};
    const loaded = new Map();
    function normalize(path) {
        const parts = [];
        for (const part of path.split('/')) {
            if (part === '' || part === '.') continue;
            if (part === '..') parts.pop(); else parts.push(part);
        }
        return parts.join('/');
    }
    const dirname = (path) => path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
    const has = (path) => Object.prototype.hasOwnProperty.call(files, path);
    function asFile(path) {
        for (const candidate of [path, `${path}.js`, `${path}.cjs`, `${path}.json`]) {
            if (candidate !== '' && has(candidate)) return candidate;
        }
        return null;
    }
    function asDirectory(path) {
        const prefix = path === '' ? '' : `${path}/`;
        const manifest = `${prefix}package.json`;
        if (has(manifest)) {
            let main;
            try {
                main = JSON.parse(files[manifest]).main;
            } catch (e) {
                throw new Error(`${manifest} is not valid JSON: ${e.message}`);
            }
            if (typeof main === 'string' && main !== '') {
                const target = normalize(prefix + main);
                const found = asFile(target) || asIndex(target);
                if (found) return found;
            }
        }
        return asIndex(path);
    }
    function asIndex(path) {
        const prefix = path === '' ? '' : `${path}/`;
        for (const name of ['index.js', 'index.cjs', 'index.json']) {
            if (has(prefix + name)) return prefix + name;
        }
        return null;
    }
    function resolve(name, fromDir) {
        if (name.startsWith('./') || name.startsWith('../') || name.startsWith('/') ||
            name === '.' || name === '..') {
            const path = normalize(name.startsWith('/') ? name : `${fromDir}/${name}`);
            return asFile(path) || asDirectory(path);
        }
        for (let dir = fromDir; ; dir = dirname(dir)) {
            const path = normalize(`${dir}/node_modules/${name}`);
            const found = asFile(path) || asDirectory(path);
            if (found) return found;
            if (dir === '') return null;
        }
    }
    function makeRequire(fromDir) {
        return function require(name) {
            if (typeof name !== 'string') throw new TypeError('the module name must be a string');
            if (isBuiltin(name)) throw notFound(name, null);
            const path = resolve(name, fromDir);
            if (path === null) throw notFound(name, fromDir || '.');
            return load(path);
        };
    }
    function load(path) {
        const cached = loaded.get(path);
        if (cached) return cached.exports;
        const module = { exports: {}, id: path, filename: `/action/${path}`, loaded: false };
        loaded.set(path, module);
        if (path.endsWith('.json')) {
            module.exports = JSON.parse(files[path]);
        } else {
            const wrapper = host.evalScript(
                `(function (exports, require, module, __filename, __dirname) {${files[path]}\n})`,
                path);
            wrapper.call(module.exports, module.exports, makeRequire(dirname(path)), module,
                module.filename, `/action/${dirname(path)}`);
        }
        module.loaded = true;
        return module.exports;
    }
    // Requires of Node built-ins refuse the action at /init, whichever code path would reach them.
    function refuseBuiltins(sources) {
        const pattern = /\brequire\s*\(\s*(['"`])([^'"`]+)\1\s*\)/g;
        for (const source of sources) {
            for (const match of source.matchAll(pattern)) {
                if (isBuiltin(match[2])) throw new Error(builtinRefusal(match[2]));
            }
        }
    }

    // --- init: the action's code evaluated, its main found ----------------------------------
    let main = null;
    function lookup(root, dotted) {
        let value = root;
        for (const part of dotted.split('.')) {
            if (value === null || value === undefined) return undefined;
            value = value[part];
        }
        return value;
    }
    function init(doc) {
        setEnv(doc.env || {});
        const name = doc.main || 'main';
        if (typeof doc.code === 'string') {
            refuseBuiltins([doc.code]);
            files = {};
            globalThis.module = { exports: {} };
            globalThis.exports = globalThis.module.exports;
            globalThis.require = makeRequire('');
            host.evalScript(doc.code, 'action.js');
            main = [globalThis, globalThis.module.exports, globalThis.exports]
                .map((root) => lookup(root, name))
                .find((f) => typeof f === 'function');
        } else {
            files = doc.files || {};
            refuseBuiltins(Object.keys(files).filter((p) => !p.endsWith('.json')).map((p) => files[p]));
            const entry = asDirectory('');
            if (entry === null) {
                throw new Error('Zipped actions must contain either package.json with a main ' +
                    'field or index.js at the top level');
            }
            main = lookup(load(entry), name);
        }
        if (typeof main !== 'function') {
            throw new Error(`the action has no function named '${name}' (a global, or exported ` +
                'by module.exports)');
        }
    }

    // --- run: one activation --------------------------------------------------------------
    function serializeError(reason) {
        if (!reason) return {};
        if (typeof reason !== 'object') return typeof reason === 'function' ? {} : reason;
        try {
            const copy = JSON.parse(JSON.stringify(reason)) || {};
            if (reason instanceof Error) {
                copy.name = reason.name;
                copy.message = reason.message;
                copy.stack = v8Stack(reason);
                if (typeof reason.code === 'string') copy.code = reason.code;
            }
            return copy;
        } catch (e) {
            return reason instanceof Error ? reason.message : String(e.message);
        }
    }
    // {status, line}: status 0 answers 200 with the result line, 1 answers 502 with its `error`.
    function finish(value) {
        if (value === undefined) return { status: 0, line: '{}' };
        if (typeof value !== 'object') {
            console.error(`Result must be of type object but has type "${typeof value}":`, value);
            return { status: 1, line: JSON.stringify({ error: 'The action did not return a dictionary.' }) };
        }
        try {
            return { status: 0, line: JSON.stringify(value) };
        } catch (e) {
            return { status: 1, line: JSON.stringify({ error: `The action's result is not JSON: ${e.message}` }) };
        }
    }
    function run(paramsText, env) {
        setEnv(env);
        let result;
        try {
            result = main(JSON.parse(paramsText));
        } catch (e) {
            console.error(e);
            return Promise.resolve({ status: 1, line: JSON.stringify({ error: `An error has occurred: ${String(e)}` }) });
        }
        return Promise.resolve(result).then(finish,
            (reason) => ({ status: 0, line: JSON.stringify({ error: serializeError(reason) }) }));
    }
    // Milliseconds until the next timer is due, or -1 when none is set.
    function nextTimer() {
        let due = Infinity;
        for (const timer of timers.values()) due = Math.min(due, timer.due);
        return due === Infinity ? -1 : Math.max(0, due - Date.now());
    }
    function fireTimers() {
        const now = Date.now();
        const due = [...timers.entries()].filter(([, t]) => t.due <= now)
            .sort((a, b) => a[1].due - b[1].due || a[0] - b[0]);
        for (const [id, timer] of due) {
            if (!timers.has(id)) continue;
            if (timer.every >= 0) timer.due = now + timer.every; else timers.delete(id);
            timer.callback(...timer.args);
        }
    }
    return { init, run, nextTimer, fireTimers, v8Stack };
})
