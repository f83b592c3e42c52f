"""Statistics and searches over sorted data in mindspore.numpy's names and signatures:
searchsorted, digitize, interp, histograms, cov, corrcoef, unwrap, bincount and unique.
Searches are counts of comparisons against every element (one broadcast compare and a sum: no
data-dependent shapes), histograms sum one-hot bin memberships, so all of them are captured as
graphs; bincount and unique size their results by the data, which they read on the host (a
captured graph breaks there).

Dtypes follow MindSpore where it differs from NumPy: float results of integer data are
Float32 (NumPy: Float64), and histogram counts are Float32 (NumPy: Int64)."""
import math

import numpy as onp

from pijit._tensor import bool_, float32, float64, int64
from pijit.numpy._utils import (Tensor, cast_to, check_axis, check_dtype, check_int, is_float,
                                is_number, native, operands, plain, raise_error, to_float,
                                to_tensor)
from pijit.numpy.reductions import cumsum


# ---- searching sorted data -----------------------------------------------------------------------

def _search(a, v, right):
    """For each element of v, the number of elements of the 1-D a that are < v (<= v when
    `right`): the insertion index into an ascending a."""
    n = a.shape[0]
    a, v = operands("searchsorted", a, v)
    lhs = native.reshape(a, (1,) * v.ndim + (n,))
    rhs = native.unsqueeze(v, -1)
    hits = native.less_equal(lhs, rhs) if right else native.less(lhs, rhs)
    return native.sum(hits.astype(int64), (v.ndim,), False)


def searchsorted(a, v, side="left", sorter=None):
    """The indices (Int64) at which the values v would be inserted into the ascending 1-D `a`
    (sorted by the indices `sorter` when given) to keep it sorted: before equal elements
    ('left') or after them ('right')."""
    fname = "searchsorted"
    if side not in ("left", "right"):
        raise_error(ValueError, f"{fname}: side must be 'left' or 'right', got {side!r}")
    a = to_tensor(fname, a)
    if a.ndim != 1:
        raise_error(ValueError, f"{fname}: a must be 1-D, got shape {a.shape}")
    if sorter is not None:
        a = native.gather(a, cast_to(to_tensor(fname, sorter), int64), 0)
    return _search(a, to_tensor(fname, v), side == "right")


def digitize(x, bins, right=False):
    """The index of the bin of `bins` (monotonic, increasing or decreasing) each value of x
    falls in: i with bins[i - 1] <= x < bins[i] for increasing bins (< and <= swapped when
    `right`)."""
    fname = "digitize"
    x, bins = to_tensor(fname, x), to_tensor(fname, bins)
    if bins.ndim != 1:
        raise_error(ValueError, f"{fname}: bins must be 1-D, got shape {bins.shape}")
    n = bins.shape[0]
    if n == 0:
        return native.zeros(tuple(x.shape), int64)
    increasing = _search(bins, x, not right)
    decreasing = n - _search(bins[::-1], x, not right)
    return native.where(native.less_equal(bins[0], bins[n - 1]), increasing, decreasing)


def interp(x, xp, fp, left=None, right=None):
    """The piecewise-linear interpolant of the points (xp, fp) (xp ascending) at x; left and
    right (default fp[0] and fp[-1]) outside xp's range."""
    fname = "interp"
    xp, fp = to_float(fname, xp), to_float(fname, fp)
    x = to_float(fname, x)
    x, xp = operands(fname, x, xp)
    x, fp = operands(fname, x, fp)
    xp = cast_to(xp, x.dtype)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape[0] != fp.shape[0] or xp.shape[0] == 0:
        raise_error(ValueError, f"{fname}: xp and fp must be 1-D of one non-zero length, got "
                                f"shapes {xp.shape} and {fp.shape}")
    n = xp.shape[0]
    lo_value = fp[0] if left is None else native.full((), plain(left), dtype=fp.dtype)
    hi_value = fp[n - 1] if right is None else native.full((), plain(right), dtype=fp.dtype)
    if n == 1:
        y = native.broadcast_to(fp[0], tuple(x.shape))
    else:
        j = native.clip(_search(xp, x, True) - 1, 0, n - 2)
        x0, x1 = native.gather(xp, j, 0), native.gather(xp, j + 1, 0)
        y0, y1 = native.gather(fp, j, 0), native.gather(fp, j + 1, 0)
        y = y0 + (y1 - y0) / (x1 - x0) * (x - x0)
        y = native.where(native.equal(x, xp[n - 1]), native.broadcast_to(fp[n - 1], y.shape), y)
    y = native.where(native.less(x, xp[0]), lo_value, y)
    return native.where(native.greater(x, xp[n - 1]), hi_value, y)


