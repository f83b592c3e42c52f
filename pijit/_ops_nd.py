"""einsum and the N-d gather/scatter family of MindSpore's ops (gather_nd, scatter_nd,
tensor_scatter_add/sub/mul/div/max/min/update), composed of pijit's ops: einsum contracts
operands pairwise by transposes, reshapes and matrix products; the scatters place their
updates with a one-hot of the flattened target positions, so gradients reach both the
input and the updates and pijit.jit captures them."""
import math

from pijit import _C
from pijit._ops_composed import pad as _ops_composed_pad
from pijit._tensor import int64
from pijit.mint._checks import check_tensor, is_int, raise_error
from pijit.mint._shape import scatter_add as _mint_scatter_add
from pijit.ops import constexpr

_ops = _C.ops


# ---- einsum ------------------------------------------------------------------------------------
# The equation is planned by a constexpr (string work runs at compile time in captured code):
# the plan is tuples of axes and shapes, which einsum then carries out with pijit ops.

def _parse(equation, count):
    """(input subscripts, output subscripts) of an einsum equation without ellipses."""
    equation = equation.replace(" ", "")
    if "." in equation:
        raise ValueError("einsum: ellipses ('...') are not supported")
    if "->" in equation:
        inputs, output = equation.split("->")
    else:
        inputs = equation
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    subscripts = inputs.split(",")
    if len(subscripts) != count:
        raise ValueError(f"einsum: the equation names {len(subscripts)} operands, {count} given")
    for term in subscripts + [output]:
        if not all(c.isalpha() for c in term):
            raise ValueError(f"einsum: subscripts must be letters, got {term!r}")
    if len(set(output)) != len(output) or set(output) - set("".join(subscripts)):
        raise ValueError(f"einsum: output subscripts {output!r} must be distinct and appear "
                         f"in the inputs")
    return subscripts, output


def _plan_diagonals(term, shape, steps):
    """Steps reducing each repeated letter of term to its diagonal ('ii' -> 'i'): move the
    two axes last, multiply by the identity and sum one away."""
    while len(set(term)) != len(term):
        letter = next(c for c in term if term.count(c) > 1)
        first = term.index(letter)
        second = term.index(letter, first + 1)
        order = tuple(d for d in range(len(term)) if d not in (first, second)) + (first, second)
        steps.append(("diagonal", order, shape[first]))
        term = "".join(term[d] for d in order[:-2]) + letter
        shape = tuple(shape[d] for d in order[:-2]) + (shape[first],)
    return term, shape


def _plan_sum(term, shape, keep, steps):
    """A step summing the letters of term that are not in keep (none when all are kept)."""
    gone = tuple(d for d, c in enumerate(term) if c not in keep)
    steps.append(("sum", gone))
    return ("".join(c for c in term if c in keep),
            tuple(n for c, n in zip(term, shape) if c in keep))


def _plan_contract(term_a, shape_a, term_b, shape_b, keep):
    """The product of two operands over their shared letters not in keep, as
    (batch, left, shared) @ (batch, shared, right): the transposes and shapes."""
    size = dict(zip(term_a + term_b, shape_a + shape_b))
    batch = [c for c in term_a if c in term_b and c in keep]
    shared = [c for c in term_a if c in term_b and c not in keep]
    left = [c for c in term_a if c not in term_b]
    right = [c for c in term_b if c not in term_a]

    def prod(letters):
        return math.prod(size[c] for c in letters)

    batch_shape = tuple(size[c] for c in batch)
    step = ("contract", tuple(term_a.index(c) for c in batch + left + shared),
            tuple(term_b.index(c) for c in batch + shared + right),
            batch_shape + (prod(left), prod(shared)), batch_shape + (prod(shared), prod(right)),
            batch_shape + tuple(size[c] for c in left + right))
    term = "".join(batch + left + right)
    return term, tuple(size[c] for c in term), step


