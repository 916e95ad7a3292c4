// npu-emu C ABI runtime: the acl calls a CANN test program makes, on host memory, and the bridge that hands aclnn
// calls to npu_emu.aclnn in an embedded (or the already running) Python interpreter.
//
// Built by `npu-emu cabi build`, which defines NPU_EMU_PYTHON (the interpreter npu-emu was installed in) and
// NPU_EMU_SITE_DIRS (its site directories, newline separated).

#include <Python.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "cabi_internal.h"

#ifndef NPU_EMU_PYTHON
#define NPU_EMU_PYTHON ""
#endif
#ifndef NPU_EMU_SITE_DIRS
#define NPU_EMU_SITE_DIRS ""
#endif

#define EXPORT extern "C" __attribute__((visibility("default")))

struct aclTensor {
    std::vector<int64_t> view;
    std::vector<int64_t> strides;
    std::vector<int64_t> storage;
    int64_t offset;
    int32_t dtype;
    int32_t format;
    void* data;
};

struct aclIntArray {
    std::vector<int64_t> values;
};

struct aclTensorList {
    std::vector<const aclTensor*> items;
};

struct aclScalar {
    int32_t dtype;
    unsigned char bytes[16];
};

struct aclOpExecutor {
    std::string op;
    PyObject* py = nullptr;                   // the bridge's Launch, for the ops npu_emu.aclnn runs
    std::function<aclnnStatus()> native;      // or the work itself, for the data-movement helpers of this file
    uint64_t workspace = 0;
};

namespace {

struct Stream {
    aclError status = 0;     // first failure since the last synchronize
};

struct Event {
    int recorded = 0;
};

// Every object the program holds a pointer to is registered, so a stale or foreign pointer is an error status
// instead of a read through it. One lock for all tables: the calls are cheap next to an op.
std::mutex g_lock;
std::map<uintptr_t, size_t> g_device;      // aclrtMalloc: start -> usable size (the device's rounding)
const size_t kMmapFrom = static_cast<size_t>(1) << 20;
std::set<uintptr_t> g_host;                // aclrtMallocHost
std::set<const aclTensor*> g_tensors;
std::set<const aclIntArray*> g_arrays;
std::set<const aclScalar*> g_scalars;
std::set<const aclTensorList*> g_lists;
std::set<const aclOpExecutor*> g_executors;
std::set<Stream*> g_streams;
std::set<Event*> g_events;
Stream g_default_stream;
int g_initialized = 0;
int32_t g_device_id = -1;
int g_context_token = 0;

thread_local std::string t_error;

// NPU_EMU_CABI_VERBOSE=1 also prints every failure to stderr: CANN's examples print only the status
const bool g_verbose = [] {
    const char* v = std::getenv("NPU_EMU_CABI_VERBOSE");
    return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}();

void set_error(const std::string& msg) {
    t_error = msg;
    if (g_verbose) std::fprintf(stderr, "npu-emu: %s\n", msg.c_str());
}

aclError fail(aclError status, const std::string& msg) {
    set_error(msg);
    return status;
}

// bytes from p to the end of the aclrtMalloc allocation holding it; -1 when p is not device memory
long long device_extent(const void* p) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = g_device.upper_bound(a);
    if (it == g_device.begin()) return -1;
    --it;
    if (a >= it->first + it->second) {
        // one past the end of a zero-byte allocation still names it
        if (!(it->second == 0 && a == it->first)) return -1;
    }
    return static_cast<long long>(it->first + it->second - a);
}

Stream* stream_of(aclrtStream s, bool* ok) {
    *ok = true;
    if (s == nullptr) return &g_default_stream;
    Stream* st = static_cast<Stream*>(s);
    if (!g_streams.count(st)) {
        *ok = false;
        return nullptr;
    }
    return st;
}

// ---------------------------------------------------------------------------------------------------------------
// Python
// ---------------------------------------------------------------------------------------------------------------

std::once_flag g_py_once;
PyObject* g_bridge = nullptr;     // npu_emu.cabi.bridge, or null when it could not be imported
std::string g_py_error;

std::string py_error_text() {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    std::string text = "unknown Python error";
    if (value != nullptr) {
        PyObject* s = PyObject_Str(value);
        if (s != nullptr) {
            const char* c = PyUnicode_AsUTF8(s);
            if (c != nullptr) text = c;
            Py_DECREF(s);
        }
    }
    if (type != nullptr) {
        PyObject* n = PyObject_GetAttrString(type, "__name__");
        if (n != nullptr) {
            const char* c = PyUnicode_AsUTF8(n);
            if (c != nullptr) text = std::string(c) + ": " + text;
            Py_DECREF(n);
        }
    }
    PyErr_Clear();
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return text;
}

void init_python() {
    bool owned = false;
    if (!Py_IsInitialized()) {
        // The interpreter npu-emu was installed in: its executable locates the venv (pyvenv.cfg) and so its
        // site-packages. No signal handlers: Ctrl-C must stop the C program as it would without npu-emu.
        PyConfig config;
        PyConfig_InitPythonConfig(&config);
        config.install_signal_handlers = 0;
        config.parse_argv = 0;
        if (NPU_EMU_PYTHON[0] != '\0') {
            PyConfig_SetBytesString(&config, &config.executable, NPU_EMU_PYTHON);
            PyConfig_SetBytesString(&config, &config.program_name, NPU_EMU_PYTHON);
        }
        PyStatus st = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(st)) {
            g_py_error = std::string("npu-emu: cannot start Python ") + NPU_EMU_PYTHON + ": " +
                         (st.err_msg ? st.err_msg : "?");
            return;
        }
        owned = true;
    }
    PyGILState_STATE gs = PyGILState_Ensure();
    // site directories recorded at build time: a safety net should the interpreter not find its venv
    PyObject* site = PyImport_ImportModule("site");
    if (site != nullptr) {
        std::string dirs = NPU_EMU_SITE_DIRS;
        size_t start = 0;
        PyObject* sys_path = PySys_GetObject("path");  // borrowed
        while (start < dirs.size()) {
            size_t end = dirs.find('\n', start);
            if (end == std::string::npos) end = dirs.size();
            std::string d = dirs.substr(start, end - start);
            start = end + 1;
            if (d.empty()) continue;
            PyObject* ds = PyUnicode_FromString(d.c_str());
            if (ds == nullptr) { PyErr_Clear(); continue; }
            int has = sys_path ? PySequence_Contains(sys_path, ds) : 1;
            if (has == 0) {
                PyObject* r = PyObject_CallMethod(site, "addsitedir", "O", ds);
                if (r == nullptr) PyErr_Clear();
                Py_XDECREF(r);
            } else if (has < 0) {
                PyErr_Clear();
            }
            Py_DECREF(ds);
        }
        Py_DECREF(site);
    } else {
        PyErr_Clear();
    }
    g_bridge = PyImport_ImportModule("npu_emu.cabi.bridge");
    if (g_bridge == nullptr) {
        g_py_error = "npu-emu: cannot import npu_emu.cabi.bridge in " + std::string(NPU_EMU_PYTHON) + ": " +
                     py_error_text();
    }
    PyGILState_Release(gs);
    if (owned) {
        // the main thread got the GIL from the initialisation; hand it back so that any thread can take it
        PyEval_SaveThread();
    }
}

