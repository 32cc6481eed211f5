/*
 * kvcache._native: the transfers of a load, run without the interpreter's lock.
 *
 * A load through the pure-Python path returns to the interpreter after every recv_into and every
 * checksum slice, and each return waits for the lock that an engine's scheduler loop holds for up
 * to its switch interval. These functions take the lock off once per call: receive() reads every
 * block of an answer from the socket into its buffer and computes each block's CRC32C as its bytes
 * land; copy() copies a block out of a server's shared memory on one or more threads, checksumming
 * each part as it is copied. Built on Python's stable ABI (3.11 and later).
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "crc32c.h"

/* Bytes received before they are checksummed, while they are still in the CPU's caches. */
#define CHECK_BYTES (128 * 1024)

/* ---- buffers ------------------------------------------------------------------------------ */

/* Writable buffers of each item of a sequence; released by release_views. */
static Py_buffer *writable_views(PyObject *seq, Py_ssize_t *count) {
  PyObject *fast = PySequence_Fast(seq, "views must be a sequence");
  if (!fast) return NULL;
  Py_ssize_t n = PySequence_Size(fast);
  Py_buffer *views = PyMem_Calloc(n ? n : 1, sizeof(Py_buffer));
  if (!views) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_GetItem(fast, i);
    int failed = !item || PyObject_GetBuffer(item, &views[i], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS);
    Py_XDECREF(item);
    if (failed) {
      for (Py_ssize_t j = 0; j < i; j++) PyBuffer_Release(&views[j]);
      PyMem_Free(views);
      Py_DECREF(fast);
      return NULL;
    }
  }
  Py_DECREF(fast);
  *count = n;
  return views;
}

static void release_views(Py_buffer *views, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; i++) PyBuffer_Release(&views[i]);
  PyMem_Free(views);
}

/* ---- crc32c(data, crc=0) ------------------------------------------------------------------ */

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
  Py_buffer data;
  unsigned long crc = 0;
  if (!PyArg_ParseTuple(args, "y*|k", &data, &crc)) return NULL;
  uint32_t out;
  if (data.len >= 65536) {
    Py_BEGIN_ALLOW_THREADS
    out = crc32c((uint32_t)crc, data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS
  } else {
    out = crc32c((uint32_t)crc, data.buf, (size_t)data.len);
  }
  PyBuffer_Release(&data);
  return PyLong_FromUnsignedLong(out);
}

/* ---- receive(fd, timeout_ms, head, views, check) ------------------------------------------ */

enum outcome { DONE = 0, ENDED = 1, TIMED_OUT = 2, FAILED = 3 };

/* Fills [p, p + n) from fd, waiting up to timeout_ms (negative: no limit) each time it has
 * nothing to read. */
static enum outcome fill(int fd, uint8_t *p, size_t n, int timeout_ms, size_t *got, int *err) {
  size_t have = 0;
  while (have < n) {
    ssize_t r = recv(fd, p + have, n - have, 0);
    if (r > 0) {
      have += (size_t)r;
      continue;
    }
    if (r == 0) {
      *got = have;
      return ENDED;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      struct pollfd w = {.fd = fd, .events = POLLIN};
      int ready = poll(&w, 1, timeout_ms);
      if (ready == 0) {
        *got = have;
        return TIMED_OUT;
      }
      if (ready < 0 && errno != EINTR) {
        *err = errno;
        *got = have;
        return FAILED;
      }
      continue;
    }
    *err = errno;
    *got = have;
    return FAILED;
  }
  *got = have;
  return DONE;
}

/*
 * Reads len(views[i]) bytes into each view in turn: first what ``head`` holds (bytes of the
 * answer already read from the socket), then from the socket. Returns (head bytes used, outcome,
 * errno, bytes read in all, [crc32c of each view whole, or None when not checking or not
 * whole]). The outcome is 0 when every view is full, 1 if the connection ended first, 2 if it was
 * silent for timeout_ms, 3 on another error (errno).
 */
