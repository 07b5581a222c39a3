/* The launch path from Python in C: a stable-ABI (abi3, Python 3.11+) extension, so one build
 * serves every later Python. It reads each torch.Tensor's pointer, dtype, sizes and strides
 * through the C API and calls libtilejit's C ABI directly, which is most of what a call from
 * pure Python spends (tilejit/_args.py stays the fallback, and the only path for other tensor
 * types). Records are capi/tilejit_c.h's. */
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include "capi/tilejit_c.h"

#include <math.h>
#include <stdint.h>

enum { MAX_WORDS = 1024 }; /* 9 tensors of rank 16 with strides fit */

static PyObject *s_data_ptr, *s_get_device, *s_is_contiguous, *s_stride, *s_shape, *s_dtype;
static PyObject* tensor_type; /* torch.Tensor */
static PyObject* dtype_codes; /* dict: torch.dtype -> capi dtype code */
static PyObject* stream_of;   /* callable: device index -> raw CUstream */
static PyObject* error_types; /* tuple: (TilejitError, NoGpuError, InternalError) */

/* Appends the sizes (and strides) of `seq`, a tuple (torch.Size is one). */
static int append_ints(PyObject* seq, int64_t* out, int* n) {
  Py_ssize_t rank = PyTuple_Size(seq);
  if (rank < 0) return -1;
  for (Py_ssize_t i = 0; i < rank; ++i) {
    if (*n >= MAX_WORDS) return PyErr_SetString(PyExc_ValueError, "too many dimensions"), -1;
    long long v = PyLong_AsLongLong(PyTuple_GetItem(seq, i));
    if (v == -1 && PyErr_Occurred()) return -1;
    out[(*n)++] = v;
  }
  return 0;
}

static long long call_int(PyObject* obj, PyObject* method) {
  PyObject* r = PyObject_CallMethodObjArgs(obj, method, NULL);
  if (!r) return -1;
  long long v = PyLong_AsLongLong(r);
  Py_DECREF(r);
  return v;
}

/* One torch.Tensor's record. Returns its CUDA device index (-1 on the host), -2 on error, -3
 * when `t` is not exactly a torch.Tensor (the caller falls back to the Python packer). */
static int pack_one(PyObject* t, int64_t* out, int* n) {
  if ((PyObject*)Py_TYPE(t) != tensor_type) return -3;
  if (*n + 6 + 32 > MAX_WORDS) return PyErr_SetString(PyExc_ValueError, "too many tensors"), -2;
  long long device = call_int(t, s_get_device);
  if (device == -1 && PyErr_Occurred()) return -2;
  long long ptr = call_int(t, s_data_ptr);
  if (ptr == -1 && PyErr_Occurred()) return -2;
  PyObject* dtype = PyObject_GetAttr(t, s_dtype);
  if (!dtype) return -2;
  PyObject* code = PyDict_GetItem(dtype_codes, dtype); /* borrowed */
  Py_DECREF(dtype);
  if (!code) return -3; /* a dtype the Python side names in its error */
  PyObject* contiguous = PyObject_CallMethodObjArgs(t, s_is_contiguous, NULL);
  if (!contiguous) return -2;
  int dense = PyObject_IsTrue(contiguous);
  Py_DECREF(contiguous);
  PyObject* shape = PyObject_GetAttr(t, s_shape);
  if (!shape) return -2;
  Py_ssize_t rank = PyTuple_Size(shape);
  out[(*n)++] = dense ? 4 : 0;
  out[(*n)++] = ptr;
  out[(*n)++] = PyLong_AsLong(code);
  out[(*n)++] = device >= 0 ? 1 : 0;
  out[(*n)++] = device > 0 ? device : 0;
  out[(*n)++] = rank;
  int failed = append_ints(shape, out, n);
  Py_DECREF(shape);
  if (failed) return -2;
  if (!dense) {
    PyObject* strides = PyObject_CallMethodObjArgs(t, s_stride, NULL);
    if (!strides) return -2;
    failed = append_ints(strides, out, n);
    Py_DECREF(strides);
    if (failed) return -2;
  }
  return (int)device;
}

/* Packs a tuple of tensors; returns the first CUDA device index (-1: none), -2 on error, -3
 * to fall back. */
static int pack_all(PyObject* tensors, int64_t* out, int* n) {
  int first = -1;
  Py_ssize_t count = PyTuple_Size(tensors);
  if (count < 0) return -2;
  for (Py_ssize_t i = 0; i < count; ++i) {
    int d = pack_one(PyTuple_GetItem(tensors, i), out, n);
    if (d < -1) return d;
    if (first < 0) first = d;
  }
  return first;
}

static PyObject* raise_last(void) {
  int kind = tj_last_error_kind();
  Py_ssize_t i = kind == TJ_NO_GPU ? 1 : kind == TJ_INTERNAL ? 2 : 0;
  PyErr_SetString(PyTuple_GetItem(error_types, i), tj_last_error());
  return NULL;
}