bool python_ready() {
    std::call_once(g_py_once, init_python);
    if (g_bridge == nullptr) {
        set_error(g_py_error);
        return false;
    }
    return true;
}

PyObject* tuple_of(const std::vector<int64_t>& v) {
    PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(v.size()));
    for (size_t i = 0; i < v.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(v[i]));
    return t;
}

// (address, view shape, strides, offset, aclDataType, aclFormat, storage shape, bytes to the end of its
// allocation or -1); extents are looked up before the GIL is taken (never hold both locks)
struct TensorDesc {
    const aclTensor* t;
    long long extent;
};

PyObject* tensor_object(const TensorDesc& d) {
    if (d.t == nullptr) Py_RETURN_NONE;
    const aclTensor* t = d.t;
    return Py_BuildValue("(KNNLiiNL)", (unsigned long long)reinterpret_cast<uintptr_t>(t->data),
                         tuple_of(t->view), tuple_of(t->strides), (long long)t->offset, (int)t->dtype,
                         (int)t->format, tuple_of(t->storage), d.extent);
}

// Result of a bridge call: a tuple whose first item is the status and whose last is the message.
aclnnStatus take_status(PyObject* res, const char* op) {
    if (res == nullptr) {
        set_error(std::string(op) + ": npu-emu bridge error: " + py_error_text());
        return ACLNN_ERR_INNER;
    }
    aclnnStatus status = ACLNN_ERR_INNER;
    if (PyTuple_Check(res) && PyTuple_GET_SIZE(res) >= 2) {
        status = static_cast<aclnnStatus>(PyLong_AsLong(PyTuple_GET_ITEM(res, 0)));
        const char* msg = PyUnicode_AsUTF8(PyTuple_GET_ITEM(res, PyTuple_GET_SIZE(res) - 1));
        if (msg != nullptr) {
            if (status != 0) set_error(msg);
        } else {
            PyErr_Clear();
        }
    }
    if (PyErr_Occurred()) PyErr_Clear();
    return status;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// aclnn plumbing used by the generated wrappers (aclnn_ops.cpp)
// ---------------------------------------------------------------------------------------------------------------

extern "C" aclnnStatus npu_emu_cabi_workspace(const char* op, int nargs, const npu_emu_cabi_arg* args,
                                              uint64_t* workspaceSize, aclOpExecutor** executor) {
    if (workspaceSize == nullptr || executor == nullptr) {
        set_error(std::string(op) + "GetWorkspaceSize: workspaceSize or executor is a null pointer");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    std::vector<TensorDesc> descs(nargs, TensorDesc{nullptr, -1});
    std::vector<std::vector<TensorDesc>> lists(nargs);
    std::vector<std::vector<int64_t>> arrays(nargs);
    {
        std::lock_guard<std::mutex> g(g_lock);
        for (int i = 0; i < nargs; ++i) {
            if (args[i].kind == NPU_EMU_CABI_TENSOR_LIST && args[i].p != nullptr) {
                const aclTensorList* l = static_cast<const aclTensorList*>(args[i].p);
                if (!g_lists.count(l)) {
                    set_error(std::string(op) + "GetWorkspaceSize: argument " + std::to_string(i + 1) +
                              " is not an aclTensorList made by aclCreateTensorList (or it was destroyed)");
                    return ACLNN_ERR_PARAM_INVALID;
                }
                for (size_t j = 0; j < l->items.size(); ++j) {
                    const aclTensor* t = l->items[j];
                    if (t != nullptr && !g_tensors.count(t)) {
                        set_error(std::string(op) + "GetWorkspaceSize: argument " + std::to_string(i + 1) +
                                  " holds at [" + std::to_string(j) + "] a tensor that is not a live aclTensor");
                        return ACLNN_ERR_PARAM_INVALID;
                    }
                    lists[i].push_back(TensorDesc{t, (t && t->data) ? device_extent(t->data) : -1});
                }
                continue;
            }
            if (args[i].kind == NPU_EMU_CABI_INT_ARRAY && args[i].p != nullptr) {
                const aclIntArray* a = static_cast<const aclIntArray*>(args[i].p);
                if (!g_arrays.count(a)) {
                    set_error(std::string(op) + "GetWorkspaceSize: argument " + std::to_string(i + 1) +
                              " is not an aclIntArray made by aclCreateIntArray (or it was destroyed)");
                    return ACLNN_ERR_PARAM_INVALID;
                }
                arrays[i] = a->values;
                continue;
            }
            if (args[i].kind != NPU_EMU_CABI_TENSOR || args[i].p == nullptr) continue;
            const aclTensor* t = static_cast<const aclTensor*>(args[i].p);
            if (!g_tensors.count(t)) {
                set_error(std::string(op) + "GetWorkspaceSize: argument " + std::to_string(i + 1) +
                          " is not an aclTensor made by aclCreateTensor (or it was destroyed)");
                return ACLNN_ERR_PARAM_INVALID;
            }
            descs[i] = TensorDesc{t, t->data ? device_extent(t->data) : -1};
        }
    }
    if (!python_ready()) return ACLNN_ERR_INNER;
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject* tup = PyTuple_New(nargs);
    for (int i = 0; i < nargs; ++i) {
        PyObject* v = nullptr;
        switch (args[i].kind) {
            case NPU_EMU_CABI_TENSOR: v = tensor_object(descs[i]); break;
            case NPU_EMU_CABI_INT_ARRAY:
                if (args[i].p == nullptr) {
                    Py_INCREF(Py_None);
                    v = Py_None;
                } else {
                    v = tuple_of(arrays[i]);
                }
                break;
            case NPU_EMU_CABI_TENSOR_LIST:
                if (args[i].p == nullptr) {
                    Py_INCREF(Py_None);
                    v = Py_None;
                } else {
                    v = PyTuple_New(static_cast<Py_ssize_t>(lists[i].size()));
                    for (size_t j = 0; j < lists[i].size(); ++j)
                        PyTuple_SET_ITEM(v, static_cast<Py_ssize_t>(j), tensor_object(lists[i][j]));
                }
                break;
            case NPU_EMU_CABI_INT: v = PyLong_FromLongLong(args[i].i); break;
            case NPU_EMU_CABI_DOUBLE: v = PyFloat_FromDouble(args[i].d); break;
            case NPU_EMU_CABI_BOOL: v = PyBool_FromLong(args[i].i != 0); break;
            case NPU_EMU_CABI_STR:
                if (args[i].p == nullptr) {
                    Py_INCREF(Py_None);
                    v = Py_None;
                } else {
                    v = PyUnicode_DecodeUTF8(static_cast<const char*>(args[i].p),
                                             strlen(static_cast<const char*>(args[i].p)), "replace");
                }
                break;
            default: Py_INCREF(Py_None); v = Py_None;
        }
        PyTuple_SET_ITEM(tup, i, v);
    }
    PyObject* res = PyObject_CallMethod(g_bridge, "workspace", "sN", op, tup);
    aclnnStatus status = take_status(res, op);
    aclOpExecutor* ex = nullptr;
    if (status == 0 && res != nullptr && PyTuple_GET_SIZE(res) == 4) {
        ex = new aclOpExecutor();
        ex->op = op;
        ex->workspace = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(res, 1));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            ex->workspace = 0;
        }
        ex->py = PyTuple_GET_ITEM(res, 2);
        Py_INCREF(ex->py);
    }
    Py_XDECREF(res);
    PyGILState_Release(gs);
    if (ex == nullptr) {
        if (status == 0) status = ACLNN_ERR_INNER;
        return status;
    }
    {
        std::lock_guard<std::mutex> g(g_lock);
        g_executors.insert(ex);
    }
    *workspaceSize = ex->workspace;
    *executor = ex;
    return ACLNN_SUCCESS;
}

