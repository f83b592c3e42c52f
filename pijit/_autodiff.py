"""Gradients, PyNative style: pijit.grad, pijit.value_and_grad and ops.GradOperation.

The function runs eagerly under a gradient tape (runtime/tape.h): its ops are recorded as
an IR graph whose parameters are the tensors being differentiated, the backward graph is
built by graph/autodiff (one VJP rule per op) and run on the executor. Python control flow
needs nothing special: a loop that runs three times records its ops three times. Functions
compiled with @pijit.jit run eagerly while the tape records, so their gradients are those
of the undecorated function.

A Cell that defines `bprop(self, *inputs, out, dout)` is differentiated by that method: its
construct runs unrecorded and bprop returns one gradient per input (a tuple).
"""
from pijit import _C
from pijit._numbers import plain
from pijit._tensor import Parameter, ParameterTuple, Tensor

__all__ = ["grad", "value_and_grad", "GradOperation"]


def _name(fn):
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _positions(grad_position):
    """grad_position as a tuple of ints, and whether a single gradient is returned."""
    if grad_position is None:
        return (), False
    grad_position = plain(grad_position)
    if isinstance(grad_position, bool) or not isinstance(grad_position, (int, tuple)):
        raise TypeError(f"grad: grad_position must be an int, a tuple of ints or None, "
                        f"got {type(grad_position).__name__}")
    if isinstance(grad_position, int):
        return (grad_position,), True
    if not grad_position or not all([isinstance(p, int) and not isinstance(p, bool)
                                     for p in grad_position]):
        raise TypeError(f"grad: grad_position must be a non-empty tuple of ints, got {grad_position!r}")
    return tuple(grad_position), False


def _weights(weights):
    if weights is None:
        return None
    if isinstance(weights, Parameter):
        return (weights,)
    if isinstance(weights, (list, tuple)):
        for w in weights:
            if not isinstance(w, Tensor):
                raise TypeError(f"grad: weights must be Parameters, got {type(w).__name__}")
        return tuple(weights)
    raise TypeError(f"grad: weights must be a Parameter, a ParameterTuple or a list of "
                    f"Parameters, got {type(weights).__name__}")


def _zeros_like(t):
    return _C.ops.zeros_like(t)


class _Recorded:
    """One run of `fn` under a tape: its output and the tape's watch indices."""

    def __init__(self, fn, args, positions, weights):
        tape = _C._Tape()
        args = list(args)
        self.inputs = []
        self.input_index = []
        for p in positions:
            if not -len(args) <= p < len(args):
                raise IndexError(f"grad: grad_position {p} is out of range for {len(args)} inputs")
            x = args[p]
            if not isinstance(x, Tensor):
                raise TypeError(f"grad: input {p} of {_name(fn)} must be a Tensor to be "
                                f"differentiated, got {type(x).__name__}")
            if tape.tracks(x):  # the same tensor at two positions: two variables
                x = args[p] = Tensor(x)
            self.inputs.append(x)
            self.input_index.append(tape.watch(x))
        self.weights = weights or ()
        self.weight_index = [tape.watch(w) for w in self.weights]
        tape.start()
        try:
            self.out = fn(*args)
        finally:
            tape.stop()
        self.tape = tape

    def gradients(self, outputs, seeds):
        wrt = self.input_index + self.weight_index
        grads = self.tape.gradient(list(outputs), list(seeds), wrt)
        # Non-floating tensors get no gradient: zeros of their shape and dtype, as MindSpore.
        targets = self.inputs + list(self.weights)
        grads = [g if g is not None else _zeros_like(t) for g, t in zip(grads, targets)]
        n = len(self.inputs)
        return grads[:n], grads[n:]


def _differentiated(fn, out, has_aux):
    """The outputs that are differentiated, and the auxiliary outputs (has_aux)."""
    if has_aux:
        if not isinstance(out, tuple) or len(out) < 2:
            raise ValueError(f"grad: with has_aux=True, {_name(fn)} must return a tuple of at "
                             f"least two outputs, got {type(out).__name__}")
        outs, aux = [out[0]], tuple(out[1:])
    else:
        outs, aux = (list(out) if isinstance(out, (tuple, list)) else [out]), ()
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"grad: the output of {_name(fn)} must be a Tensor (or a tuple of "
                            f"Tensors) to be differentiated, got {type(o).__name__}")
    return outs, aux


