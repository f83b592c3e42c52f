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
FEATURES = frozenset(f for f in os.environ.get("PIJIT_FUZZ_FEATURES", "").split(",") if f)


class Program:
    def __init__(self, seed, source, dtype, k):
        self.seed = seed
        self.source = source
        self.dtype = dtype
        self.k = k
