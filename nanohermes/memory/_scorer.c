/* The exact BM25F top k of index.py, compiled: the same scores as its pure-Python search, bit for
 * bit, without the interpreter's cost per posting (SPEC §3.5). Optional (setup.py): index.py uses
 * its pure-Python search where this module was not built.
 *
 * top_k(postings, weights, lengths, stamps, scratch, sat_a, sat_b, k) -> [(score, slot), ...]
 *   postings  list, one item per query term in query order: a dict {slot: weighted tf}, or a pair
 *             (buffer of int32 slots, buffer of double tfs) as packs.py keeps them
 *   weights   list of float: idf · (K1 + 1) per term, each > 0
 *   lengths   buffer of double: the weighted length per slot
 *   stamps    list of int: the entry's ts per slot (any size; equal scores: newer first)
 *   scratch   writable buffer of double, at least as long as lengths, all 0.0; left all 0.0
 * A slot's score is the sum, in query order, of weight · tf / (tf + (sat_a + sat_b · length)),
 * each operation rounded as Python rounds it: no fused multiply-add (the pragma, and
 * -ffp-contract=off in setup.py). Results: score descending, then newer ts, then lower slot.
 *
 * Nothing here calls back into Python code while it holds a borrowed reference: tfs, weights and
 * stamps must be exact ints or floats, so no __float__ or __gt__ of a subclass can run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#if defined(__clang__)  /* GCC ignores this pragma: -ffp-contract=off (setup.py) */
#pragma STDC FP_CONTRACT OFF
#endif

typedef struct {
    double score;
    Py_ssize_t slot;
} Hit;

typedef struct {
    const double *lengths;
    Py_ssize_t n_slots;
    double *scores;
    Py_ssize_t *touched;
    Py_ssize_t n_touched;
    double sat_a, sat_b;
} Sums;

/* An exact float or int as a double; -1 with TypeError for anything else. */
static int
exact_double(PyObject *obj, double *out, const char *what)
{
    if (PyFloat_CheckExact(obj)) {
        *out = PyFloat_AS_DOUBLE(obj);
        return 0;
    }
    if (PyLong_CheckExact(obj)) {
        *out = PyLong_AsDouble(obj);
        return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be an int or a float", what);
    return -1;
}

/* Add one posting: count the slot's first score, then add the contribution as Python does. */
static inline int
add(Sums *sums, double weight, Py_ssize_t slot, double tf)
{
    if (slot < 0 || slot >= sums->n_slots || !(tf > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "a posting's slot is out of range or its tf is not positive");
        return -1;
    }
    double sat = sums->sat_a + sums->sat_b * sums->lengths[slot];
    double contribution = weight * tf / (tf + sat);
    if (sums->scores[slot] == 0.0) {
        sums->touched[sums->n_touched++] = slot;  /* scores only grow: once per slot */
    }
    sums->scores[slot] += contribution;
    return 0;
}

static int
add_dict(Sums *sums, double weight, PyObject *held)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(held, &pos, &key, &value)) {
        double tf;
        if (!PyLong_CheckExact(key)) {
            PyErr_SetString(PyExc_TypeError, "a posting's slot must be an int");
            return -1;
        }
        Py_ssize_t slot = PyLong_AsSsize_t(key);
        if ((slot == -1 && PyErr_Occurred()) || exact_double(value, &tf, "a posting's tf") < 0) return -1;
        if (add(sums, weight, slot, tf) < 0) return -1;
    }
    return 0;
}

static int
get_buffer(PyObject *obj, Py_buffer *view, const char *format, Py_ssize_t itemsize, int writable,
           const char *what)
{
    int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != itemsize || view->format == NULL || strcmp(view->format, format) != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s must be a buffer of '%s'", what, format);
        return -1;
    }
    return 0;
}

static int
add_packed(Sums *sums, double weight, PyObject *held)
{
    Py_buffer slots_view, tfs_view;
    if (get_buffer(PyTuple_GET_ITEM(held, 0), &slots_view, "i", sizeof(int), 0, "packed slots") < 0)
        return -1;
    if (get_buffer(PyTuple_GET_ITEM(held, 1), &tfs_view, "d", sizeof(double), 0, "packed tfs") < 0) {
        PyBuffer_Release(&slots_view);
        return -1;
    }
    int status = 0;
    Py_ssize_t count = tfs_view.len / (Py_ssize_t)sizeof(double);
    if (slots_view.len / (Py_ssize_t)sizeof(int) != count) {
        PyErr_SetString(PyExc_ValueError, "packed slots and tfs differ in length");
        status = -1;
    }
    const int *slots = (const int *)slots_view.buf;
    const double *tfs = (const double *)tfs_view.buf;
    for (Py_ssize_t i = 0; status == 0 && i < count; i++) {
        status = add(sums, weight, slots[i], tfs[i]);
    }
    PyBuffer_Release(&tfs_view);
    PyBuffer_Release(&slots_view);
    return status;
}

