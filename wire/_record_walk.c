/*
 * kafkette.wire._record_walk: the record walk of kafkette.wire.batch_validation, in C.
 *
 * Checks that a (decompressed) magic-v2 record payload is exactly `count`
 * records whose fields add up to their lengths and whose offset deltas are
 * 0..count-1, reading varints the way Kafka's DefaultRecord.readFrom does.
 * It is the only per-record work on the produce path: in Python it costs
 * about 1 us per record, here a few ns. The GIL is released for large
 * payloads so the event loop keeps running while a worker thread validates.
 *
 * walk(buffer, count, require_keys=False) -> None when valid, else (reason, record_index).
 * With require_keys (compacted topics) a null key is REASON_NULL_KEY.
 * Reasons are the REASON_* constants of batch_validation.py; that module's
 * pure-Python walk is the reference and must give identical answers (a
 * differential test in tests/wire checks it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum {
    OK = 0,
    REASON_TRUNCATED = 1,
    REASON_LENGTH = 2,
    REASON_OFFSET_DELTA = 3,
    REASON_HEADER_COUNT = 4,
    REASON_HEADER_KEY = 5,
    REASON_FIELDS = 6,
    REASON_LEFTOVER = 7,
    REASON_VARINT = 8,
    REASON_NULL_KEY = 9,
};

/* Unsigned base-128 varint of at most max_bytes bytes; int32 varints keep the low 32 bits. */
static inline int read_raw(const uint8_t *p, Py_ssize_t end, Py_ssize_t *pos, int max_bytes,
                           uint64_t *raw) {
    uint64_t result = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= end)
            return REASON_TRUNCATED;
        uint8_t b = p[(*pos)++];
        result |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            if (max_bytes == 5)
                result &= 0xFFFFFFFFu;
            *raw = result;
            return OK;
        }
        shift += 7;
    }
    return REASON_VARINT;
}

static inline int64_t unzigzag32(uint64_t raw) {
    uint32_t r = (uint32_t)raw;
    return (int64_t)(int32_t)((r >> 1) ^ (0u - (r & 1u)));
}

static int walk(const uint8_t *p, Py_ssize_t end, Py_ssize_t count, int require_keys,
                Py_ssize_t *index_out) {
    Py_ssize_t pos = 0;
    uint64_t raw;
    int rc;
    for (Py_ssize_t index = 0; index < count; index++) {
        *index_out = index;
        if ((rc = read_raw(p, end, &pos, 5, &raw)))
            return rc;
        int64_t length = unzigzag32(raw);
        if (length <= 0 || length > end - pos)
            return REASON_LENGTH;
        Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes, unused */
        if ((rc = read_raw(p, end, &pos, 10, &raw))) /* timestampDelta */
            return rc;
        if ((rc = read_raw(p, end, &pos, 5, &raw))) /* offsetDelta */
            return rc;
        if (raw != (uint64_t)index << 1)
            return REASON_OFFSET_DELTA;
        for (int field = 0; field < 2; field++) { /* key, value: negative is null */
            if ((rc = read_raw(p, end, &pos, 5, &raw)))
                return rc;
            int64_t size = unzigzag32(raw);
            if (size > 0) {
                if (size > end - pos)
                    return REASON_TRUNCATED;
                pos += (Py_ssize_t)size;
            } else if (size < 0 && field == 0 && require_keys) {
                return REASON_NULL_KEY; /* compacted topics only: Kafka's LogValidator */
            }
        }
        if ((rc = read_raw(p, end, &pos, 5, &raw)))
            return rc;
        int64_t headers = unzigzag32(raw);
        if (headers < 0 || (headers > 0 && headers > record_end - pos))
            return REASON_HEADER_COUNT;
        for (int64_t h = 0; h < headers; h++) {
            if ((rc = read_raw(p, end, &pos, 5, &raw)))
                return rc;
            int64_t size = unzigzag32(raw);
            if (size < 0)
                return REASON_HEADER_KEY;
            if (size > end - pos)
                return REASON_TRUNCATED;
            pos += (Py_ssize_t)size;
            if ((rc = read_raw(p, end, &pos, 5, &raw)))
                return rc;
            size = unzigzag32(raw);
            if (size > 0) {
                if (size > end - pos)
                    return REASON_TRUNCATED;
                pos += (Py_ssize_t)size;
            }
        }
        if (pos != record_end)
            return REASON_FIELDS;
    }
    *index_out = count;
    return pos == end ? OK : REASON_LEFTOVER;
}

static PyObject *walk_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    int require_keys = 0;
    if (!PyArg_ParseTuple(args, "y*n|p", &view, &count, &require_keys))
        return NULL;
    Py_ssize_t index = 0;
    int rc;
    if (view.len >= 65536) {
        Py_BEGIN_ALLOW_THREADS
        rc = walk((const uint8_t *)view.buf, view.len, count, require_keys, &index);
        Py_END_ALLOW_THREADS
    } else {
        rc = walk((const uint8_t *)view.buf, view.len, count, require_keys, &index);
    }
    PyBuffer_Release(&view);
    if (rc == OK)
        Py_RETURN_NONE;
    return Py_BuildValue("(in)", rc, index);
}

static PyMethodDef methods[] = {
    {"walk", walk_records, METH_VARARGS,
     "walk(buffer, count, require_keys=False) -> None if the payload is exactly count valid records, "
     "else (reason, record_index)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_walk",
    "C record walk for kafkette.wire.batch_validation.", -1, methods,
};

PyMODINIT_FUNC PyInit__record_walk(void) { return PyModule_Create(&module); }
