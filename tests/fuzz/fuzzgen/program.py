"""A generated program (its source text, dtype and `k`) and the opt-in generator features."""
import os

INDENT = "    "

# Opt-in generator features (comma-separated in $PIJIT_FUZZ_FEATURES; the same seed gives
# another program under other features):
#   random  seeded random ops (ops.rand), the random stream after the call is compared too
#   wide    250 extra locals in every program (EXTENDED_ARG in prologues and bridges)
#   long    40 to 90 statements (long chains of breaks in one call)
#   ctl     `break`/`continue` under a condition inside loop bodies (often around breaks)
#   effects deletions (del o.attr, del STATE[k], del LOG[i], del G), closure cells written
#           with nonlocal (a counter of the enclosing function, counters of nested
#           functions), STATE's views and mutating methods (pop, popitem, setdefault,
#           update, clear) after stores
#   kwargs  the function takes **kw (called with a number z and a tensor w) and reads them
#   made    objects built in the function and Python's object machinery (see made.py)
#   lists   the function takes a list of tensors `ls`, which it reads, iterates and mutates
#   flow    control flow and iteration protocols (see flow.py, flow_calls.py, flow_prelude.py):
#           `with` over context managers written in Python (made in the function or
#           module-level; __enter__ returning the manager, a number or a tensor; __exit__
#           counting, logging, printing, doing tensor work or swallowing; contextlib
#           generators; nested managers; return, break and continue inside the body;
#           exceptions through it or out of __enter__), iterating NumPy arrays (1-D float, int,
#           float32, int64 that wraps, uint8, bool; 2-D rows made tensors; views; arrays in a
#           dict or an attribute; arrays stored into before, during and through the loop;
#           enumerate, zip, sum, list, early break), map/filter (lambdas, helpers, builtins,
#           several iterables, a list mutated before the map is consumed, next() then list(),
#           side effects whose order counts), exception objects (args, str, isinstance,
#           attributes, identity; raised under conditions on Python values, so some calls
#           raise; caught in the function, kept past the except clause; user exception classes;
#           try/except/else, try/finally, raise ... from), generators stepped an item at a
#           time (flow_generators.py: for loops, comprehensions and next() over generator
#           functions of the prelude or defined in the function and generator expressions;
#           while loops and returns in them; bodies that append to the list a generator indexes,
#           change the attribute it reads or rebind the cell it closes over; loops left early
#           with the rest taken by list/sum/next; next() inside loops; nested loops; generators
#           consumed twice, logging, with try/finally, yield from, raising, in zip/enumerate);
#           ordinary statements inside their bodies, so graph breaks happen there. The
#           harness also compares the module-level managers, arrays and KNOB (the object
#           generators read) and a second log (read_flow), and exceptions (raised or logged)
#           by type, args, attributes, notes, traceback presence, cause and context
FEATURES = frozenset(f for f in os.environ.get("PIJIT_FUZZ_FEATURES", "").split(",") if f)


class Program:
    def __init__(self, seed, source, dtype, k):
        self.seed = seed
        self.source = source
        self.dtype = dtype
        self.k = k