namespace {

void drop_executor(aclOpExecutor* ex) {
    PyGILState_STATE gs = PyGILState_Ensure();
    Py_XDECREF(ex->py);
    PyGILState_Release(gs);
    delete ex;
}

}  // namespace

extern "C" aclnnStatus npu_emu_cabi_run(const char* op, void* workspace, uint64_t workspaceSize,
                                        aclOpExecutor* executor, aclrtStream stream) {
    if (executor == nullptr) {
        set_error(std::string(op) + ": executor is a null pointer; call " + op +
                  "GetWorkspaceSize first and check its status");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    Stream* st = nullptr;
    {
        std::lock_guard<std::mutex> g(g_lock);
        if (!g_executors.count(executor)) {
            set_error(std::string(op) + ": executor is not one GetWorkspaceSize returned, or it has already run");
            return ACLNN_ERR_PARAM_INVALID;
        }
        if (executor->op != op) {
            set_error(std::string(op) + ": the executor was made by " + executor->op + "GetWorkspaceSize");
            return ACLNN_ERR_PARAM_INVALID;
        }
        bool ok;
        st = stream_of(stream, &ok);
        if (!ok) {
            set_error(std::string(op) + ": stream is not a live aclrtCreateStream stream");
            return ACLNN_ERR_PARAM_INVALID;
        }
        if (executor->workspace > 0) {
            if (workspace == nullptr) {
                set_error(std::string(op) + ": workspace is a null pointer but GetWorkspaceSize asked for " +
                          std::to_string(executor->workspace) + " bytes; aclrtMalloc them");
                return ACLNN_ERR_PARAM_NULLPTR;
            }
            if (workspaceSize < executor->workspace) {
                set_error(std::string(op) + ": workspaceSize " + std::to_string(workspaceSize) +
                          " is smaller than the " + std::to_string(executor->workspace) +
                          " bytes GetWorkspaceSize asked for");
                return ACLNN_ERR_PARAM_INVALID;
            }
            long long ext = device_extent(workspace);
            if (ext >= 0 && static_cast<unsigned long long>(ext) < executor->workspace) {
                set_error(std::string(op) + ": the workspace allocation holds " + std::to_string(ext) +
                          " bytes from the given address; GetWorkspaceSize asked for " +
                          std::to_string(executor->workspace));
                return ACLNN_ERR_PARAM_INVALID;
            }
        }
        // an executor runs once (CANN frees it after the second phase)
        g_executors.erase(executor);
    }
    if (executor->native) {
        aclnnStatus status = executor->native();
        delete executor;
        std::lock_guard<std::mutex> g(g_lock);
        if (status != 0 && st->status == 0) st->status = status;
        return status;
    }
    if (!python_ready()) {
        drop_executor(executor);
        return ACLNN_ERR_INNER;
    }
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject* res = PyObject_CallMethod(g_bridge, "run", "sOK", op, executor->py,
                                        (unsigned long long)workspaceSize);
    aclnnStatus status = take_status(res, op);
    Py_XDECREF(res);
    Py_XDECREF(executor->py);
    executor->py = nullptr;
    PyGILState_Release(gs);
    delete executor;
    // the work ran at launch; the stream keeps its first failure for aclrtSynchronizeStream
    std::lock_guard<std::mutex> g(g_lock);
    if (status != 0 && st->status == 0) st->status = status;
    return status;
}

// ---------------------------------------------------------------------------------------------------------------
// acl runtime
// ---------------------------------------------------------------------------------------------------------------

EXPORT const char* aclGetRecentErrMsg(void) { return t_error.c_str(); }

EXPORT size_t aclDataTypeSize(aclDataType t) {
    switch (t) {
        case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
        case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: case ACL_HIFLOAT8: case ACL_FLOAT8_E5M2:
        case ACL_FLOAT8_E4M3FN: case ACL_FLOAT8_E8M0: return 1;
        case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
        case ACL_COMPLEX128: return 16;
        default: return 0;
    }
}

EXPORT aclError aclInit(const char* configPath) {
    (void)configPath;
    std::lock_guard<std::mutex> g(g_lock);
    if (g_initialized) return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialised");
    g_initialized = 1;
    return ACL_SUCCESS;
}

EXPORT aclError aclFinalize(void) {
    // Python stays up: numpy and numba cannot be re-initialised in one process
    std::lock_guard<std::mutex> g(g_lock);
    g_initialized = 0;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtSetDevice(int32_t deviceId) {
    if (deviceId != 0)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtSetDevice: npu-emu has one device, id 0; got " +
                                                 std::to_string(deviceId));
    g_device_id = deviceId;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtResetDevice(int32_t deviceId) {
    if (deviceId != 0)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtResetDevice: npu-emu has one device, id 0; got " +
                                                 std::to_string(deviceId));
    g_device_id = -1;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtGetDevice(int32_t* deviceId) {
    if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is a null pointer");
    if (g_device_id < 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: no device set (aclrtSetDevice)");
    *deviceId = g_device_id;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtGetDeviceCount(uint32_t* count) {
    if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is a null pointer");
    *count = 1;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtGetRunMode(aclrtRunMode* runMode) {
    if (runMode == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is a null pointer");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtSynchronizeDevice(void) {
    std::lock_guard<std::mutex> g(g_lock);
    aclError s = g_default_stream.status;
    g_default_stream.status = 0;
    for (Stream* st : g_streams) {
        if (s == 0) s = st->status;
        st->status = 0;
    }
    return s;
}

EXPORT aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
    if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is a null pointer");
    if (deviceId != 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: npu-emu has one device, id 0");
    *context = &g_context_token;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtDestroyContext(aclrtContext context) {
    if (context != &g_context_token) return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: not a context");
    return ACL_SUCCESS;
}

EXPORT aclError aclrtSetCurrentContext(aclrtContext context) {
    if (context != &g_context_token) return fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: not a context");
    return ACL_SUCCESS;
}

EXPORT aclError aclrtGetCurrentContext(aclrtContext* context) {
    if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is null");
    *context = &g_context_token;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtCreateStream(aclrtStream* stream) {
    if (stream == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is a null pointer");
    Stream* st = new Stream();
    std::lock_guard<std::mutex> g(g_lock);
    g_streams.insert(st);
    *stream = st;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtDestroyStream(aclrtStream stream) {
    std::lock_guard<std::mutex> g(g_lock);
    Stream* st = static_cast<Stream*>(stream);
    if (stream == nullptr || !g_streams.erase(st))
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: not a live stream");
    delete st;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtSynchronizeStream(aclrtStream stream) {
    std::lock_guard<std::mutex> g(g_lock);
    bool ok;
    Stream* st = stream_of(stream, &ok);
    if (!ok) return fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: not a live stream");
    aclError s = st->status;
    st->status = 0;
    return s;
}

EXPORT aclError aclrtCreateEvent(aclrtEvent* event) {
    if (event == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is a null pointer");
    Event* e = new Event();
    std::lock_guard<std::mutex> g(g_lock);
    g_events.insert(e);
    *event = e;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtDestroyEvent(aclrtEvent event) {
    std::lock_guard<std::mutex> g(g_lock);
    Event* e = static_cast<Event*>(event);
    if (event == nullptr || !g_events.erase(e))
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: not a live event");
    delete e;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    std::lock_guard<std::mutex> g(g_lock);
    bool ok;
    stream_of(stream, &ok);
    Event* e = static_cast<Event*>(event);
    if (event == nullptr || !g_events.count(e) || !ok)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: not a live event or stream");
    e->recorded = 1;   // work ran at launch: everything before the record is done
    return ACL_SUCCESS;
}

EXPORT aclError aclrtSynchronizeEvent(aclrtEvent event) {
    std::lock_guard<std::mutex> g(g_lock);
    if (event == nullptr || !g_events.count(static_cast<Event*>(event)))
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEvent: not a live event");
    return ACL_SUCCESS;
}

EXPORT aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    std::lock_guard<std::mutex> g(g_lock);
    bool ok;
    stream_of(stream, &ok);
    if (!ok || event == nullptr || !g_events.count(static_cast<Event*>(event)))
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: not a live stream or event");
    return ACL_SUCCESS;
}

EXPORT aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    std::lock_guard<std::mutex> g(g_lock);
    if (ms == nullptr || !g_events.count(static_cast<Event*>(startEvent)) ||
        !g_events.count(static_cast<Event*>(endEvent)))
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: null ms or not live events");
    *ms = 0.0f;    // no device timeline to measure
    return ACL_SUCCESS;
}

namespace {

// The device's allocation rule (acl API reference, aclrtMalloc / aclrtMallocAlign32): the start is 64-byte aligned
// and the size is rounded up to a multiple of 32 bytes, plus 32 more for aclrtMalloc. Programs that run on the
// device may rely on that slack (CANN's own examples size some outputs by a smaller element type), so the
// allocation table records the rounded size: a copy or a view is refused only where the device would overrun too.
aclError device_malloc(const char* fn, void** devPtr, size_t size, aclrtMemMallocPolicy policy, size_t extra) {
    if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": devPtr is a null pointer");
    if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": size is 0");
    if (static_cast<int>(policy) < 0 || static_cast<int>(policy) > 5)
        return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": unknown aclrtMemMallocPolicy " +
                                                 std::to_string(static_cast<int>(policy)));
    if (size > (static_cast<size_t>(1) << 48))
        return fail(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": " + std::to_string(size) + " bytes is more than any "
                                                                                            "device has");
    size_t capacity = (size + 31) / 32 * 32 + extra;
    // device memory is not cleared either; zeros make a program that reads it uninitialised repeatable. Large
    // blocks (workspaces are 16 MiB) come from mmap, zero pages until written, so they cost no memset or RSS.
    void* p = nullptr;
    if (capacity >= kMmapFrom) {
        p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) p = nullptr;
    } else {
        p = std::aligned_alloc(64, (capacity + 63) / 64 * 64);
        if (p != nullptr) std::memset(p, 0, capacity);
    }
    if (p == nullptr) return fail(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": out of host memory for " +
                                                         std::to_string(size) + " bytes");
    std::lock_guard<std::mutex> g(g_lock);
    g_device[reinterpret_cast<uintptr_t>(p)] = capacity;
    *devPtr = p;
    return ACL_SUCCESS;
}

}  // namespace

EXPORT aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return device_malloc("aclrtMalloc", devPtr, size, policy, 32);
}

EXPORT aclError aclrtMallocAlign32(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return device_malloc("aclrtMallocAlign32", devPtr, size, policy, 0);
}

EXPORT aclError aclrtFree(void* devPtr) {
    std::lock_guard<std::mutex> g(g_lock);
    auto it = g_device.find(reinterpret_cast<uintptr_t>(devPtr));
    if (devPtr == nullptr || it == g_device.end())
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: not the start of a live aclrtMalloc allocation");
    size_t capacity = it->second;
    g_device.erase(it);
    if (capacity >= kMmapFrom) {
        munmap(devPtr, capacity);
    } else {
        std::free(devPtr);
    }
    return ACL_SUCCESS;
}

EXPORT aclError aclrtMallocHost(void** hostPtr, size_t size) {
    if (hostPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr is a null pointer");
    if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: size is 0");
    void* p = std::malloc(size);
    if (p == nullptr) return fail(ACL_ERROR_BAD_ALLOC, "aclrtMallocHost: out of memory");
    std::lock_guard<std::mutex> g(g_lock);
    g_host.insert(reinterpret_cast<uintptr_t>(p));
    *hostPtr = p;
    return ACL_SUCCESS;
}

EXPORT aclError aclrtFreeHost(void* hostPtr) {
    std::lock_guard<std::mutex> g(g_lock);
    if (hostPtr == nullptr || !g_host.erase(reinterpret_cast<uintptr_t>(hostPtr)))
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: not a live aclrtMallocHost allocation");
    std::free(hostPtr);
    return ACL_SUCCESS;
}

namespace {

// A device-side pointer must lie in an allocation with `count` bytes from it.
aclError check_device(const char* fn, const char* which, const void* p, size_t count) {
    long long ext = device_extent(p);
    if (ext < 0)
        return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + which +
                                                 " is not in any aclrtMalloc allocation");
    if (static_cast<unsigned long long>(ext) < count)
        return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + std::to_string(count) + " bytes at " + which +
                                                 " run past its allocation (" + std::to_string(ext) +
                                                 " bytes left); nothing was copied");
    return ACL_SUCCESS;
}

aclError memcpy_checked(const char* fn, void* dst, size_t destMax, const void* src, size_t count,
                        aclrtMemcpyKind kind) {
    if (dst == nullptr || src == nullptr)
        return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": dst or src is a null pointer");
    if (static_cast<int>(kind) < 0 || static_cast<int>(kind) > 4)
        return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": unknown aclrtMemcpyKind " +
                                                 std::to_string(static_cast<int>(kind)));
    if (count > destMax)
        return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": count " + std::to_string(count) +
                                                 " is larger than destMax " + std::to_string(destMax));
    if (count == 0) return ACL_SUCCESS;
    std::lock_guard<std::mutex> g(g_lock);
    bool dst_dev = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
                   (kind == ACL_MEMCPY_DEFAULT && device_extent(dst) >= 0);
    bool src_dev = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
                   (kind == ACL_MEMCPY_DEFAULT && device_extent(src) >= 0);
    aclError s;
    if (dst_dev && (s = check_device(fn, "dst", dst, count)) != ACL_SUCCESS) return s;
    if (dst_dev && (s = check_device(fn, "dst", dst, destMax)) != ACL_SUCCESS) return s;
    if (src_dev && (s = check_device(fn, "src", src, count)) != ACL_SUCCESS) return s;
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

}  // namespace

EXPORT aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
    return memcpy_checked("aclrtMemcpy", dst, destMax, src, count, kind);
}

EXPORT aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                                 aclrtStream stream) {
    {
        std::lock_guard<std::mutex> g(g_lock);
        bool ok;
        stream_of(stream, &ok);
        if (!ok) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: not a live stream");
    }
    return memcpy_checked("aclrtMemcpyAsync", dst, destMax, src, count, kind);
}

EXPORT aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
    if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is a null pointer");
    if (count > maxCount)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count is larger than maxCount");
    std::lock_guard<std::mutex> g(g_lock);
    aclError s = check_device("aclrtMemset", "devPtr", devPtr, count);
    if (s != ACL_SUCCESS) return s;
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

EXPORT aclError aclrtMemGetInfo(int32_t attr, size_t* free_, size_t* total) {
    (void)attr;
    if (free_ == nullptr || total == nullptr)
        return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemGetInfo: free or total is a null pointer");
    size_t used = 0;
    std::lock_guard<std::mutex> g(g_lock);
    for (auto& kv : g_device) used += kv.second;
    *total = static_cast<size_t>(64) << 30;
    *free_ = used < *total ? *total - used : 0;
    return ACL_SUCCESS;
}

// ---------------------------------------------------------------------------------------------------------------
// aclTensor, aclIntArray, aclScalar
// ---------------------------------------------------------------------------------------------------------------

EXPORT aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                  const int64_t* stride, int64_t offset, aclFormat format,
                                  const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
    // CANN returns a null tensor for bad arguments; the op then reports 161001 for it
    if ((viewDimsNum > 0 && viewDims == nullptr) || (storageDimsNum > 0 && storageDims == nullptr) ||
        viewDimsNum > 64 || storageDimsNum > 64) {
        set_error("aclCreateTensor: viewDims / storageDims is a null pointer or has more than 64 dims");
        return nullptr;
    }
    if (offset < 0) {
        set_error("aclCreateTensor: offset is negative");
        return nullptr;
    }
    aclTensor* t = new aclTensor();
    t->view.assign(viewDims, viewDims + viewDimsNum);
    if (stride != nullptr) {
        t->strides.assign(stride, stride + viewDimsNum);
    } else {
        // no strides: the contiguous ones
        t->strides.assign(viewDimsNum, 1);
        for (int64_t i = static_cast<int64_t>(viewDimsNum) - 2; i >= 0; --i)
            t->strides[i] = t->strides[i + 1] * t->view[i + 1];
    }
    t->storage.assign(storageDims, storageDims + storageDimsNum);
    t->offset = offset;
    t->dtype = static_cast<int32_t>(dataType);
    t->format = static_cast<int32_t>(format);
    t->data = tensorData;
    std::lock_guard<std::mutex> g(g_lock);
    g_tensors.insert(t);
    return t;
}

