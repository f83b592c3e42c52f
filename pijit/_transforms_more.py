"""More of mindspore's top-level functional API: jvp, get_grad and lazy_inline.

jvp is forward mode computed with two reverse passes: the vector-Jacobian product
u -> J^T u is linear in u, so differentiating it with respect to u (at u = 0) against v gives
J v. That needs the tape to differentiate its own backward pass, which pijit's reverse mode
does (higher-order gradients)."""
import functools
import inspect

from pijit import _C
from pijit import _autodiff
from pijit._tensor import Parameter, Tensor

_ops = _C.ops


def _tensor_tuple(name, what, value):
    """value (a Tensor or a tuple/list of Tensors) as a tuple, and whether it was one Tensor."""
    if isinstance(value, Tensor):
        return (value,), True
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, Tensor) for v in value):
        return tuple(value), False
    raise TypeError(f"{name}: {what} must be a Tensor or a non-empty tuple of Tensors, got "
                    f"{type(value).__name__}")


def jvp(fn, inputs, v, has_aux=False):
    """(fn(*inputs), the Jacobian-vector product J v): the derivative of fn's output(s) at
    `inputs` in the direction `v` (shaped like inputs; a tuple for a tuple). With has_aux fn
    returns (output, *aux): only its first output is differentiated and the result is
    (output, jvp, aux)."""
    if not callable(fn):
        raise TypeError(f"jvp: fn must be callable, got {type(fn).__name__}")
    if not isinstance(has_aux, bool):
        raise TypeError(f"jvp: has_aux must be a bool, got {type(has_aux).__name__}")
    inputs, _ = _tensor_tuple("jvp", "inputs", inputs)
    v, _ = _tensor_tuple("jvp", "v", v)
    if len(v) != len(inputs):
        raise ValueError(f"jvp: v has {len(v)} tensors for {len(inputs)} inputs")
    for i, (x, d) in enumerate(zip(inputs, v)):
        if tuple(x.shape) != tuple(d.shape):
            raise ValueError(f"jvp: v[{i}] has shape {tuple(d.shape)}, input {i} has "
                             f"{tuple(x.shape)}")
    out = fn(*inputs)
    if has_aux:
        if not isinstance(out, tuple) or len(out) < 2:
            raise ValueError(f"jvp: with has_aux=True, fn must return a tuple of at least two "
                             f"outputs, got {type(out).__name__}")
        main, aux = out[0], out[1:]
    else:
        main, aux = out, ()
    outs, single_out = _tensor_tuple("jvp", "the output of fn", main)
    positions = tuple(range(len(inputs)))

    def transposed(*cotangents):  # u -> J^T u, linear in u
        _, grads, _ = _autodiff.vjp(fn, inputs, positions, None, cotangents, has_aux)
        return grads

    zeros = tuple(_ops.zeros_like(o) for o in outs)
    # Positional arguments: a captured call to _autodiff.vjp is compiled into the graph.
    _, products, _ = _autodiff.vjp(transposed, zeros, tuple(range(len(zeros))), None, v)
    products = products[0] if single_out else tuple(products)
    if has_aux:
        return (main, products) + tuple(aux)
    return out, products


def get_grad(gradients, identifier):
    """The gradient paired with `identifier` (an input position or a Parameter) in the result
    of grad(..., return_ids=True) (or value_and_grad's second output)."""
    if isinstance(identifier, bool) or not isinstance(identifier, (int, Parameter)):
        raise TypeError(f"get_grad: identifier must be an int position or a Parameter, got "
                        f"{type(identifier).__name__}")
    if not isinstance(gradients, tuple):
        raise TypeError(f"get_grad: gradients must be the tuple grad(..., return_ids=True) "
                        f"returns, got {type(gradients).__name__}")
    key = identifier.name if isinstance(identifier, Parameter) else identifier

    def search(node):
        if isinstance(node, tuple) and len(node) == 2 and isinstance(node[1], Tensor) and \
                isinstance(node[0], (int, str)) and not isinstance(node[0], bool):
            return node[1] if node[0] == key and type(node[0]) is type(key) else None
        if isinstance(node, tuple):
            for item in node:
                found = search(item)
                if found is not None:
                    return found
        return None

    found = search(gradients)
    if found is None:
        what = f"Parameter {key!r}" if isinstance(identifier, Parameter) else f"position {key}"
        raise RuntimeError(f"get_grad: no gradient for {what} in gradients; was it "
                           f"differentiated, and was grad called with return_ids=True?")
    return found


def lazy_inline(fn=None, attrs=None, policy=None):
    """A decorator for a Cell's __init__. MindSpore compiles such a Cell once as a reusable
    subgraph (on Ascend); pijit captures each call into the caller's graph, so the Cell
    behaves exactly as without the decorator. As MindSpore it records the call's arguments in
    `cell_init_args` and sets the __init__ arguments named in `attrs` (a string or a list of
    them) as attributes of the Cell."""
    if policy not in (None, "front"):
        raise ValueError(f"lazy_inline: policy must be None or 'front', got {policy!r}")
    if isinstance(attrs, str):
        attrs = [attrs]
    if attrs is not None and not (isinstance(attrs, (list, tuple))
                                  and all(isinstance(a, str) for a in attrs)):
        raise TypeError(f"lazy_inline: attrs must be a string or a list of strings, got "
                        f"{attrs!r}")

    def decorate(init):
        if not callable(init) or not hasattr(init, "__code__"):
            raise TypeError(f"lazy_inline: expected a Cell's __init__ function, got "
                            f"{type(init).__name__}")
        signature = inspect.signature(init)

        @functools.wraps(init)
        def wrapped(self, *args, **kwargs):
            init(self, *args, **kwargs)
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            arguments.pop(next(iter(signature.parameters)))  # self
            for name in attrs or ():
                if name not in arguments:
                    raise ValueError(f"lazy_inline: {type(self).__name__}.__init__ has no "
                                     f"argument {name!r}")
                setattr(self, name, arguments[name])
            self.cell_init_args = "lazy_inline_" + type(self).__name__ + str(arguments)
            self.lazy_inline_policy = policy

        return wrapped

    return decorate if fn is None else decorate(fn)


__all__ = ["get_grad", "jvp", "lazy_inline"]