def _scalar_seeds(fn, outs):
    seeds = []
    for o in outs:
        if o.size != 1:
            raise ValueError(f"grad: {_name(fn)} returned a Tensor of shape {tuple(o.shape)}; only "
                             f"a scalar (one element) output can be differentiated without a "
                             f"sensitivity. Reduce it (ops.sum, ops.mean) or use "
                             f"ops.GradOperation(sens_param=True)")
        seeds.append(_C.ops.ones_like(o))
    return seeds


def _grad_result(gi, gw, single, weights, grad_position, ids):
    """MindSpore's structure: one input's gradient alone (an int grad_position), a tuple for a
    tuple of positions; one Parameter's gradient alone, a tuple for several; (inputs',
    weights') when both are asked for. ids: (position or parameter name, gradient) pairs."""
    positions, one_weight, params = ids
    if positions is not None:
        gi = [(p, g) for p, g in zip(positions, gi)]
        gw = [(w.name, g) for w, g in zip(params, gw)]
    gi = gi[0] if single else tuple(gi)
    gw = gw[0] if one_weight else tuple(gw)
    if weights is None:
        return gi
    if grad_position is None:
        return gw
    return gi, gw


def vjp(fn, args, positions=(), weights=None, sens=None, has_aux=False, scalar=False):
    """Runs fn(*args) once and differentiates it. Returns (fn's output, the gradients of the
    inputs at `positions`, the gradients of `weights`), the last two as tuples; tensors that
    are not floating point get zeros.

    sens: None gives every differentiated output a sensitivity of ones (with scalar=True the
    outputs must have one element each); a number, that value everywhere; a Tensor or a
    tuple/list of Tensors, one per output. has_aux: only the first output is differentiated.

    Every gradient transform (grad, value_and_grad, GradOperation, TrainOneStepCell,
    ForwardValueAndGrad) goes through this function. Eagerly it runs fn under a tape. Captured
    code never runs it: the capture inlines fn into the graph being built and appends its
    backward there (bytecode/handlers_grad.cc), so forward, backward and what uses the
    gradients (an optimizer's update) compile into one graph."""
    record = _Recorded(fn, args, positions, weights)
    outs, _ = _differentiated(fn, record.out, has_aux)
    if sens is None:
        seeds = _scalar_seeds(fn, outs) if scalar else [_C.ops.ones_like(o) for o in outs]
    elif isinstance(sens, (int, float)) and not isinstance(sens, bool):
        seeds = [_C.ops.ones_like(o) * sens if sens != 1 else _C.ops.ones_like(o) for o in outs]
    else:
        seeds = list(sens) if isinstance(sens, (tuple, list)) else [sens]
        if len(seeds) != len(outs):
            raise ValueError(f"grad: {len(seeds)} sensitivities for {len(outs)} outputs of "
                             f"{_name(fn)}")
        seeds = [s if isinstance(s, Tensor) else Tensor(s) for s in seeds]
    gi, gw = record.gradients(outs, seeds)
    return record.out, tuple(gi), tuple(gw)


_C._register_vjp(vjp)


def _make(fn, grad_position, weights, has_aux, with_value, return_ids):
    positions, single = _positions(grad_position)
    one_weight = isinstance(weights, Parameter)
    weights = _weights(weights)
    if grad_position is None and weights is None:
        raise ValueError("grad: grad_position and weights cannot both be None")
    ids = (positions if return_ids else None, one_weight, weights or ())

    def run(*args):
        # Outputs of more than one element are seeded with ones, as MindSpore does.
        out, gi, gw = vjp(fn, args, positions, weights, None, has_aux, False)
        grads = _grad_result(gi, gw, single, weights, grad_position, ids)
        if with_value:
            return out, grads
        return (grads, tuple(out[1:])) if has_aux else grads

    return run


def grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """The gradient function of `fn` (a function or a Cell) with respect to the inputs at
    `grad_position` (an int: one gradient; a tuple: a tuple; None: none) and `weights` (one
    Parameter: its gradient; several: a tuple, after the inputs' when both are asked for).
    Each output is seeded with ones (a scalar's gradient, or the sum's for a larger output;
    a tuple's gradients add up); with has_aux, only the first output is differentiated and
    the result is (gradients, other outputs). return_ids pairs each gradient with its input's
    position or its Parameter's name."""
    return _make(fn, grad_position, weights, has_aux, False, return_ids)