EXPORT aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
    if (tensor == nullptr) return ACLNN_SUCCESS;
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_tensors.erase(tensor)) {
        set_error("aclDestroyTensor: not a live aclTensor");
        return ACLNN_ERR_PARAM_INVALID;
    }
    delete tensor;
    return ACLNN_SUCCESS;
}

namespace {

aclnnStatus live_tensor(const char* fn, const aclTensor* t, const void* out) {
    if (t == nullptr || out == nullptr) {
        set_error(std::string(fn) + ": a null pointer argument");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (!g_tensors.count(t)) {
        set_error(std::string(fn) + ": not a live aclTensor");
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

int64_t* copy_dims(const std::vector<int64_t>& v) {
    int64_t* out = new int64_t[v.size() ? v.size() : 1];
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
    return out;
}

}  // namespace

EXPORT aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
    std::lock_guard<std::mutex> g(g_lock);
    aclnnStatus s = live_tensor("aclGetViewShape", tensor, viewDims);
    if (s != ACLNN_SUCCESS || viewDimsNum == nullptr) return s ? s : ACLNN_ERR_PARAM_NULLPTR;
    *viewDims = copy_dims(tensor->view);
    *viewDimsNum = tensor->view.size();
    return ACLNN_SUCCESS;
}

EXPORT aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
    std::lock_guard<std::mutex> g(g_lock);
    aclnnStatus s = live_tensor("aclGetStorageShape", tensor, storageDims);
    if (s != ACLNN_SUCCESS || storageDimsNum == nullptr) return s ? s : ACLNN_ERR_PARAM_NULLPTR;
    *storageDims = copy_dims(tensor->storage);
    *storageDimsNum = tensor->storage.size();
    return ACLNN_SUCCESS;
}

EXPORT aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
    std::lock_guard<std::mutex> g(g_lock);
    aclnnStatus s = live_tensor("aclGetViewStrides", tensor, stridesValue);
    if (s != ACLNN_SUCCESS || stridesNum == nullptr) return s ? s : ACLNN_ERR_PARAM_NULLPTR;
    *stridesValue = copy_dims(tensor->strides);
    *stridesNum = tensor->strides.size();
    return ACLNN_SUCCESS;
}