static PyObject *py_receive(PyObject *self, PyObject *args) {
  int fd, timeout_ms, check;
  Py_buffer head;
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "iiy*Op", &fd, &timeout_ms, &head, &seq, &check)) return NULL;
  Py_ssize_t n = 0;
  Py_buffer *views = writable_views(seq, &n);
  if (!views) {
    PyBuffer_Release(&head);
    return NULL;
  }
  uint32_t *crcs = PyMem_Calloc(n ? n : 1, sizeof(uint32_t));
  if (!crcs) {
    release_views(views, n);
    PyBuffer_Release(&head);
    return PyErr_NoMemory();
  }
  size_t used = 0, total = 0;
  Py_ssize_t whole = 0;
  enum outcome outcome = DONE;
  int err = 0;
  Py_BEGIN_ALLOW_THREADS
  const uint8_t *h = head.buf;
  size_t hn = (size_t)head.len;
  for (Py_ssize_t i = 0; i < n && outcome == DONE; i++) {
    uint8_t *p = views[i].buf;
    size_t len = (size_t)views[i].len, at = 0;
    uint32_t c = ~0u;
    if (used < hn) {
      size_t k = hn - used < len ? hn - used : len;
      memcpy(p, h + used, k);
      used += k;
      at = k;
      if (check) c = crc_raw(c, p, k);
    }
    while (at < len) {
      size_t want = len - at < CHECK_BYTES ? len - at : CHECK_BYTES;
      size_t got = 0;
      outcome = fill(fd, p + at, want, timeout_ms, &got, &err);
      if (check) c = crc_raw(c, p + at, got);
      at += got;
      total += got;
      if (outcome != DONE) break;
    }
    if (outcome == DONE) {
      crcs[i] = ~c;
      whole = i + 1;
    }
  }
  Py_END_ALLOW_THREADS
  total += used;
  release_views(views, n);
  PyBuffer_Release(&head);
  PyObject *list = PyList_New(n);
  if (!list) {
    PyMem_Free(crcs);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = check && i < whole ? PyLong_FromUnsignedLong(crcs[i]) : Py_NewRef(Py_None);
    if (!v) {
      Py_DECREF(list);
      PyMem_Free(crcs);
      return NULL;
    }
    PyList_SetItem(list, i, v);
  }
  PyMem_Free(crcs);
  return Py_BuildValue("(niinN)", (Py_ssize_t)used, (int)outcome, err, (Py_ssize_t)total, list);
}

/* ---- copy(out, address, threads, check) --------------------------------------------------- */

struct part {
  uint8_t *dst;
  const uint8_t *src;
  size_t len;
  int check;
  uint32_t crc;
};

static void *copy_part(void *arg) {
  struct part *t = arg;
  uint32_t c = ~0u;
  for (size_t at = 0; at < t->len; at += CHECK_BYTES) {
    size_t k = t->len - at < CHECK_BYTES ? t->len - at : CHECK_BYTES;
    memcpy(t->dst + at, t->src + at, k);
    if (t->check) c = crc_raw(c, t->dst + at, k);
  }
  t->crc = ~c;
  return NULL;
}

#define MAX_THREADS 8

/*
 * Copies len(out) bytes from ``address`` (memory the caller keeps mapped for the call) into
 * ``out`` on up to ``threads`` threads, each copying and checksumming its own part, the GIL let
 * go; with ``threads`` 0, in this thread, the GIL kept (a copy shorter than a switch interval,
 * which would wait up to one to take the GIL back). Returns the CRC32C of the bytes copied, or
 * None when not checking.
 */
static PyObject *py_copy(PyObject *self, PyObject *args) {
  Py_buffer out;
  unsigned long long address;
  int threads, check;
  if (!PyArg_ParseTuple(args, "w*Kip", &out, &address, &threads, &check)) return NULL;
  int keep_gil = threads == 0;
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  size_t len = (size_t)out.len;
  /* parts of whole pages, at least 1 MiB each */
  size_t per = (len / (size_t)threads + 4095) & ~(size_t)4095;
  if (per < (1u << 20)) per = 1u << 20;
  struct part parts[MAX_THREADS];
  pthread_t ids[MAX_THREADS];
  int count = 0, started = 0;
  for (size_t at = 0; at < len || count == 0; at += per) {
    size_t k = len - at < per ? len - at : per;
    parts[count] = (struct part){(uint8_t *)out.buf + at, (const uint8_t *)(uintptr_t)address + at,
                                 k, check, 0};
    count++;
    if (at + k >= len) break;
  }
  PyThreadState *saved = keep_gil ? NULL : PyEval_SaveThread();
  for (int i = 1; i < count; i++) {
    if (pthread_create(&ids[i], NULL, copy_part, &parts[i]) != 0) break;
    started = i;
  }
  copy_part(&parts[0]);
  for (int i = started + 1; i < count; i++) copy_part(&parts[i]); /* threads that did not start */
  for (int i = 1; i <= started; i++) pthread_join(ids[i], NULL);
  if (saved) PyEval_RestoreThread(saved);
  PyBuffer_Release(&out);
  if (!check) Py_RETURN_NONE;
  uint32_t crc = parts[0].crc;
  for (int i = 1; i < count; i++) crc = crc_join(crc, parts[i].crc, parts[i].len);
  return PyLong_FromUnsignedLong(crc);
}

/* ---- module ------------------------------------------------------------------------------- */

static PyObject *py_hardware(PyObject *self, PyObject *unused) { return PyBool_FromLong(hardware); }

static PyMethodDef methods[] = {
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(data, crc=0): the CRC32C of data, continuing crc."},
    {"receive", py_receive, METH_VARARGS,
     "receive(fd, timeout_ms, head, views, check): fills each view from head, then the socket."},
    {"copy", py_copy, METH_VARARGS,
     "copy(out, address, threads, check): copies into out from address on several threads "
     "(0: this one, the GIL kept)."},
    {"hardware_crc", py_hardware, METH_NOARGS, "Whether CRC32C runs on the CPU's instruction."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kvcache._native",
                                    "The transfers of a load, without the interpreter's lock.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) {
  init_crc();
  return PyModule_Create(&module);
}