/* The stream: the caller's (an int), else torch's current one on the tensors' device. */
static int resolve_stream(PyObject* given, int device, void** stream) {
  if (given != Py_None) {
    *stream = PyLong_AsVoidPtr(given);
    return PyErr_Occurred() ? -1 : 0;
  }
  *stream = NULL;
  if (device < 0) return 0;
  PyObject* index = PyLong_FromLong(device);
  PyObject* r = index ? PyObject_CallFunctionObjArgs(stream_of, index, NULL) : NULL;
  Py_XDECREF(index);
  if (!r) return -1;
  *stream = PyLong_AsVoidPtr(r);
  Py_DECREF(r);
  return PyErr_Occurred() ? -1 : 0;
}

static const char* config_text(PyObject* config) {
  return config == Py_None ? NULL : PyBytes_AsString(config);
}

/* What both entry points do before their C ABI call: the records, the stream, the runtime.
 * Returns 1 when ready, 0 to fall back to the Python path (a tensor that is not a
 * torch.Tensor), -1 with a Python error set. */
typedef struct {
  int64_t words[MAX_WORDS];
  int n;
  void* stream;
  void* runtime;
} Call;

static int prepare(Call* c, PyObject* runtime, PyObject* tensors, PyObject* stream_arg) {
  c->n = 0;
  int device = pack_all(tensors, c->words, &c->n);
  if (device == -3) return 0;
  if (device == -2 || resolve_stream(stream_arg, device, &c->stream)) return -1;
  c->runtime = PyLong_AsVoidPtr(runtime);
  return PyErr_Occurred() ? -1 : 1;
}

/* paged_sparse_decode(runtime, tensors, scale, config, stream, check_only) -> True, or
 * NotImplemented when a tensor is not a torch.Tensor (the Python path takes it). */
static PyObject* fast_paged_sparse_decode(PyObject* self, PyObject* args) {
  PyObject *runtime, *tensors, *config, *stream_arg;
  double scale;
  int check_only;
  if (!PyArg_ParseTuple(args, "OO!dOOp", &runtime, &PyTuple_Type, &tensors, &scale, &config,
                        &stream_arg, &check_only))
    return NULL;
  Call c;
  int ready = prepare(&c, runtime, tensors, stream_arg);
  if (ready <= 0) return ready == 0 ? Py_NewRef(Py_NotImplemented) : NULL;
  if (tj_paged_sparse_decode(c.runtime, c.words, c.n, scale, config_text(config), c.stream,
                             check_only))
    return raise_last();
  Py_RETURN_TRUE;
}

/* launch(runtime, kernel, tensors, config, stream, synchronize): Kernel.__call__ when every
 * parameter is a tensor; NotImplemented as above. */
static PyObject* fast_launch(PyObject* self, PyObject* args) {
  PyObject *runtime, *tensors, *config, *stream_arg;
  int kernel, synchronize;
  if (!PyArg_ParseTuple(args, "OiO!OOp", &runtime, &kernel, &PyTuple_Type, &tensors, &config,
                        &stream_arg, &synchronize))
    return NULL;
  Call c;
  int ready = prepare(&c, runtime, tensors, stream_arg);
  if (ready <= 0) return ready == 0 ? Py_NewRef(Py_NotImplemented) : NULL;
  if (tj_launch(c.runtime, kernel, c.words, c.n, config_text(config), c.stream, synchronize))
    return raise_last();
  Py_RETURN_TRUE;
}

/* register(torch.Tensor, {dtype: code}, stream_of, (TilejitError, NoGpuError, InternalError)) */
static PyObject* fast_register(PyObject* self, PyObject* args) {
  PyObject *type, *codes, *stream_fn, *errors;
  if (!PyArg_ParseTuple(args, "OO!OO!", &type, &PyDict_Type, &codes, &stream_fn, &PyTuple_Type,
                        &errors))
    return NULL;
  Py_XDECREF(tensor_type);
  Py_XDECREF(dtype_codes);
  Py_XDECREF(stream_of);
  Py_XDECREF(error_types);
  Py_INCREF(type);
  Py_INCREF(codes);
  Py_INCREF(stream_fn);
  Py_INCREF(errors);
  tensor_type = type;
  dtype_codes = codes;
  stream_of = stream_fn;
  error_types = errors;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"register", fast_register, METH_VARARGS, "Sets torch.Tensor, the dtype codes, the stream."},
    {"paged_sparse_decode", fast_paged_sparse_decode, METH_VARARGS, "The op's launch."},
    {"launch", fast_launch, METH_VARARGS, "A launch whose arguments are all tensors."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) {
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_get_device = PyUnicode_InternFromString("get_device");
  s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
  s_stride = PyUnicode_InternFromString("stride");
  s_shape = PyUnicode_InternFromString("shape");
  s_dtype = PyUnicode_InternFromString("dtype");
  return PyModule_Create(&module);
}