# ---- histograms ----------------------------------------------------------------------------------

def _bin_edges(fname, a, bins, range_):
    """The bin edges for the flattened float data a: `bins` equal bins over range_ (or a's
    minimum to maximum), or the given edges."""
    if isinstance(bins, Tensor) or isinstance(plain(bins), (list, tuple)):
        edges = to_tensor(fname, bins)
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise_error(ValueError, f"{fname}: bins must be an int or a 1-D sequence of at least "
                                    f"two edges")
        return edges
    n = check_int(fname, "bins", bins)
    if n < 1:
        raise_error(ValueError, f"{fname}: bins must be positive, got {n}")
    if range_ is not None:
        lo, hi = (float(plain(v)) for v in tuple(range_))
        if lo > hi:
            raise_error(ValueError, f"{fname}: range must be (min, max) with min <= max, got "
                                    f"{tuple(range_)}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        return cast_to(native.linspace(lo, hi, n + 1, dtype=float64), a.dtype)
    if a.shape[0] == 0:
        lo = hi = native.zeros((), a.dtype)
    else:
        lo, hi = native.min(a, None), native.max(a, None)
    same = native.equal(lo, hi)
    lo, hi = native.where(same, lo - 0.5, lo), native.where(same, hi + 0.5, hi)
    steps = native.arange(0, n + 1, 1, dtype=a.dtype) / float(n)
    edges = lo + (hi - lo) * steps
    return native.concat([edges[:n], native.reshape(hi, (1,))], 0)


def _flat_float(fname, a):
    a = native.reshape(to_tensor(fname, a), (-1,))
    return a if is_float(a.dtype) else a.astype(float32)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002 - NumPy's name
    """The edges of the bins histogram(a, bins, range) uses."""
    del weights  # equal-width bins do not depend on them
    a = _flat_float("histogram_bin_edges", a)
    return _bin_edges("histogram_bin_edges", a, bins, range)


def _bin_index(a, edges):
    """The bin of each element of a (the last bin includes its right edge), and whether it
    falls inside the edges at all."""
    nb = edges.shape[0] - 1
    a, e = operands("histogram", a, edges)
    idx = _search(e, a, True) - 1
    idx = native.where(native.equal(a, e[nb]), native.full((), nb - 1, dtype=int64), idx)
    inside = native.logical_and(native.greater_equal(a, e[0]), native.less_equal(a, e[nb]))
    return idx, inside


def _weights_of(fname, weights, a, inside):
    if weights is None:
        w = inside.astype(float32)
    else:
        w = native.reshape(to_tensor(fname, weights), (-1,))
        if w.shape[0] != a.shape[0]:
            raise_error(ValueError, f"{fname}: weights must have the shape of a")
        w = w if is_float(w.dtype) else w.astype(float32)
        w = native.where(inside, w, native.zeros((), w.dtype))
    return w


def _one_hot(idx, n, dtype):
    return native.equal(native.unsqueeze(idx, -1),
                        native.arange(0, n, 1, dtype=int64)).astype(dtype)


def histogram(a, bins=10, range=None, weights=None, density=False):  # noqa: A002
    """The histogram of the flattened a: (counts, edges). Counts are Float32 (or the weights'
    float dtype); with `density`, normalised so that they integrate to 1 over the range."""
    fname = "histogram"
    a = _flat_float(fname, a)
    edges = _bin_edges(fname, a, bins, range)
    idx, inside = _bin_index(a, edges)
    w = _weights_of(fname, weights, a, inside)
    nb = edges.shape[0] - 1
    counts = native.sum(_one_hot(idx, nb, w.dtype) * native.unsqueeze(w, -1), (0,), False)
    if density:
        widths = cast_to(edges[1:] - edges[:-1], counts.dtype)
        counts = counts / (native.sum(counts, None) * widths)
    return counts, edges


def _dd_edges(fname, sample, bins, range_, d):
    """One bins argument per axis: an int for every axis, or a sequence of d entries (ints or
    edge sequences)."""
    per_axis = plain(bins)
    if isinstance(per_axis, (list, tuple)):
        per_axis = tuple(per_axis)
        if len(per_axis) != d:
            raise_error(ValueError, f"{fname}: bins must be an int or one entry per dimension "
                                    f"({d}), got {len(per_axis)} entries")
    else:
        per_axis = (bins,) * d
    ranges = (None,) * d if range_ is None else tuple(range_)
    return [_bin_edges(fname, sample[:, i], per_axis[i], ranges[i]) for i in range(d)]


def histogramdd(sample, bins=10, range=None, weights=None, density=False):  # noqa: A002
    """The D-dimensional histogram of the N points of the (N, D) `sample` (or a list of D
    coordinate sequences): (counts of shape (nbins_0, ..., nbins_D-1), list of edges)."""
    fname = "histogramdd"
    if isinstance(sample, (list, tuple)) and sample and not is_number(sample[0]):
        sample = native.stack(tuple(_flat_float(fname, s) for s in tuple(sample)), 1)
    sample = to_tensor(fname, sample)
    sample = sample if is_float(sample.dtype) else sample.astype(float32)
    if sample.ndim == 1:
        sample = native.reshape(sample, (-1, 1))
    if sample.ndim != 2:
        raise_error(ValueError, f"{fname}: sample must be (N, D), got shape {sample.shape}")
    edges = _dd_edges(fname, sample, bins, range, sample.shape[1])
    flat, inside = _flat_bin_index(sample, edges)
    w = _weights_of(fname, weights, sample[:, 0], inside)
    sizes = tuple(e.shape[0] - 1 for e in edges)
    total = 1
    for s in sizes:
        total *= s
    counts = native.sum(_one_hot(flat, total, w.dtype) * native.unsqueeze(w, -1), (0,), False)
    counts = native.reshape(counts, sizes)
    if density:
        counts = counts / (native.sum(counts, None) * _bin_volumes(edges, counts.dtype))
    return counts, edges


# (Loops live in helpers: histogramdd's `range` argument hides the builtin, as in NumPy.)
def _flat_bin_index(sample, edges):
    """The row-major index of each point's bin, and whether the point is inside every range."""
    n = sample.shape[0]
    flat = native.zeros((n,), int64)
    inside = native.full((n,), True, dtype=bool_)
    for i, e in enumerate(tuple(edges)):
        size = e.shape[0] - 1
        idx, ok = _bin_index(sample[:, i], e)
        flat = flat * size + native.clip(idx, 0, size - 1)
        inside = native.logical_and(inside, ok)
    return flat, inside


def _bin_volumes(edges, dtype):
    d = len(edges)
    volume = None
    for i, e in enumerate(tuple(edges)):
        width = cast_to(e[1:] - e[:-1], dtype)
        width = native.reshape(width, tuple(-1 if j == i else 1 for j in range(d)))
        volume = width if volume is None else volume * width
    return volume


def histogram2d(x, y, bins=10, range=None, weights=None, density=False):  # noqa: A002
    """The 2-D histogram of the points (x[i], y[i]): (counts, x edges, y edges)."""
    fname = "histogram2d"
    xs, ys = _flat_float(fname, x), _flat_float(fname, y)
    if xs.shape != ys.shape:
        raise_error(ValueError, f"{fname}: x and y must have one length, got {xs.shape[0]} and "
                                f"{ys.shape[0]}")
    xs, ys = operands(fname, xs, ys)
    counts, edges = histogramdd(native.stack([xs, ys], 1), bins, range, weights, density)
    return counts, edges[0], edges[1]


# ---- covariance ----------------------------------------------------------------------------------

def _observations(fname, m, y, rowvar):
    x = to_float(fname, m)
    if x.ndim > 2:
        raise_error(ValueError, f"{fname}: m has more than 2 dimensions: shape {x.shape}")
    x = native.reshape(x, (1, -1)) if x.ndim < 2 else x
    if not rowvar and x.shape[0] != 1:
        x = native.transpose(x, (1, 0))
    if y is not None:
        other = to_float(fname, y)
        other = native.reshape(other, (1, -1)) if other.ndim < 2 else other
        if not rowvar and other.shape[0] != 1:
            other = native.transpose(other, (1, 0))
        x, other = operands(fname, x, other)
        x = native.concat([x, other], 0)
    return x


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
    """The covariance matrix of the variables (rows of m, columns when not rowvar, plus those
    of y), with integer frequency weights and observation weights; divisor N - 1 (N with
    `bias`, N - ddof with ddof)."""
    fname = "cov"
    x = _observations(fname, m, y, rowvar)
    ddof = (0 if bias else 1) if ddof is None else check_int(fname, "ddof", ddof)
    w = None
    if fweights is not None:
        w = cast_to(to_tensor(fname, fweights), x.dtype)
    if aweights is not None:
        aw = cast_to(to_tensor(fname, aweights), x.dtype)
        w = aw if w is None else w * aw
    if w is not None and (w.ndim != 1 or w.shape[0] != x.shape[1]):
        raise_error(ValueError, f"{fname}: weights must be 1-D with one weight per observation "
                                f"({x.shape[1]})")
    if w is None:
        avg = native.mean(x, (1,), True)
        fact = float(x.shape[1] - ddof)
    else:
        w_sum = native.sum(w, None)
        avg = native.sum(x * w, (1,), True) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * native.sum(w * aw, None) / w_sum
    centred = x - avg
    weighted = centred if w is None else centred * w
    c = native.matmul(centred, native.transpose(weighted, (1, 0))) / fact
    c = native.reshape(c, ()) if c.shape == (1, 1) else c
    return c if dtype is None else cast_to(c, check_dtype(fname, dtype))


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """The Pearson correlation coefficients of the variables (rows of x, columns when not
    rowvar, plus those of y), clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = native.sqrt(native.sum(c * native.eye(c.shape[0], c.shape[0], dtype=c.dtype), (1,),
                               False))
    c = c / native.reshape(d, (-1, 1)) / native.reshape(d, (1, -1))
    return native.clip(c, -1.0, 1.0)


def unwrap(p, discont=None, axis=-1, period=2 * math.pi):
    """p with its jumps along `axis` larger than max(discont, period / 2) changed by multiples
    of `period` to their complement (phase unwrapping)."""
    fname = "unwrap"
    p = to_float(fname, p)
    axis = check_axis(fname, axis, p.ndim)
    period = float(plain(period))
    half = period / 2.0
    discont = half if discont is None else max(float(plain(discont)), half)
    n = p.shape[axis]
    if n < 2:
        return p
    head = (slice(None),) * axis
    dd = p[head + (slice(1, n),)] - p[head + (slice(0, n - 1),)]
    mod = native.remainder(dd + half, period) - half
    mod = native.where(native.logical_and(native.equal(mod, -half), native.greater(dd, 0.0)),
                       native.full((), half, dtype=dd.dtype), mod)
    correction = native.where(native.less(native.abs(dd), discont), native.zeros((), dd.dtype),
                              mod - dd)
    steps = cumsum(correction, axis)
    zero = native.zeros(tuple(1 if i == axis else d for i, d in enumerate(p.shape)), p.dtype)
    return p + native.concat([zero, cast_to(steps, p.dtype)], axis)


# ---- sized by the data (read on the host) --------------------------------------------------------

def _host_ints(fname, x):
    """The values of the 1-D integer array-like x, on the host."""
    x = to_tensor(fname, x)
    if x.ndim != 1:
        raise_error(ValueError, f"{fname}: x must be 1-D, got shape {x.shape}")
    if is_float(x.dtype) or x.dtype == bool_:
        raise_error(TypeError, f"{fname}: x must hold integers, got {x.dtype}")
    return x.asnumpy()


def bincount(x, weights=None, minlength=0, length=None):
    """How often each value 0 .. max(x) occurs in the 1-D non-negative integer x, as Float32
    (summing `weights` instead of ones, in their float dtype); at least `minlength` bins, or
    exactly `length` bins when given (larger values are dropped)."""
    fname = "bincount"
    values = _host_ints(fname, x)
    minlength = check_int(fname, "minlength", minlength)
    if minlength < 0:
        raise_error(ValueError, f"{fname}: minlength must be non-negative, got {minlength}")
    if values.size and values.min() < 0:
        raise_error(ValueError, f"{fname}: x must be non-negative, got {values.min()}")
    if length is None:
        length = max(int(values.max()) + 1 if values.size else 0, minlength)
    elif check_int(fname, "length", length) < 0:
        raise_error(ValueError, f"{fname}: length must be non-negative, got {length}")
    bins = native.reshape(Tensor(values.astype(onp.int64)), (-1, 1))
    hits = native.equal(bins, native.arange(0, length, 1, dtype=int64))  # (N, length)
    if weights is None:
        return native.sum(hits.astype(float32), (0,), False)
    w = to_tensor(fname, weights)
    if tuple(w.shape) != (values.size,):
        raise_error(ValueError, f"{fname}: weights must have x's shape ({values.size},), got "
                                f"{w.shape}")
    w = w if is_float(w.dtype) else w.astype(float32)
    return native.sum(native.where(hits, native.unsqueeze(w, -1), native.zeros((), w.dtype)),
                      (0,), False)


def unique(x, return_inverse=False):
    """The sorted distinct values of the flattened x; with return_inverse also the Int32
    position in them of each element of the flattened x. The values are gathered from x, so
    they carry gradients to it."""
    fname = "unique"
    x = native.reshape(to_tensor(fname, x), (-1,))
    if not isinstance(return_inverse, bool):
        raise_error(TypeError, f"{fname}: return_inverse must be a bool, got "
                               f"{type(return_inverse).__name__}")
    values = (x.astype(float32) if x.dtype.name == "bf16" else x).asnumpy()
    _, first, inverse = onp.unique(values, return_index=True, return_inverse=True)
    out = native.gather(x, Tensor(first.astype(onp.int64)), 0)
    if return_inverse:
        return out, Tensor(inverse.reshape(-1).astype(onp.int32))
    return out