/* Each term's contributions into sums->scores, in query order. */
static int
accumulate(Sums *sums, PyObject *postings, PyObject *weights)
{
    for (Py_ssize_t term = 0; term < PyList_GET_SIZE(postings); term++) {
        PyObject *held = PyList_GET_ITEM(postings, term);
        double weight;
        if (exact_double(PyList_GET_ITEM(weights, term), &weight, "a weight") < 0) return -1;
        if (!(weight > 0.0 && isfinite(weight))) {
            PyErr_SetString(PyExc_ValueError, "a weight is not positive and finite");
            return -1;
        }
        if ((PyDict_CheckExact(held) ? add_dict(sums, weight, held) : add_packed(sums, weight, held)) < 0)
            return -1;
    }
    return 0;
}

/* 1 when a ranks before b, 0 when not, -1 on error. */
static int
ranks_before(const Hit *a, const Hit *b, PyObject *stamps)
{
    if (a->score != b->score) return a->score > b->score;
    PyObject *ta = PyList_GET_ITEM(stamps, a->slot);
    PyObject *tb = PyList_GET_ITEM(stamps, b->slot);
    if (!PyLong_CheckExact(ta) || !PyLong_CheckExact(tb)) {
        PyErr_SetString(PyExc_TypeError, "a stamp must be an int");
        return -1;
    }
    int newer = PyObject_RichCompareBool(ta, tb, Py_GT);  /* exact ints: no Python code runs */
    if (newer != 0) return newer;
    int older = PyObject_RichCompareBool(ta, tb, Py_LT);
    if (older != 0) return older < 0 ? -1 : 0;
    return a->slot < b->slot;
}

/* heap[0] is the worst hit kept; move the hit at i down to its place. */
static int
sift_down(Hit *heap, Py_ssize_t size, Py_ssize_t i, PyObject *stamps)
{
    for (;;) {
        Py_ssize_t worst = i;
        for (Py_ssize_t child = 2 * i + 1; child <= 2 * i + 2 && child < size; child++) {
            int before = ranks_before(&heap[worst], &heap[child], stamps);
            if (before < 0) return -1;
            if (before) worst = child;
        }
        if (worst == i) return 0;
        Hit held = heap[i];
        heap[i] = heap[worst];
        heap[worst] = held;
        i = worst;
    }
}

static int
sift_up(Hit *heap, Py_ssize_t i, PyObject *stamps)
{
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        int before = ranks_before(&heap[parent], &heap[i], stamps);
        if (before <= 0) return before;
        Hit held = heap[i];
        heap[i] = heap[parent];
        heap[parent] = held;
        i = parent;
    }
    return 0;
}

/* Keep the k best touched slots in `heap` (worst on top); their number, or -1. */
static Py_ssize_t
select_best(const Sums *sums, PyObject *stamps, Hit *heap, Py_ssize_t k)
{
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < sums->n_touched; i++) {
        Hit hit = {sums->scores[sums->touched[i]], sums->touched[i]};
        if (size < k) {
            heap[size] = hit;
            if (sift_up(heap, size++, stamps) < 0) return -1;
            continue;
        }
        int better = ranks_before(&hit, &heap[0], stamps);
        if (better < 0) return -1;
        if (better) {
            heap[0] = hit;
            if (sift_down(heap, size, 0, stamps) < 0) return -1;
        }
    }
    return size;
}

