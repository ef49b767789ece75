// opprof_call_ranges: an NVTX range around every call of one Python function, named by the object in the
// function's first parameter, with no Python frame of its own (CPython >= 3.12, sys.monitoring).
//
// What it is for: module ranges of eager PyTorch under the opprof tracer. opprof.call_ranges points it at
// torch.nn.Module._call_impl(self, ...) and gives it the range text of every module of the model; it then
// pushes "nn.Module: <path>" when a module call starts and pops it when the call returns or unwinds.
// The Python-level alternative, a forward wrapper per module, costs a Python frame and the re-packing of
// *args/**kwargs per module call (about 0.6 us on the development VM, more with Hugging Face's keyword-heavy
// forwards); here a call costs two sys.monitoring events that land directly in C.
//
// The three functions below are registered (by Python) as sys.monitoring callbacks:
//   on_start(code, offset)          PY_START, a local event of the watched code object only
//   on_return(code, offset, value)  PY_RETURN, local as well
//   on_unwind(code, offset, exc)    PY_UNWIND, which sys.monitoring only offers globally: filtered here
// Per thread a stack of "did this call push a range" flags keeps push and pop paired: objects without a
// name (modules outside the model) push nothing, and a call that began before watch() pops nothing.
// The ranges are NVTX ranges of the default domain with registered strings (one registration per name at
// watch(), no text copied per call), which is what torch.cuda.nvtx.range_push produces, so the engine
// reads them as before.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#if PY_VERSION_HEX < 0x030C0000
#error "opprof_call_ranges needs CPython 3.12 or later (sys.monitoring, PyFrame_GetVar)"
#endif
#ifdef Py_GIL_DISABLED
#error "opprof_call_ranges relies on the GIL to guard its table; free-threaded CPython is not supported"
#endif

namespace {

struct Watch {
  PyObject* code = nullptr;        // strong reference: the watched code object
  PyObject* first_name = nullptr;  // strong reference: the name of its first parameter
  // Named objects (strong references, so an address cannot be reused while watched) -> registered text.
  std::unordered_map<PyObject*, nvtxStringHandle_t> names;
  std::uint64_t generation = 0;  // bumped by unwatch(): other threads' stacks are stale from then on
};
Watch g_watch;

struct ThreadStack {
  std::uint64_t generation = 0;
  std::vector<unsigned char> pushed;  // one entry per watched call in progress: 1 if it pushed a range
};
thread_local ThreadStack t_stack;

ThreadStack& current_stack() {
  ThreadStack& s = t_stack;
  if (s.generation != g_watch.generation) {
    s.pushed.clear();
    s.generation = g_watch.generation;
  }
  return s;
}

void push_range(nvtxStringHandle_t text) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = text;
  nvtxRangePushEx(&a);
}

// The object in the first parameter of the current frame, if it has a name; null otherwise.
const nvtxStringHandle_t* name_of_current_call() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed: the watched function's frame
  if (frame == nullptr) return nullptr;
  PyObject* first = PyFrame_GetVar(frame, g_watch.first_name);
  if (first == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  auto it = g_watch.names.find(first);
  Py_DECREF(first);  // only the address is compared; the table holds its own reference
  return it == g_watch.names.end() ? nullptr : &it->second;
}

void end_call() {
  ThreadStack& s = current_stack();
  if (s.pushed.empty()) return;  // began before watch()
  const bool pushed = s.pushed.back() != 0;
  s.pushed.pop_back();
  if (pushed) nvtxRangePop();
}

bool is_watched(PyObject* const* args, Py_ssize_t nargs) {
  return nargs >= 1 && g_watch.code != nullptr && args[0] == g_watch.code;
}

PyObject* on_start(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!is_watched(args, nargs)) Py_RETURN_NONE;
  const nvtxStringHandle_t* text = name_of_current_call();
  current_stack().pushed.push_back(text != nullptr ? 1 : 0);
  if (text != nullptr) push_range(*text);
  Py_RETURN_NONE;
}

PyObject* on_end(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (is_watched(args, nargs)) end_call();
  Py_RETURN_NONE;
}

// The table is emptied before the references go: dropping the last one may run a destructor, which must
// find a consistent (empty) watch.
void release_watch() {
  std::unordered_map<PyObject*, nvtxStringHandle_t> names = std::move(g_watch.names);
  g_watch.names.clear();
  PyObject* code = std::exchange(g_watch.code, nullptr);
  PyObject* first_name = std::exchange(g_watch.first_name, nullptr);
  ++g_watch.generation;
  for (auto& [object, text] : names) Py_DECREF(object);
  Py_XDECREF(code);
  Py_XDECREF(first_name);
}

