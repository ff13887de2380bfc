# cython: language_level=3
"""The sort of a shard's records by (key, input position), without the GIL.

A quicksort with a median of three and an inlined comparison (libc's qsort calls through a pointer for each of
its ~n log n comparisons: a fifth of a shard build), insertion sort for short runs, and qsort itself past a
depth limit, so that no input is quadratic. The order is total (positions differ), so stability does not matter.
"""
from libc.stdlib cimport qsort
from libc.string cimport memcmp

cdef enum:
    _INSERTION_MAX = 16             # runs this short are insertion-sorted


cdef int _compare_entries(const void *pa, const void *pb) noexcept nogil:
    cdef const Entry *a = <const Entry *>pa
    cdef const Entry *b = <const Entry *>pb
    cdef size_t m
    cdef int c
    if a.head != b.head:
        return -1 if a.head < b.head else 1
    m = a.key_len if a.key_len < b.key_len else b.key_len
    if m > 8:
        c = memcmp(a.key + 8, b.key + 8, m - 8)
        if c != 0:
            return c
    if a.key_len != b.key_len:
        return -1 if a.key_len < b.key_len else 1
    if a.seq != b.seq:
        return -1 if a.seq < b.seq else 1
    return 0


cdef inline bint _less(const Entry *a, const Entry *b) noexcept nogil:
    # _compare_entries(a, b) < 0, inlined: the heads decide almost every comparison of hashed keys.
    if a.head != b.head:
        return a.head < b.head
    return _compare_entries(a, b) < 0


cdef inline void _swap(Entry *a, Entry *b) noexcept nogil:
    cdef Entry tmp = a[0]
    a[0] = b[0]
    b[0] = tmp


cdef inline size_t _hoare_partition(Entry *e, size_t n) noexcept nogil:
    """Move the median of e[0], e[n/2], e[n-1] to the middle and partition e around it (n > 2): returns j with
    e[0..j] <= pivot <= e[j+1..n-1]."""
    cdef size_t i = 0, j = n - 1, mid = n // 2
    cdef Entry pivot
    if _less(&e[mid], &e[0]):
        _swap(&e[mid], &e[0])
    if _less(&e[n - 1], &e[mid]):
        _swap(&e[mid], &e[n - 1])
        if _less(&e[mid], &e[0]):
            _swap(&e[mid], &e[0])
    pivot = e[mid]
    while True:                         # e[0] <= pivot <= e[n-1] bound both scans
        while _less(&e[i], &pivot):
            i += 1
        while _less(&pivot, &e[j]):
            j -= 1
        if i >= j:
            return j
        _swap(&e[i], &e[j])
        i += 1
        j -= 1


cdef inline void _insertion_sort(Entry *e, size_t n) noexcept nogil:
    cdef size_t i, j
    cdef Entry tmp
    for i in range(1, n):
        tmp = e[i]
        j = i
        while j > 0 and _less(&tmp, &e[j - 1]):
            e[j] = e[j - 1]
            j -= 1
        e[j] = tmp


cdef void _quicksort(Entry *e, size_t n, int depth) noexcept nogil:
    cdef size_t lo
    while n > _INSERTION_MAX:
        if depth == 0:
            qsort(e, n, sizeof(Entry), _compare_entries)
            return
        depth -= 1
        lo = _hoare_partition(e, n) + 1
        # Recurse into the smaller side, loop on the larger: the stack stays O(log n).
        if lo < n - lo:
            _quicksort(e, lo, depth)
            e += lo
            n -= lo
        else:
            _quicksort(e + lo, n - lo, depth)
            n = lo
    _insertion_sort(e, n)


cdef inline int _log2(size_t n) noexcept nogil:
    cdef int r = 0
    while n > 1:
        n >>= 1
        r += 1
    return r


cdef void sort_entries(Entry *e, size_t n) noexcept nogil:
    """Sort e[0..n-1] by (key, input position)."""
    _quicksort(e, n, 2 * _log2(n) + 4)
