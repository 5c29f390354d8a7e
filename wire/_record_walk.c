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
 *
 * The log cleaner's key walks (log/cleaner_keys.py has the same two in
 * Python on top of decode_batch, and a differential test checks them):
 *
 * put_keys(payload, count, base_offset, first_dirty, offsets) -> None
 *     offsets[key] = base_offset + offsetDelta for every keyed record at or
 *     above first_dirty (the offset map's pass over the dirty range).
 * survivors(payload, count, base_offset, offsets) -> [(index, value_is_null)]
 *     the records with a key whose offsets.get(key, -1) is not above their own
 *     offset (the records a clean keeps, before the tombstone rule).
 *
 * They read a record's key and value length and skip its headers by its
 * length, so a clean of records of 200 bytes no longer costs a Python
 * Record object each (about 1.5 us): the cleaner process gets through its
 * work in a fraction of the CPU time. A malformed payload raises ValueError.
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

/* One record of a payload: its key (NULL when null), value nullness and offset delta. */
static int next_record(const uint8_t *p, Py_ssize_t end, Py_ssize_t *pos, const uint8_t **key,
                       Py_ssize_t *key_len, int *value_null, int64_t *offset_delta) {
    uint64_t raw;
    int rc;
    if ((rc = read_raw(p, end, pos, 5, &raw)))
        return rc;
    int64_t length = unzigzag32(raw);
    if (length <= 0 || length > end - *pos)
        return REASON_LENGTH;
    Py_ssize_t record_end = *pos + (Py_ssize_t)length;
    *pos += 1; /* attributes */
    if ((rc = read_raw(p, record_end, pos, 10, &raw))) /* timestampDelta */
        return rc;
    if ((rc = read_raw(p, record_end, pos, 5, &raw))) /* offsetDelta */
        return rc;
    *offset_delta = unzigzag32(raw);
    if ((rc = read_raw(p, record_end, pos, 5, &raw)))
        return rc;
    int64_t size = unzigzag32(raw);
    if (size > record_end - *pos)
        return REASON_TRUNCATED;
    *key = size >= 0 ? p + *pos : NULL;
    *key_len = size >= 0 ? (Py_ssize_t)size : 0;
    if (size > 0)
        *pos += (Py_ssize_t)size;
    if ((rc = read_raw(p, record_end, pos, 5, &raw)))
        return rc;
    size = unzigzag32(raw);
    if (size > record_end - *pos)
        return REASON_TRUNCATED;
    *value_null = size < 0;
    *pos = record_end; /* headers: not needed */
    return OK;
}

static PyObject *malformed(int rc, Py_ssize_t index) {
    PyErr_Format(PyExc_ValueError, "malformed record %zd (reason %d)", index, rc);
    return NULL;
}

static PyObject *put_keys(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset, first_dirty;
    PyObject *offsets;
    if (!PyArg_ParseTuple(args, "y*nLLO!", &view, &count, &base_offset, &first_dirty,
                          &PyDict_Type, &offsets))
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t pos = 0;
    PyObject *result = NULL;
    for (Py_ssize_t index = 0; index < count; index++) {
        const uint8_t *key;
        Py_ssize_t key_len;
        int value_null, rc;
        int64_t delta;
        if ((rc = next_record(p, view.len, &pos, &key, &key_len, &value_null, &delta))) {
            malformed(rc, index);
            goto done;
        }
        long long offset = base_offset + delta;
        if (key == NULL || offset < first_dirty)
            continue;
        PyObject *k = PyBytes_FromStringAndSize((const char *)key, key_len);
        PyObject *v = k ? PyLong_FromLongLong(offset) : NULL;
        int failed = v == NULL || PyDict_SetItem(offsets, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (failed)
            goto done;
    }
    if (pos != view.len) {
        malformed(REASON_LEFTOVER, count);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return result;
}

static PyObject *survivors(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    long long base_offset;
    PyObject *offsets;
    if (!PyArg_ParseTuple(args, "y*nLO!", &view, &count, &base_offset, &PyDict_Type, &offsets))
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    Py_ssize_t pos = 0;
    PyObject *kept = PyList_New(0);
    if (kept == NULL)
        goto fail;
    for (Py_ssize_t index = 0; index < count; index++) {
        const uint8_t *key;
        Py_ssize_t key_len;
        int value_null, rc;
        int64_t delta;
        if ((rc = next_record(p, view.len, &pos, &key, &key_len, &value_null, &delta))) {
            malformed(rc, index);
            goto fail;
        }
        if (key == NULL)
            continue;
        long long offset = base_offset + delta;
        PyObject *k = PyBytes_FromStringAndSize((const char *)key, key_len);
        if (k == NULL)
            goto fail;
        PyObject *latest = PyDict_GetItemWithError(offsets, k); /* borrowed */
        Py_DECREF(k);
        if (latest == NULL && PyErr_Occurred())
            goto fail;
        if (latest != NULL) {
            long long later = PyLong_AsLongLong(latest);
            if (later == -1 && PyErr_Occurred())
                goto fail;
            if (later > offset)
                continue;
        }
        PyObject *item = Py_BuildValue("(nO)", index, value_null ? Py_True : Py_False);
        if (item == NULL)
            goto fail;
        int failed = PyList_Append(kept, item) < 0;
        Py_DECREF(item);
        if (failed)
            goto fail;
    }
    if (pos != view.len) {
        malformed(REASON_LEFTOVER, count);
        goto fail;
    }
    PyBuffer_Release(&view);
    return kept;
fail:
    Py_XDECREF(kept);
    PyBuffer_Release(&view);
    return NULL;
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
    {"put_keys", put_keys, METH_VARARGS,
     "put_keys(payload, count, base_offset, first_dirty, offsets): offsets[key] = offset for "
     "every keyed record at or above first_dirty."},
    {"survivors", survivors, METH_VARARGS,
     "survivors(payload, count, base_offset, offsets) -> [(index, value_is_null)] of the keyed "
     "records no later offset of their key shadows."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_walk",
    "C record walk for kafkette.wire.batch_validation.", -1, methods,
};

PyMODINIT_FUNC PyInit__record_walk(void) { return PyModule_Create(&module); }