EXPORT aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
    std::lock_guard<std::mutex> g(g_lock);
    aclnnStatus s = live_tensor("aclGetViewOffset", tensor, offset);
    if (s != ACLNN_SUCCESS) return s;
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

EXPORT aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
    std::lock_guard<std::mutex> g(g_lock);
    aclnnStatus s = live_tensor("aclGetFormat", tensor, format);
    if (s != ACLNN_SUCCESS) return s;
    *format = static_cast<aclFormat>(tensor->format);
    return ACLNN_SUCCESS;
}

EXPORT aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
    std::lock_guard<std::mutex> g(g_lock);
    aclnnStatus s = live_tensor("aclGetDataType", tensor, dataType);
    if (s != ACLNN_SUCCESS) return s;
    *dataType = static_cast<aclDataType>(tensor->dtype);
    return ACLNN_SUCCESS;
}

EXPORT aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
    if (value == nullptr && size > 0) {
        set_error("aclCreateIntArray: value is a null pointer");
        return nullptr;
    }
    aclIntArray* a = new aclIntArray();
    a->values.assign(value, value + size);
    std::lock_guard<std::mutex> g(g_lock);
    g_arrays.insert(a);
    return a;
}

EXPORT aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
    if (array == nullptr) return ACLNN_SUCCESS;
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_arrays.erase(array)) {
        set_error("aclDestroyIntArray: not a live aclIntArray");
        return ACLNN_ERR_PARAM_INVALID;
    }
    delete array;
    return ACLNN_SUCCESS;
}