/* The hits of `heap` as a list of (score, slot), best first; the heap is emptied. */
static PyObject *
ranked_list(Hit *heap, Py_ssize_t size, PyObject *stamps)
{
    PyObject *result = PyList_New(size);
    if (result == NULL) return NULL;
    for (Py_ssize_t place = size - 1; place >= 0; place--) {  /* pop the worst into the last place */
        PyObject *pair = Py_BuildValue("(dn)", heap[0].score, heap[0].slot);
        if (pair == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyList_SET_ITEM(result, place, pair);
        heap[0] = heap[place];
        if (sift_down(heap, place, 0, stamps) < 0) {
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

/* The number of postings (at least 1), or -1 on a malformed item. */
static Py_ssize_t
count_postings(PyObject *postings, PyObject *weights, PyObject *stamps)
{
    if (!PyList_CheckExact(postings) || !PyList_CheckExact(weights) || !PyList_CheckExact(stamps)) {
        PyErr_SetString(PyExc_TypeError, "postings, weights and stamps must be lists");
        return -1;
    }
    if (PyList_GET_SIZE(postings) != PyList_GET_SIZE(weights)) {
        PyErr_SetString(PyExc_ValueError, "postings and weights differ in length");
        return -1;
    }
    Py_ssize_t total = 1;
    for (Py_ssize_t term = 0; term < PyList_GET_SIZE(postings); term++) {
        PyObject *held = PyList_GET_ITEM(postings, term);
        if (PyDict_CheckExact(held)) {
            total += PyDict_GET_SIZE(held);
        } else if (PyTuple_CheckExact(held) && PyTuple_GET_SIZE(held) == 2) {
            Py_buffer tfs;
            if (get_buffer(PyTuple_GET_ITEM(held, 1), &tfs, "d", sizeof(double), 0, "packed tfs") < 0)
                return -1;
            total += tfs.len / (Py_ssize_t)sizeof(double);
            PyBuffer_Release(&tfs);
        } else {
            PyErr_SetString(PyExc_TypeError, "a term's postings must be a dict or a (slots, tfs) pair");
            return -1;
        }
    }
    return total;
}

/* The scores of `sums` ranked, k at most; NULL on error. */
static PyObject *
ranked(const Sums *sums, PyObject *stamps, Py_ssize_t k)
{
    if (k > sums->n_touched) k = sums->n_touched;
    Hit *heap = PyMem_New(Hit, k + 1);
    if (heap == NULL) return PyErr_NoMemory();
    Py_ssize_t size = select_best(sums, stamps, heap, k);
    PyObject *result = size < 0 ? NULL : ranked_list(heap, size, stamps);
    PyMem_Free(heap);
    return result;
}

static PyObject *
top_k(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "top_k takes 8 arguments");
        return NULL;
    }
    PyObject *postings = args[0], *weights = args[1], *stamps = args[3];
    Sums sums = {0};
    Py_ssize_t k = PyLong_AsSsize_t(args[7]);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (exact_double(args[5], &sums.sat_a, "sat_a") < 0 || exact_double(args[6], &sums.sat_b, "sat_b") < 0)
        return NULL;
    Py_ssize_t total = count_postings(postings, weights, stamps);
    if (total < 0) return NULL;
    if (k <= 0 || total == 1) return PyList_New(0);
    Py_buffer lengths, scratch;
    if (get_buffer(args[2], &lengths, "d", sizeof(double), 0, "lengths") < 0) return NULL;
    if (get_buffer(args[4], &scratch, "d", sizeof(double), 1, "scratch") < 0) {
        PyBuffer_Release(&lengths);
        return NULL;
    }
    sums.lengths = (const double *)lengths.buf;
    sums.n_slots = lengths.len / (Py_ssize_t)sizeof(double);
    sums.scores = (double *)scratch.buf;
    PyObject *result = NULL;
    if (scratch.len < lengths.len || PyList_GET_SIZE(stamps) < sums.n_slots) {
        PyErr_SetString(PyExc_ValueError, "scratch and stamps must cover every slot");
    } else if ((sums.touched = PyMem_New(Py_ssize_t, total < sums.n_slots ? total : sums.n_slots)) == NULL) {
        PyErr_NoMemory();
    } else {
        if (accumulate(&sums, postings, weights) == 0) result = ranked(&sums, stamps, k);
        for (Py_ssize_t i = 0; i < sums.n_touched; i++) sums.scores[sums.touched[i]] = 0.0;
    }
    PyMem_Free(sums.touched);
    PyBuffer_Release(&scratch);
    PyBuffer_Release(&lengths);
    return result;
}

static PyMethodDef methods[] = {
    {"top_k", (PyCFunction)(void (*)(void))top_k, METH_FASTCALL,
     "top_k(postings, weights, lengths, stamps, scratch, sat_a, sat_b, k) -> [(score, slot), ...]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scorer_module = {
    PyModuleDef_HEAD_INIT, "_scorer", "The exact BM25F top k of index.py, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scorer(void)
{
    return PyModule_Create(&scorer_module);
}
