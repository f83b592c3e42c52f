"""MindSpore's functional transforms vjp, jacrev, jacfwd and vmap, composed of pijit's reverse
mode (pijit._autodiff.vjp) and its ops. Each differentiation reruns the function: vjp_fn(v)
runs fn again with v as the sensitivity, and a Jacobian runs it once per output element
(jacfwd gives the same matrix as jacrev, computed the same way). vmap runs the function once
per batch element and stacks the results."""
from pijit import _C
from pijit import _autodiff

Tensor = _C.Tensor
_ops = _C.ops


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def vjp(fn, *inputs, weights=None, has_aux=False):
    """(fn(*inputs), vjp_fn) (and fn's auxiliary outputs after them with has_aux), where
    vjp_fn(v) is the vector-Jacobian product of v (shaped like fn's output; a tuple for
    several outputs) with respect to the inputs: one gradient, or a tuple for several inputs;
    (input gradients, weight gradients) when weights are given."""
    if not callable(fn):
        raise TypeError(f"vjp: fn must be callable, got {type(fn).__name__}")
    if not inputs:
        raise ValueError("vjp: at least one input is needed")
    out = fn(*inputs)
    positions = tuple(range(len(inputs)))

    def vjp_fn(*v):
        sens = v[0] if len(v) == 1 else tuple(v)
        _, grads, weight_grads = _autodiff.vjp(fn, inputs, positions, weights, sens=sens,
                                               has_aux=has_aux)
        grads = grads[0] if len(grads) == 1 else grads
        return grads if weights is None else (grads, weight_grads)

    if has_aux:
        outs = _as_tuple(out)
        return (outs[0], vjp_fn) + outs[1:]
    return out, vjp_fn


def _jacobian(name, fn, grad_position, has_aux):
    if not callable(fn):
        raise TypeError(f"{name}: fn must be callable, got {type(fn).__name__}")
    positions = _as_tuple(grad_position)
    for p in positions:
        if isinstance(p, bool) or not isinstance(p, int) or p < 0:
            raise TypeError(f"{name}: grad_position must be a non-negative int or a tuple of "
                            f"them, got {grad_position!r}")

    def jacobian(*inputs):
        out = fn(*inputs)
        main = _as_tuple(out)[0] if has_aux else out
        if not isinstance(main, Tensor):
            raise TypeError(f"{name}: fn must return a Tensor, got {type(main).__name__}")
        rows = [[] for _ in positions]
        flat_size = main.size
        for k in range(flat_size):  # one reverse pass per output element
            seed = _ops.reshape(_ops.one_hot(Tensor([k]).astype(_C.dtype.i64), flat_size,
                                             1.0, 0.0), main.shape).astype(main.dtype)
            _, grads, _ = _autodiff.vjp(fn, inputs, positions, sens=seed, has_aux=has_aux)
            for row, g in zip(rows, grads):
                row.append(g)
        jacobians = tuple(_ops.reshape(_ops.stack(tuple(row), 0),
                                       tuple(main.shape) + tuple(inputs[p].shape))
                          for row, p in zip(rows, positions))
        result = jacobians[0] if isinstance(grad_position, int) else jacobians
        return (result,) + _as_tuple(out)[1:] if has_aux else result

    return jacobian


def jacrev(fn, grad_position=0, has_aux=False):
    """A function giving the Jacobian of fn's output with respect to its inputs at
    grad_position: output.shape + input.shape (a tuple of them for a tuple of positions);
    with has_aux, fn's first output is differentiated and the rest follow the Jacobian."""
    return _jacobian("jacrev", fn, grad_position, has_aux)


def jacfwd(fn, grad_position=0, has_aux=False):
    """As jacrev (the same matrix; pijit computes it in reverse mode)."""
    return _jacobian("jacfwd", fn, grad_position, has_aux)


def _check_axes(name, axes, count):
    if isinstance(axes, (tuple, list)):
        if len(axes) != count:
            raise ValueError(f"vmap: {name} has {len(axes)} entries for {count} values")
        return tuple(axes)
    return (axes,) * count


def vmap(fn, in_axes=0, out_axes=0):
    """A function mapping fn over the `in_axes` axis of each input (None: the input is shared
    by every call) and stacking its results along `out_axes`."""
    if not callable(fn):
        raise TypeError(f"vmap: fn must be callable, got {type(fn).__name__}")

    def mapped(*args):
        axes = _check_axes("in_axes", in_axes, len(args))
        sizes = {a.shape[ax] for a, ax in zip(args, axes) if ax is not None}
        if len(sizes) != 1:
            raise ValueError(f"vmap: the mapped axes must have one size, got {sorted(sizes)}")
        size = sizes.pop()
        results, single = [], True
        for i in range(size):
            call_args = [a if ax is None else _ops.squeeze(
                a[(slice(None),) * (ax % a.ndim) + (slice(i, i + 1),)], ax % a.ndim)
                for a, ax in zip(args, axes)]
            out = fn(*call_args)
            single = not isinstance(out, (tuple, list))
            results.append(_as_tuple(out))
        outs = []
        for j, axis in enumerate(_check_axes("out_axes", out_axes, len(results[0]))):
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError(f"vmap: out_axes must be ints, got {axis!r}")
            outs.append(_ops.stack(tuple(r[j] for r in results), axis))
        return outs[0] if single else tuple(outs)

    return mapped