// watch(code, names): calls of `code` get a range named after their first argument from now on; `names` is a
// sequence of (object, text) pairs (not a dict: the objects need not be hashable), and objects not in it get
// no range. Replaces an earlier watch.
PyObject* watch(PyObject*, PyObject* args) {
  PyObject* code = nullptr;
  PyObject* names = nullptr;
  if (!PyArg_ParseTuple(args, "O!O:watch", &PyCode_Type, &code, &names)) return nullptr;
  PyObject* varnames = PyObject_GetAttrString(code, "co_varnames");
  if (varnames == nullptr) return nullptr;
  PyObject* argcount = PyObject_GetAttrString(code, "co_argcount");
  if (argcount == nullptr) {
    Py_DECREF(varnames);
    return nullptr;
  }
  const long parameters = PyLong_AsLong(argcount);
  Py_DECREF(argcount);
  if (parameters < 1 || !PyTuple_Check(varnames) || PyTuple_GET_SIZE(varnames) < 1) {
    Py_DECREF(varnames);
    PyErr_SetString(PyExc_ValueError, "watch(): the code object has no positional parameter to name its calls by");
    return nullptr;
  }
  PyObject* pairs = PySequence_Fast(names, "watch(): names must be a sequence of (object, str) pairs");
  if (pairs == nullptr) {
    Py_DECREF(varnames);
    return nullptr;
  }
  std::unordered_map<PyObject*, nvtxStringHandle_t> table;
  auto fail = [&](const char* message) -> PyObject* {
    for (auto& [object, unused] : table) Py_DECREF(object);
    Py_DECREF(pairs);
    Py_DECREF(varnames);
    if (message != nullptr) PyErr_SetString(PyExc_TypeError, message);
    return nullptr;
  };
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(pairs); ++i) {
    PyObject* pair = PySequence_Fast_GET_ITEM(pairs, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) return fail("watch(): each name must be an (object, str) pair");
    PyObject* object = PyTuple_GET_ITEM(pair, 0);
    const char* text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 1));
    if (text == nullptr) return fail(nullptr);  // TypeError from PyUnicode_AsUTF8: the text must be a str
    // The first pair of an object wins; the string is registered once per object.
    if (table.find(object) == table.end()) {
      table.emplace(object, nvtxDomainRegisterStringA(nullptr, text));
      Py_INCREF(object);
    }
  }
  Py_DECREF(pairs);
  release_watch();
  g_watch.first_name = Py_NewRef(PyTuple_GET_ITEM(varnames, 0));
  Py_DECREF(varnames);
  g_watch.code = Py_NewRef(code);
  g_watch.names = std::move(table);
  Py_RETURN_NONE;
}

// unwatch(): no more ranges; the calling thread's open ranges are popped (a call still running then gets
// its range closed early rather than never). Returns how many were popped.
PyObject* unwatch(PyObject*, PyObject*) {
  ThreadStack& s = current_stack();
  long popped = 0;
  for (unsigned char pushed : s.pushed) {
    if (pushed == 0) continue;
    nvtxRangePop();
    ++popped;
  }
  s.pushed.clear();
  release_watch();
  return PyLong_FromLong(popped);
}

// open_calls(): watched calls in progress on the calling thread (for tests).
PyObject* open_calls(PyObject*, PyObject*) {
  return PyLong_FromSsize_t(static_cast<Py_ssize_t>(current_stack().pushed.size()));
}

PyMethodDef kMethods[] = {
    {"on_start", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(on_start)), METH_FASTCALL,
     "sys.monitoring PY_START callback"},
    {"on_return", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(on_end)), METH_FASTCALL,
     "sys.monitoring PY_RETURN callback"},
    {"on_unwind", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(on_end)), METH_FASTCALL,
     "sys.monitoring PY_UNWIND callback"},
    {"watch", watch, METH_VARARGS, "watch(code, names: sequence of (object, str)): ranges around calls of code"},
    {"unwatch", unwatch, METH_NOARGS, "unwatch() -> ranges of the calling thread popped"},
    {"open_calls", open_calls, METH_NOARGS, "open_calls() -> watched calls in progress on this thread"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "opprof_call_ranges",
                       "NVTX ranges around the calls of one Python function (see opprof.call_ranges).", -1,
                       kMethods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_opprof_call_ranges() { return PyModule_Create(&kModule); }