def value_and_grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """Like grad, but the function returns (fn's output, gradients)."""
    return _make(fn, grad_position, weights, has_aux, True, return_ids)


class GradOperation:
    """MindSpore's GradOperation: `GradOperation(get_all, get_by_list, sens_param)(fn,
    weights)(*inputs[, sens])`.

    Gradients of the first input (default), of every input (get_all), of `weights`
    (get_by_list), or both as (inputs' gradients, weights' gradients). Without sens_param
    every output's sensitivity is ones of its shape (the gradient of the sum of the
    outputs); with it, the last argument is the sensitivity (a tuple for a tuple output)."""

    def __init__(self, get_all=False, get_by_list=False, sens_param=False):
        for name, v in (("get_all", get_all), ("get_by_list", get_by_list), ("sens_param", sens_param)):
            if not isinstance(v, bool):
                raise TypeError(f"GradOperation: {name} must be a bool, got {type(v).__name__}")
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param

    def __call__(self, fn, weights=None):
        if not callable(fn):
            raise TypeError(f"GradOperation: expected a function or a Cell, got {type(fn).__name__}")
        if self.get_by_list:
            if weights is None:
                raise ValueError("GradOperation(get_by_list=True) needs the weights: "
                                 "GradOperation(get_by_list=True)(net, weights)")
            weights = _weights(weights)
        else:
            weights = None

        def run(*args):
            sens = None
            if self.sens_param:
                args, sens = split_sensitivity(args, "GradOperation", "argument")
            positions = grad_positions(args, self.get_all, self.get_by_list)
            _, gi, gw = vjp(fn, args, positions, weights, sens)
            return chosen_gradients(gi, gw, self.get_all, self.get_by_list)

        return run


def split_sensitivity(args, owner, what):
    """(args, sensitivity) of a call with sens_param=True, whose last argument is the
    sensitivity; `owner` and `what` ("argument", "input") name them in the error."""
    if not args:
        raise TypeError(f"{owner}(sens_param=True): the last {what} must be the sensitivity")
    return args[:-1], args[-1]


def grad_positions(args, get_all, get_by_list):
    """The positions of the inputs that GradOperation's options differentiate: every Tensor
    with get_all, none with get_by_list alone, else the first (_Recorded checks that it is a
    Tensor)."""
    if get_all:
        return tuple([i for i, a in enumerate(args) if isinstance(a, Tensor)])
    if get_by_list:
        return ()
    return (0,)


def chosen_gradients(input_grads, weight_grads, get_all, get_by_list):
    """What GradOperation's options return of vjp's input and weight gradients."""
    if get_by_list and not get_all:
        return weight_grads
    input_grads = input_grads if get_all else input_grads[0]
    return (input_grads, weight_grads) if get_by_list else input_grads


def call_with_bprop(cell, args, kwargs):
    """Runs `cell` (which defines bprop) while a tape records: construct runs unrecorded and
    the tape gets one node whose gradient cell.bprop(*args, out, dout) gives."""
    tape = _C._active_tape()
    _C._pause_recording()
    try:
        out = cell.construct(*args, **kwargs)
    finally:
        _C._resume_recording()
    if not any(isinstance(a, Tensor) and tape.tracks(a) for a in args):
        # Nothing differentiated flows in (a stop_gradient of constant positions, say): the
        # outputs are constants too, and recording them would put the ops that read them on
        # the gradient's path.
        return out
    outs = list(out) if isinstance(out, tuple) else [out]

    def backward(douts):
        douts = [d if d is not None else _zeros_like(o) for d, o in zip(douts, outs)]
        dout = tuple(douts) if isinstance(out, tuple) else douts[0]
        grads = cell.bprop(*args, out, dout)
        if not isinstance(grads, (tuple, list)):
            grads = (grads,)
        if len(grads) != len(args):
            raise ValueError(f"{type(cell).__name__}.bprop returned {len(grads)} gradients for "
                             f"{len(args)} inputs; it must return one per input, as a tuple")
        return list(grads)

    tape.record_custom(list(args), outs, backward)
    return out


def has_bprop(cell):
    return callable(getattr(type(cell), "bprop", None))