@constexpr
def _einsum_plan(equation, shapes):
    """(steps of each operand alone, steps combining the running product with each next
    operand, final steps) for einsum."""
    subscripts, output = _parse(equation, len(shapes))
    sizes, prepared, alone = {}, [], []
    for term, shape in zip(subscripts, shapes):
        if len(term) != len(shape):
            raise ValueError(f"einsum: subscripts {term!r} for an operand of rank {len(shape)}")
        for c, n in zip(term, shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum: subscript {c!r} has sizes {sizes[c]} and {n}")
        steps = []
        prepared.append(_plan_diagonals(term, tuple(shape), steps))
        alone.append(tuple(steps))
    term, shape = prepared[0]
    combine = []
    for i in range(1, len(prepared)):
        later = "".join(t for t, _ in prepared[i + 1:])
        steps_a, steps_b = [], []
        # Letters no later operand or the output needs are summed before the product.
        term, shape = _plan_sum(term, shape, output + prepared[i][0] + later, steps_a)
        other, other_shape = _plan_sum(prepared[i][0], prepared[i][1], output + term + later,
                                       steps_b)
        term, shape, step = _plan_contract(term, shape, other, other_shape, output + later)
        combine.append((steps_a[0], steps_b[0], step))
    final = []
    term, shape = _plan_sum(term, shape, output, final)
    final.append(("transpose", tuple(term.index(c) for c in output)))
    return tuple(alone), tuple(combine), tuple(final)


def _run(step, x):
    kind = step[0]
    if kind == "diagonal":
        _, order, n = step
        return _ops.sum(_ops.transpose(x, order) * _ops.eye(n, dtype=x.dtype), -1)
    if kind == "sum":
        return _ops.sum(x, step[1]) if step[1] else x
    return _ops.transpose(x, step[1]) if step[1] != tuple(range(x.ndim)) else x


def einsum(equation, *operands):
    """The Einstein summation of `operands` by `equation` ('ij,jk->ik'; without '->' the
    output holds the letters that appear once, in alphabetical order). Repeated letters
    within an operand take its diagonal. Ellipses are not supported."""
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise_error(TypeError, f"einsum: equation must be a str, got {type(equation).__name__}")
    for x in operands:
        check_tensor("einsum", "operands", x)
    alone, combine, final = _einsum_plan(equation, tuple(tuple(x.shape) for x in operands))
    prepared = []
    for steps, x in zip(alone, operands):
        for step in steps:
            x = _run(step, x)
        prepared.append(x)
    acc = prepared[0]
    for (sum_a, sum_b, contract), other in zip(combine, prepared[1:]):
        a, b = _run(sum_a, acc), _run(sum_b, other)
        _, perm_a, perm_b, shape_a, shape_b, out_shape = contract
        a = _ops.reshape(_ops.transpose(a, perm_a), shape_a)
        b = _ops.reshape(_ops.transpose(b, perm_b), shape_b)
        acc = _ops.reshape(_ops.matmul(a, b), out_shape)
    for step in final:
        acc = _run(step, acc)
    return acc


# ---- N-d gather and scatter --------------------------------------------------------------------

def _row_major_strides(shape):
    """(the row-major stride of each axis of shape, the element count)."""
    strides, stride = (), 1
    for i in range(len(shape) - 1, -1, -1):
        strides = (stride,) + strides
        stride *= shape[i]
    return strides, stride


def _flat_positions(fname, indices, shape):
    """Int64 (N,) row-major positions, in the first K axes of `shape`, of indices (..., K),
    with N the product of indices' leading axes."""
    check_tensor(fname, "indices", indices)
    if not is_int(indices):
        raise_error(TypeError, f"{fname}: indices must be an integer Tensor, got "
                               f"{indices.dtype}")
    k = indices.shape[-1]
    if k > len(shape):
        raise_error(ValueError, f"{fname}: indices index {k} axes of a rank-{len(shape)} "
                                f"tensor")
    strides, stride = _row_major_strides(tuple(shape[:k]))
    flat = _ops.reshape(indices.astype(int64), (-1, k))
    return _ops.sum(flat * _C.Tensor(tuple(strides)).astype(int64), -1), stride


def gather_nd(input_x, indices):
    """The slices of input_x at the index tuples in the last axis of indices:
    indices.shape[:-1] + input_x.shape[K:]."""
    check_tensor("gather_nd", "input_x", input_x)
    positions, rows = _flat_positions("gather_nd", indices, input_x.shape)
    k = indices.shape[-1]
    table = _ops.reshape(input_x, (rows,) + tuple(input_x.shape[k:]))
    return _ops.reshape(_ops.gather(table, positions, 0),
                        tuple(indices.shape[:-1]) + tuple(input_x.shape[k:]))


def _hits(fname, input_x, indices, updates):
    """(one-hot (N, rows) of the target positions, updates as (N, rest), the table shape)."""
    check_tensor(fname, "input_x", input_x)
    check_tensor(fname, "updates", updates)
    positions, rows = _flat_positions(fname, indices, input_x.shape)
    k = indices.shape[-1]
    want = tuple(indices.shape[:-1]) + tuple(input_x.shape[k:])
    if tuple(updates.shape) != want:
        raise_error(ValueError, f"{fname}: updates must have shape {want}, got "
                                f"{tuple(updates.shape)}")
    hits = _ops.one_hot(positions, rows, 1.0, 0.0).astype(input_x.dtype)
    n = hits.shape[0]
    return hits, _ops.reshape(updates.astype(input_x.dtype), (n, -1)), (rows, -1)


def _placed(hits, values, input_x):
    """The sum of the update rows landing on each row of input_x, shaped like input_x, and
    how many landed there."""
    summed = _ops.matmul(_ops.transpose(hits, (1, 0)), values)
    counts = _ops.sum(hits, 0)
    return _ops.reshape(summed, input_x.shape), counts


def _per_row(counts, input_x, k):
    return _ops.reshape(counts, tuple(input_x.shape[:k]) + (1,) * (input_x.ndim - k))


def tensor_scatter_add(input_x, indices, updates):
    """input_x with updates added at the index tuples of indices (repeats accumulate)."""
    hits, values, _ = _hits("tensor_scatter_add", input_x, indices, updates)
    return input_x + _placed(hits, values, input_x)[0]


def tensor_scatter_sub(input_x, indices, updates):
    """input_x with updates subtracted at the index tuples of indices."""
    hits, values, _ = _hits("tensor_scatter_sub", input_x, indices, updates)
    return input_x - _placed(hits, values, input_x)[0]


def tensor_scatter_update(input_x, indices, updates):
    """input_x with the slices at the index tuples of indices replaced by updates (distinct
    indices)."""
    hits, values, _ = _hits("tensor_scatter_update", input_x, indices, updates)
    placed, counts = _placed(hits, values, input_x)
    return _ops.where(_per_row(counts, input_x, indices.shape[-1]) > 0, placed, input_x)


def _scatter_reduce(fname, input_x, indices, updates, reduce, combine, identity):
    """input_x combined at each target with the reduction of the updates landing there."""
    hits, values, _ = _hits(fname, input_x, indices, updates)
    # (N, rows, rest): each update where it lands, the identity elsewhere.
    spread = _ops.where(_ops.unsqueeze(hits, -1) > 0, _ops.unsqueeze(values, 1), identity)
    table = _ops.reshape(input_x, (hits.shape[1], -1))
    return _ops.reshape(combine(table, reduce(spread, 0)), input_x.shape)


def tensor_scatter_mul(input_x, indices, updates):
    """input_x multiplied at the index tuples of indices by updates."""
    return _scatter_reduce("tensor_scatter_mul", input_x, indices, updates, _ops.prod, _ops.mul,
                           1.0)


def tensor_scatter_div(input_x, indices, updates):
    """input_x divided at the index tuples of indices by updates."""
    return _scatter_reduce("tensor_scatter_div", input_x, indices, updates, _ops.prod, _ops.div,
                           1.0)


def tensor_scatter_max(input_x, indices, updates):
    """input_x's elements at the index tuples of indices raised to updates where larger."""
    return _scatter_reduce("tensor_scatter_max", input_x, indices, updates, _ops.max,
                           _ops.maximum, -float("inf"))


def tensor_scatter_min(input_x, indices, updates):
    """input_x's elements at the index tuples of indices lowered to updates where smaller."""
    return _scatter_reduce("tensor_scatter_min", input_x, indices, updates, _ops.min,
                           _ops.minimum, float("inf"))


def scatter_nd(indices, updates, shape):
    """A zero tensor of `shape` with updates added at the index tuples of indices."""
    check_tensor("scatter_nd", "updates", updates)
    return tensor_scatter_add(_ops.zeros(tuple(shape), dtype=updates.dtype), indices, updates)


def tensor_scatter_elements(input_x, indices, updates, axis=0, reduction="none"):
    """input_x with updates[i][j] placed at [indices[i][j]][j] for axis 0 (likewise for other
    axes): replacing the element (reduction 'none', distinct targets) or added to it
    ('add')."""
    if reduction not in ("none", "add"):
        raise_error(ValueError, f"tensor_scatter_elements: reduction must be 'none' or 'add', "
                                f"got {reduction!r}")
    if reduction == "add":
        return _mint_scatter_add(input_x, axis, indices, updates)
    zeros = _ops.zeros_like(input_x)
    placed = _mint_scatter_add(zeros, axis, indices, updates)
    counts = _mint_scatter_add(zeros, axis, indices, _ops.ones_like(updates, dtype=input_x.dtype))
    return _ops.where(_ops.greater(counts, 0), placed, input_x)


def _unpool(fname, x, indices, spatial):
    """Each value of x (N, C, *L) at its flat index into the spatial output size (a scatter-add
    into zeros, so values that share an index add up, and the gradient gathers)."""
    check_tensor(fname, "x", x)
    check_tensor(fname, "indices", indices)
    if tuple(indices.shape) != tuple(x.shape):
        raise_error(ValueError, f"{fname}: indices has shape {tuple(indices.shape)}, x has "
                                f"{tuple(x.shape)}; they must be equal")
    total = 1
    for n in spatial:
        total *= n
    lead = tuple(x.shape[:x.ndim - len(spatial)])
    flat_x = _ops.reshape(x, lead + (-1,))
    flat_i = _ops.reshape(indices.astype(int64), lead + (-1,))
    out = _mint_scatter_add(_ops.zeros(lead + (total,), dtype=x.dtype), -1, flat_i, flat_x)
    return _ops.reshape(out, lead + tuple(spatial))


def _unpool_size(size, kernel, stride, padding):
    return (size - 1) * stride - 2 * padding + kernel


def _unpool_n(fname, rank, x, indices, kernel_size, stride, padding, output_size):
    """The unpooling of max_unpool{rank}d: the spatial output size from output_size's last
    `rank` entries, or from the pool's kernel, stride (the kernel when None) and padding."""
    def per_axis(name, value):
        values = (value,) * rank if isinstance(value, int) else tuple(value)
        if len(values) != rank:
            raise_error(ValueError, f"{fname}: {name} must be an int or {rank} ints, got "
                                    f"{value!r}")
        return values

    k = per_axis("kernel_size", kernel_size)
    st = k if stride is None else per_axis("stride", stride)
    pad = per_axis("padding", padding)
    if output_size is None:
        spatial = tuple(_unpool_size(n, kk, s, p) for n, kk, s, p in
                        zip(x.shape[-rank:], k, st, pad))
    else:
        spatial = tuple(output_size)[-rank:]
    return _unpool(fname, x, indices, spatial)


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d with indices: each value at its flat (h * W + w) index of
    a zero (N, C, H, W) output."""
    return _unpool_n("max_unpool2d", 2, x, indices, kernel_size, stride, padding, output_size)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of a 1-D max pool with indices: each value at its index of a zero
    (N, C, L) output."""
    return _unpool_n("max_unpool1d", 1, x, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d with indices: each value at its flat (d * H * W + h * W + w)
    index of a zero (N, C, D, H, W) (or (C, D, H, W)) output."""
    if x.ndim not in (4, 5):
        raise_error(ValueError, f"max_unpool3d: x must be (N, C, D, H, W) or (C, D, H, W), got "
                                f"{x.ndim} dimensions")
    return _unpool_n("max_unpool3d", 3, x, indices, kernel_size, stride, padding, output_size)


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def space_to_batch_nd(input_x, block_size, paddings):
    """(N, C, H, W) padded by paddings ((top, bottom), (left, right)) and cut into b0 x b1
    blocks moved into the batch: (b0 * b1 * N, C, H' / b0, W' / b1), block position major."""
    check_tensor("space_to_batch_nd", "input_x", input_x)
    b0, b1 = _pair(block_size)
    padded = _ops_composed_pad(input_x, ((0, 0), (0, 0)) + tuple(tuple(p) for p in paddings))
    n, c, h, w = padded.shape
    if h % b0 or w % b1:
        raise_error(ValueError, f"space_to_batch_nd: the padded size {(h, w)} is not a "
                                f"multiple of the block {(b0, b1)}")
    split = _ops.reshape(padded, (n, c, h // b0, b0, w // b1, b1))
    moved = _ops.transpose(split, (3, 5, 0, 1, 2, 4))
    return _ops.reshape(moved, (b0 * b1 * n, c, h // b0, w // b1))


def batch_to_space_nd(input_x, block_shape, crops):
    """The inverse of space_to_batch_nd: (b0 * b1 * N, C, H, W) -> (N, C, H * b0, W * b1)
    cropped by crops ((top, bottom), (left, right))."""
    check_tensor("batch_to_space_nd", "input_x", input_x)
    b0, b1 = _pair(block_shape)
    nb, c, h, w = input_x.shape
    if nb % (b0 * b1):
        raise_error(ValueError, f"batch_to_space_nd: the batch {nb} is not a multiple of the "
                                f"block size {b0 * b1}")
    n = nb // (b0 * b1)
    split = _ops.reshape(input_x, (b0, b1, n, c, h, w))
    moved = _ops.reshape(_ops.transpose(split, (2, 3, 4, 0, 5, 1)), (n, c, h * b0, w * b1))
    (top, bottom), (left, right) = tuple(tuple(p) for p in crops)
    return moved[:, :, top:h * b0 - bottom, left:w * b1 - right]


def _check_main_diagonal(fname, k, align):
    if k != 0:
        raise_error(ValueError, f"{fname}: only the main diagonal (k=0) is supported, got {k}")


def matrix_diag(x, k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    """(..., n) -> (..., n, n) (or num_rows x num_cols) with x on the main diagonal and
    padding_value elsewhere."""
    _check_main_diagonal("matrix_diag", k, align)
    n = x.shape[-1]
    rows = n if num_rows == -1 else num_rows
    cols = n if num_cols == -1 else num_cols
    eye = _ops.eye(rows, cols, dtype=x.dtype)
    values = _ops.unsqueeze(x, -1) if rows == n else None
    if values is None or cols < n:
        raise_error(ValueError, f"matrix_diag: {rows} x {cols} matrices cannot hold a diagonal "
                                f"of {n}")
    on = _ops.greater(eye, 0)
    return _ops.where(on, values * eye, padding_value)


def matrix_diag_part(x, k=0, padding_value=0, align="RIGHT_LEFT"):
    """The main diagonal of each matrix in the last two axes: (..., min(M, N))."""
    _check_main_diagonal("matrix_diag_part", k, align)
    n = min(x.shape[-2], x.shape[-1])
    square = x[..., :n, :n]
    return _ops.sum(square * _ops.eye(n, dtype=x.dtype), -1)


def matrix_set_diag(x, diagonal, k=0, align="RIGHT_LEFT"):
    """x with the main diagonal of each matrix replaced by `diagonal`."""
    _check_main_diagonal("matrix_set_diag", k, align)
    rows, cols = x.shape[-2], x.shape[-1]
    n = min(rows, cols)
    on = _ops.greater(_ops.eye(rows, cols), 0)
    padded = _ops_composed_pad(_ops.unsqueeze(diagonal, -1),
                               ((0, 0),) * (diagonal.ndim - 1) + ((0, rows - n), (0, 0)))
    return _ops.where(on, padded, x)


__all__ = ["batch_to_space_nd", "max_unpool1d", "max_unpool2d", "max_unpool3d", "matrix_diag",
           "matrix_diag_part", "matrix_set_diag", "space_to_batch_nd",
           "tensor_scatter_elements", "einsum", "gather_nd", "scatter_nd", "tensor_scatter_add", "tensor_scatter_div",
           "tensor_scatter_max", "tensor_scatter_min", "tensor_scatter_mul",
           "tensor_scatter_sub", "tensor_scatter_update"]