EXPORT aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
    if (value == nullptr && size > 0) {
        set_error("aclCreateTensorList: value is a null pointer");
        return nullptr;
    }
    aclTensorList* l = new aclTensorList();
    l->items.assign(value, value + size);
    std::lock_guard<std::mutex> g(g_lock);
    g_lists.insert(l);
    return l;
}

EXPORT aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
    // as CANN's: the list and the aclTensors it holds (those still live) are released
    if (array == nullptr) return ACLNN_SUCCESS;
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_lists.erase(array)) {
        set_error("aclDestroyTensorList: not a live aclTensorList");
        return ACLNN_ERR_PARAM_INVALID;
    }
    for (const aclTensor* t : array->items) {
        if (t != nullptr && g_tensors.erase(t)) delete t;
    }
    delete array;
    return ACLNN_SUCCESS;
}

EXPORT aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
    size_t n = aclDataTypeSize(dataType);
    if (value == nullptr || n == 0 || n > 16) {
        set_error("aclCreateScalar: value is a null pointer or the dtype has no scalar form");
        return nullptr;
    }
    aclScalar* s = new aclScalar();
    s->dtype = static_cast<int32_t>(dataType);
    std::memcpy(s->bytes, value, n);
    std::lock_guard<std::mutex> g(g_lock);
    g_scalars.insert(s);
    return s;
}

EXPORT aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
    if (scalar == nullptr) return ACLNN_SUCCESS;
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_scalars.erase(scalar)) {
        set_error("aclDestroyScalar: not a live aclScalar");
        return ACLNN_ERR_PARAM_INVALID;
    }
    delete scalar;
    return ACLNN_SUCCESS;
}

// ---------------------------------------------------------------------------------------------------------------
// aclnnTransSparse4to2Para: one phase on host memory; the outputs are new[] arrays the caller deletes
// ---------------------------------------------------------------------------------------------------------------

EXPORT aclnnStatus aclnnTransSparse4to2Para(const int8_t* weight, aclIntArray* shape, int8_t** sparseWeight,
                                            int64_t** sparseWeightDims, uint64_t* sparseWeightDimsNum,
                                            uint8_t** index, int64_t** indexDims, uint64_t* indexDimsNum) {
    if (weight == nullptr || shape == nullptr || sparseWeight == nullptr || sparseWeightDims == nullptr ||
        sparseWeightDimsNum == nullptr || index == nullptr || indexDims == nullptr || indexDimsNum == nullptr) {
        set_error("aclnnTransSparse4to2Para: a null pointer argument");
        return ACLNN_ERR_INNER_NULLPTR;   // CANN's CHECK_RET code for these
    }
    std::vector<int64_t> dims;
    long long extent;
    {
        std::lock_guard<std::mutex> g(g_lock);
        if (!g_arrays.count(shape)) {
            set_error("aclnnTransSparse4to2Para: shape is not a live aclIntArray");
            return ACLNN_ERR_PARAM_INVALID;
        }
        dims = shape->values;
        extent = device_extent(weight);
    }
    if (!python_ready()) return ACLNN_ERR_INNER;
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject* res = PyObject_CallMethod(g_bridge, "trans_sparse4to2", "KNL",
                                        (unsigned long long)reinterpret_cast<uintptr_t>(weight), tuple_of(dims),
                                        extent);
    aclnnStatus status = take_status(res, "aclnnTransSparse4to2Para");
    if (status == 0 && res != nullptr && PyTuple_GET_SIZE(res) == 6) {
        // (0, sparse bytes, sparse dims, index bytes, index dims, "")
        char* buf;
        Py_ssize_t n;
        PyBytes_AsStringAndSize(PyTuple_GET_ITEM(res, 1), &buf, &n);
        int8_t* sw = new int8_t[n ? n : 1];
        std::memcpy(sw, buf, n);
        PyBytes_AsStringAndSize(PyTuple_GET_ITEM(res, 3), &buf, &n);
        uint8_t* ix = new uint8_t[n ? n : 1];
        std::memcpy(ix, buf, n);
        std::vector<int64_t> sd, id;
        PyObject* a = PyTuple_GET_ITEM(res, 2);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i) sd.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(a, i)));
        a = PyTuple_GET_ITEM(res, 4);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); ++i) id.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(a, i)));
        *sparseWeight = sw;
        *index = ix;
        *sparseWeightDims = copy_dims(sd);
        *sparseWeightDimsNum = sd.size();
        *indexDims = copy_dims(id);
        *indexDimsNum = id.size();
    } else if (status == 0) {
        status = ACLNN_ERR_INNER;
    }
    Py_XDECREF(res);
    PyGILState_Release(gs);
    return status;
}

