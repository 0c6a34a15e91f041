# The C seam of ``cemit.pyx`` (an engine's compiled deliver subclasses it: ``cimport``).

cdef class Delivery:
    cdef int deliver(self, stream, values, targets) except -1