// ---------------------------------------------------------------------------------------------------------------
// Data-movement helpers the examples of npu-emu's ops call around them (no npu-emu kernel: plain copies, done here)
// ---------------------------------------------------------------------------------------------------------------

namespace {

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

aclnnStatus fail_nn(aclnnStatus status, const std::string& msg) {
    set_error(msg);
    return status;
}

// element count of the FRACTAL_NZ storage of a weight [..., R, C]: rows to 16, columns to c0 elements of 32 bytes
aclnnStatus nz_elements(const char* fn, const std::vector<int64_t>& dims, int64_t c0, uint64_t* out) {
    if (dims.size() < 2 || dims.size() > 6)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": the weight shape must have 2 to 6 dims");
    int64_t n = 1;
    for (size_t i = 0; i + 2 < dims.size(); ++i) n *= dims[i];
    for (auto d : dims)
        if (d <= 0) return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": the weight shape has a dim <= 0");
    *out = static_cast<uint64_t>(n * align_up(dims[dims.size() - 2], 16) * align_up(dims.back(), c0));
    return ACLNN_SUCCESS;
}

int64_t nz_c0(int32_t dtype) {
    switch (dtype) {
        case ACL_INT8: return 32;
        case ACL_FLOAT16: case ACL_BF16: return 16;
        default: return 0;
    }
}

aclnnStatus new_native_executor(const char* op, std::function<aclnnStatus()> work, uint64_t* workspaceSize,
                                aclOpExecutor** executor) {
    aclOpExecutor* ex = new aclOpExecutor();
    ex->op = op;
    ex->native = std::move(work);
    g_executors.insert(ex);       // the caller holds g_lock
    *workspaceSize = 0;
    *executor = ex;
    return ACLNN_SUCCESS;
}

bool contiguous(const aclTensor* t) {
    int64_t expect = 1;
    for (int64_t i = static_cast<int64_t>(t->view.size()) - 1; i >= 0; --i) {
        if (t->view[i] != 1 && t->strides[i] != expect) return false;
        expect *= t->view[i];
    }
    return true;
}

// highest element index the view touches (offset included); -1 for an empty view
int64_t last_element(const aclTensor* t) {
    int64_t last = t->offset;
    for (size_t i = 0; i < t->view.size(); ++i) {
        if (t->view[i] == 0) return -1;
        last += (t->view[i] - 1) * t->strides[i];
    }
    return last;
}

aclnnStatus check_extent(const char* fn, const char* name, const aclTensor* t, int64_t elements, size_t esize) {
    long long ext = device_extent(t->data);
    if (ext >= 0 && static_cast<unsigned long long>(elements) * esize > static_cast<unsigned long long>(ext))
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": " + name + " needs " +
                                                    std::to_string(elements * esize) + " bytes but its aclrtMalloc "
                                                    "allocation has " + std::to_string(ext));
    return ACLNN_SUCCESS;
}

}  // namespace

EXPORT aclnnStatus aclnnCalculateMatmulWeightSize(const aclIntArray* tensorShape, uint64_t* weightTensorSize) {
    if (tensorShape == nullptr || weightTensorSize == nullptr)
        return fail_nn(ACLNN_ERR_PARAM_NULLPTR, "aclnnCalculateMatmulWeightSize: a null pointer argument");
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_arrays.count(tensorShape))
        return fail_nn(ACLNN_ERR_PARAM_INVALID, "aclnnCalculateMatmulWeightSize: tensorShape is not a live aclIntArray");
    return nz_elements("aclnnCalculateMatmulWeightSize", tensorShape->values, 16, weightTensorSize);
}

EXPORT aclnnStatus aclnnCalculateMatmulWeightSizeV2(const aclIntArray* tensorShape, aclDataType dataType,
                                                    uint64_t* weightTensorSize) {
    if (tensorShape == nullptr || weightTensorSize == nullptr)
        return fail_nn(ACLNN_ERR_PARAM_NULLPTR, "aclnnCalculateMatmulWeightSizeV2: a null pointer argument");
    int64_t c0 = nz_c0(dataType);
    if (c0 == 0)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, "aclnnCalculateMatmulWeightSizeV2: dataType must be ACL_INT8, "
                                                "ACL_FLOAT16 or ACL_BF16; got " + std::to_string(dataType));
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_arrays.count(tensorShape))
        return fail_nn(ACLNN_ERR_PARAM_INVALID, "aclnnCalculateMatmulWeightSizeV2: tensorShape is not a live aclIntArray");
    return nz_elements("aclnnCalculateMatmulWeightSizeV2", tensorShape->values, c0, weightTensorSize);
}

// In place: the ND weight [..., R, C] at the tensor's data becomes its FRACTAL_NZ storage [..., C/c0, R/16, 16, c0]
// (zero padded), and the tensor is marked FRACTAL_NZ with that storage shape, as CANN's operator refreshes it.
EXPORT aclnnStatus aclnnTransMatmulWeightGetWorkspaceSize(aclTensor* mmWeightRef, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor) {
    const char* fn = "aclnnTransMatmulWeightGetWorkspaceSize";
    if (mmWeightRef == nullptr || workspaceSize == nullptr || executor == nullptr)
        return fail_nn(ACLNN_ERR_PARAM_NULLPTR, std::string(fn) + ": a null pointer argument");
    std::lock_guard<std::mutex> g(g_lock);
    aclTensor* t = mmWeightRef;
    if (!g_tensors.count(t)) return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": not a live aclTensor");
    int64_t c0 = nz_c0(t->dtype);
    if (c0 == 0)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": mmWeightRef must be INT8, FLOAT16 or BFLOAT16");
    if (t->format != ACL_FORMAT_ND)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": mmWeightRef must be ND");
    uint64_t nz = 0;
    aclnnStatus s = nz_elements(fn, t->view, c0, &nz);
    if (s != ACLNN_SUCCESS) return s;
    if (t->data == nullptr) return fail_nn(ACLNN_ERR_PARAM_NULLPTR, std::string(fn) + ": the data pointer is null");
    if (!contiguous(t))
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": npu-emu converts contiguous weights only");
    size_t es = aclDataTypeSize(static_cast<aclDataType>(t->dtype));
    s = check_extent(fn, "mmWeightRef (its FRACTAL_NZ storage, aclnnCalculateMatmulWeightSizeV2 elements)", t,
                     t->offset + static_cast<int64_t>(nz), es);
    if (s != ACLNN_SUCCESS) return s;
    return new_native_executor("aclnnTransMatmulWeight", [t, c0, es]() -> aclnnStatus {
        std::lock_guard<std::mutex> g(g_lock);
        if (!g_tensors.count(t))
            return fail_nn(ACLNN_ERR_PARAM_INVALID, "aclnnTransMatmulWeight: mmWeightRef was destroyed");
        const int64_t r = t->view[t->view.size() - 2], c = t->view.back();
        int64_t batch = 1;
        for (size_t i = 0; i + 2 < t->view.size(); ++i) batch *= t->view[i];
        const int64_t r1 = align_up(r, 16) / 16, c1 = align_up(c, c0) / c0;
        unsigned char* base = static_cast<unsigned char*>(t->data) + t->offset * es;
        std::vector<unsigned char> nz(static_cast<size_t>(batch * c1 * r1 * 16 * c0) * es, 0);
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t i = 0; i < r; ++i)
                for (int64_t j = 0; j < c; ++j) {
                    int64_t dst = (((b * c1 + j / c0) * r1 + i / 16) * 16 + i % 16) * c0 + j % c0;
                    std::memcpy(&nz[dst * es], base + ((b * r + i) * c + j) * es, es);
                }
        std::memcpy(base, nz.data(), nz.size());
        std::vector<int64_t> storage(t->view.begin(), t->view.end() - 2);
        storage.insert(storage.end(), {c1, r1, 16, c0});
        t->storage = storage;
        t->format = ACL_FORMAT_FRACTAL_NZ;
        return ACLNN_SUCCESS;
    }, workspaceSize, executor);
}

EXPORT aclnnStatus aclnnTransMatmulWeight(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
    return npu_emu_cabi_run("aclnnTransMatmulWeight", workspace, workspaceSize, executor, stream);
}

// out = self with its dims reordered: out[i_0, ..., i_n] = self[j] where j[dims[k]] = i_k
EXPORT aclnnStatus aclnnPermuteGetWorkspaceSize(const aclTensor* self, const aclIntArray* dims, aclTensor* out,
                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
    const char* fn = "aclnnPermuteGetWorkspaceSize";
    if (self == nullptr || dims == nullptr || out == nullptr || workspaceSize == nullptr || executor == nullptr)
        return fail_nn(ACLNN_ERR_PARAM_NULLPTR, std::string(fn) + ": a null pointer argument");
    std::lock_guard<std::mutex> g(g_lock);
    if (!g_tensors.count(self) || !g_tensors.count(out) || !g_arrays.count(dims))
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": self, dims or out is not a live object");
    const size_t nd = self->view.size();
    if (dims->values.size() != nd)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": dims must have one entry per dim of self");
    std::vector<int64_t> perm(nd);
    std::vector<bool> seen(nd, false);
    for (size_t i = 0; i < nd; ++i) {
        int64_t d = dims->values[i] < 0 ? dims->values[i] + static_cast<int64_t>(nd) : dims->values[i];
        if (d < 0 || d >= static_cast<int64_t>(nd) || seen[d])
            return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": dims is not a permutation of self's dims");
        seen[d] = true;
        perm[i] = d;
    }
    if (self->dtype != out->dtype)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": out must have self's dtype");
    size_t es = aclDataTypeSize(static_cast<aclDataType>(self->dtype));
    if (es == 0) return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": npu-emu permutes whole-byte dtypes");
    if (out->view.size() != nd)
        return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": out must have self's rank");
    for (size_t i = 0; i < nd; ++i)
        if (out->view[i] != self->view[perm[i]])
            return fail_nn(ACLNN_ERR_PARAM_INVALID, std::string(fn) + ": out's shape is not self's shape permuted");
    int64_t ls = last_element(self), lo = last_element(out);
    if (ls >= 0 && (self->data == nullptr || out->data == nullptr))
        return fail_nn(ACLNN_ERR_PARAM_NULLPTR, std::string(fn) + ": a data pointer is null");
    if (ls >= 0) {
        aclnnStatus s = check_extent(fn, "self", self, ls + 1, es);
        if (s == ACLNN_SUCCESS) s = check_extent(fn, "out", out, lo + 1, es);
        if (s != ACLNN_SUCCESS) return s;
    }
    return new_native_executor("aclnnPermute", [self, out, perm, es]() -> aclnnStatus {
        std::lock_guard<std::mutex> g(g_lock);
        if (!g_tensors.count(self) || !g_tensors.count(out))
            return fail_nn(ACLNN_ERR_PARAM_INVALID, "aclnnPermute: self or out was destroyed");
        const size_t nd = out->view.size();
        int64_t n = 1;
        for (auto d : out->view) n *= d;
        if (n == 0) return ACLNN_SUCCESS;
        std::vector<unsigned char> tmp(static_cast<size_t>(n) * es);   // gather first: self and out may overlap
        std::vector<int64_t> idx(nd, 0);
        const unsigned char* src = static_cast<const unsigned char*>(self->data);
        unsigned char* dst = static_cast<unsigned char*>(out->data);
        for (int pass = 0; pass < 2; ++pass) {
            std::fill(idx.begin(), idx.end(), 0);
            for (int64_t e = 0; e < n; ++e) {
                if (pass == 0) {
                    int64_t off = self->offset;
                    for (size_t i = 0; i < nd; ++i) off += idx[i] * self->strides[perm[i]];
                    std::memcpy(&tmp[e * es], src + off * es, es);
                } else {
                    int64_t off = out->offset;
                    for (size_t i = 0; i < nd; ++i) off += idx[i] * out->strides[i];
                    std::memcpy(dst + off * es, &tmp[e * es], es);
                }
                for (int64_t i = static_cast<int64_t>(nd) - 1; i >= 0; --i) {
                    if (++idx[i] < out->view[i]) break;
                    idx[i] = 0;
                }
            }
        }
        return ACLNN_SUCCESS;
    }, workspaceSize, executor);
}

EXPORT aclnnStatus aclnnPermute(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                aclrtStream stream) {
    return npu_emu_cabi_run("aclnnPermute", workspace, workspaceSize, executor, stream);
}
