"""MindSpore's composite-function utilities (HyperMap, Map, Partial, MultitypeFuncGraph), gradient
hooks as primitives, checks (Assert, CheckNumerics) and a few creation primitives.

HyperMap, Map, Partial and MultitypeFuncGraph are plain Python: MindSpore's optimizers are
written with them (`self.hyper_map(F.partial(_opt, lr), grads, params, moments)`), and a
captured construct follows their Python code, so the type dispatch and the mapping over the
parameter tuples unroll at capture time and the updates land in one graph.

The CTC losses run the forward (alpha) recursion of connectionist temporal classification in
log space with pijit ops, so their gradients come from reverse mode."""
import numpy as np

from pijit import _C
from pijit import _autodiff
from pijit._numbers import plain
from pijit._tensor import (Tensor, bfloat16, bool_, float16, float32, float64, int32,
                           int64)
from pijit.mint._checks import FLOAT_DTYPES, check_tensor, raise_error
from pijit.mint._shape import gather as gather_elements
from pijit.nn.cell import Cell
from pijit.ops import Primitive

_ops = _C.ops
_DType = _C.dtype


# ---- MultitypeFuncGraph: functions overloaded on MindSpore's type names --------------------------

def _is_number(value):
    return isinstance(value, (bool, int, float, np.number, np.bool_))


def _is_function(value):
    return callable(value) and not isinstance(value, (type, Tensor))


# name -> (test, specificity): a more specific name (Int) wins over a broader one (Number)
# when several registered signatures accept the same arguments.
_TYPE_TESTS = {
    "Tensor": (lambda v: isinstance(v, Tensor), 1),
    "Number": (_is_number, 0),
    "Int": (lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool), 1),
    "Float": (lambda v: isinstance(v, (float, np.floating)), 1),
    "Bool": (lambda v: isinstance(v, (bool, np.bool_)), 1),
    "String": (lambda v: isinstance(v, str), 1),
    "Tuple": (lambda v: isinstance(v, tuple), 1),
    "List": (lambda v: isinstance(v, list), 1),
    "Dictionary": (lambda v: isinstance(v, dict), 1),
    "None": (lambda v: v is None, 1),
    "Function": (_is_function, 0),
    "Slice": (lambda v: isinstance(v, slice), 1),
    "Ellipsis": (lambda v: v is Ellipsis, 1),
    "TypeType": (lambda v: isinstance(v, (type, _DType)), 1),
}
_TYPE_ALIASES = {"Dict": "Dictionary", "Str": "String", "NoneType": "None"}


def _type_name(value):
    """The MindSpore type name an argument is reported under in errors."""
    for name in ("Bool", "Int", "Float", "Tensor", "String", "Tuple", "List", "Dictionary",
                 "None", "Slice", "Ellipsis", "Function"):
        if _TYPE_TESTS[name][0](value):
            return name
    return type(value).__name__


class MultitypeFuncGraph:
    """A function overloaded on the MindSpore type names of its arguments.

    `fg = MultitypeFuncGraph("name")`; `@fg.register("Tensor", "Number")` adds an overload;
    `fg(*args)` calls the overload whose type names accept the arguments (Tensor covers
    Parameter; Number covers Int, Float and Bool). Where several accept them the most specific
    wins (Int before Number), then the first registered. read_value is accepted for
    MindSpore's signature: pijit passes Parameters by reference either way."""

    def __init__(self, name, read_value=False):
        if not isinstance(name, str):
            raise TypeError(f"MultitypeFuncGraph: name must be a str, got {type(name).__name__}")
        self.name = name
        self.read_value = bool(read_value)
        self.entries = []

    def register(self, *type_names):
        """A decorator adding the function as the overload for `type_names`."""
        names = []
        for type_name in type_names:
            if not isinstance(type_name, str):
                raise TypeError(f"MultitypeFuncGraph.register: type names must be strings, got "
                                f"{type(type_name).__name__}")
            type_name = _TYPE_ALIASES.get(type_name, type_name)
            if type_name not in _TYPE_TESTS:
                raise ValueError(f"MultitypeFuncGraph.register: unknown type name {type_name!r}; "
                                 f"expected one of {sorted(_TYPE_TESTS)}")
            names.append(type_name)

        def add(fn):
            if not callable(fn):
                raise TypeError(f"MultitypeFuncGraph.register: expected a function, got "
                                f"{type(fn).__name__}")
            self.entries.append((tuple(names), fn))
            return fn

        return add

    def __call__(self, *args):
        best, best_score = None, -1
        for names, fn in self.entries:
            if len(names) != len(args):
                continue
            score = 0
            for name, arg in zip(names, args):
                test, specificity = _TYPE_TESTS[name]
                if not test(arg):
                    score = -1
                    break
                score += specificity
            if score > best_score:
                best, best_score = fn, score
        if best is None:
            got = tuple(_type_name(a) for a in args)
            known = [names for names, _ in self.entries]
            raise_error(ValueError, f"MultitypeFuncGraph '{self.name}': no overload accepts "
                                    f"the argument types {got}; registered: {known}")
        return best(*args)


# ---- Partial, HyperMap, Map ----------------------------------------------------------------------

def _plainly_data(value):
    """Whether value is data rather than an operation: a check that capture can decide
    (callable() on an arbitrary object is a builtin it does not evaluate)."""
    return value is None or isinstance(value, (Tensor, tuple, list, dict, str, bool, int, float))


class _PartialCall:
    """fn with its first arguments bound (what ops.Partial()(fn, *args) returns)."""

    def __init__(self, fn, args):
        self.func = fn
        self.args = args

    def __call__(self, *rest):
        return self.func(*self.args, *rest)


class Partial(Primitive):
    """Partial()(fn, *args): fn with its first arguments bound, as functools.partial (a
    class of pijit's own, which a captured construct follows into the graph)."""

    def __call__(self, fn, *args):
        if _plainly_data(fn):
            raise_error(TypeError, f"Partial: fn must be callable, got {type(fn).__name__}")
        return _PartialCall(fn, args)


def _map_sequences(name, fn, args, nested, reverse):
    """fn over the items of the sequences `args` (all tuples or all lists of one length), into
    a sequence of that kind; nested: a sequence item is mapped again (HyperMap)."""
    first_is_tuple = isinstance(args[0], tuple)
    for i, arg in enumerate(args):
        if not isinstance(arg, (tuple, list)) or isinstance(arg, tuple) != first_is_tuple:
            raise_error(TypeError, f"{name}: the inputs must be all tuples or all lists at each "
                                   f"level; input {i} is a {type(arg).__name__} where input 0 "
                                   f"is a {type(args[0]).__name__}")
    size = len(args[0])
    for i, arg in enumerate(args):
        if len(arg) != size:
            raise_error(ValueError, f"{name}: the sequences must have one length; input {i} "
                                    f"has {len(arg)} items where input 0 has {size}")
    results = [None] * size
    order = range(size - 1, -1, -1) if reverse else range(size)
    for k in order:
        items = [arg[k] for arg in args]
        if nested and isinstance(items[0], (tuple, list)):
            results[k] = _map_sequences(name, fn, items, nested, reverse)
        else:
            results[k] = fn(*items)
    return tuple(results) if first_is_tuple else list(results)


class _SequenceMap:
    """What HyperMap and Map share: the operation fixed at construction or passed first."""
    _nested = False

    def __init__(self, ops=None, reverse=False):
        name = type(self).__name__
        if ops is not None and not callable(ops):
            raise TypeError(f"{name}: ops must be a MultitypeFuncGraph, a function or None, got "
                            f"{type(ops).__name__}")
        if not isinstance(reverse, bool):
            raise TypeError(f"{name}: reverse must be a bool, got {type(reverse).__name__}")
        self.ops = ops
        self.reverse = reverse

    def __call__(self, *args):
        name = type(self).__name__
        fn = self.ops
        if fn is None:
            if not args or _plainly_data(args[0]):
                raise_error(TypeError, f"{name}: without ops, the first input must be the "
                                       f"operation to apply")
            fn, args = args[0], args[1:]
        if not args:
            raise_error(TypeError, f"{name}: expected at least one sequence to map over")
        if not isinstance(args[0], (tuple, list)):
            if not self._nested:
                raise_error(TypeError, f"{name}: the inputs must be tuples or lists, got "
                                       f"{type(args[0]).__name__}")
            return fn(*args)  # a leaf: HyperMap applies the operation directly
        return _map_sequences(name, fn, args, self._nested, self.reverse)


class HyperMap(_SequenceMap):
    """HyperMap(ops=None, reverse=False)(*args): ops applied to the items of the sequences
    `args` at matching positions, into nested results of the same structure (tuples stay
    tuples, lists lists). Without ops the first input is the operation. As in MindSpore's
    graph mode every input at a level must be a sequence of the same kind and length (values
    that are the same for every item are bound with Partial); reverse only changes the order
    in which the items are computed."""
    _nested = True


class Map(_SequenceMap):
    """Map(ops=None, reverse=False)(*args): as HyperMap over one level: ops(args[0][i],
    args[1][i], ...) for each i, the items passed whole even when they are sequences."""


# ---- gradient hooks ------------------------------------------------------------------------------

class _GradientTransform(Cell):
    """The identity whose gradient is transform(dout): a Cell with a bprop, so the eager tape
    and a captured gradient both call it."""

    def __init__(self, transform):
        super().__init__()
        self.transform = transform

    def construct(self, x):
        return _ops.zeros_like(x) + x  # a new tensor: the tape links it to x

    def bprop(self, x, out, dout):
        grad = self.transform(dout)
        return (dout if grad is None else grad,)


class InsertGradientOf(Primitive):
    """InsertGradientOf(f)(x): x, whose gradient becomes f(dout) (clipping or scaling the
    gradient flowing back through this point)."""

    def __init__(self, f):
        if not callable(f):
            raise TypeError(f"InsertGradientOf: f must be callable, got {type(f).__name__}")
        Primitive.__init__(self, f=f)
        object.__setattr__(self, "_cell", _GradientTransform(f))

    def __call__(self, x):
        check_tensor("InsertGradientOf", "x", x)
        return self._cell(x)


class HookBackward(Primitive):
    """HookBackward(hook_fn, cell_id="")(*inputs): the inputs unchanged; in the backward pass
    hook_fn(grad) is called with each one's gradient, and a Tensor it returns replaces it.

    MindSpore runs hooks only in PyNative mode. Under pijit.jit capture stops at the hook (the
    bound method it calls is not followed into a graph), so a jitted function holding a
    HookBackward runs eagerly, with the hook called as in PyNative; `pijit.explain` names the
    call as the reason."""

    def __init__(self, hook_fn, cell_id=""):
        if not callable(hook_fn):
            raise TypeError(f"HookBackward: hook_fn must be callable, got "
                            f"{type(hook_fn).__name__}")
        if not isinstance(cell_id, str):
            raise TypeError(f"HookBackward: cell_id must be a str, got {type(cell_id).__name__}")
        Primitive.__init__(self, hook_fn=hook_fn, cell_id=cell_id)
        object.__setattr__(self, "_cell", _GradientTransform(self._call_hook))

    def _call_hook(self, grad):
        new_grad = self.hook_fn(grad)
        if new_grad is not None and not isinstance(new_grad, Tensor):
            raise TypeError(f"HookBackward: hook_fn must return a Tensor or None, got "
                            f"{type(new_grad).__name__}")
        return new_grad

    def __call__(self, *inputs):
        if not inputs:
            raise TypeError("HookBackward: expected at least one input")
        for i, x in enumerate(inputs):
            check_tensor("HookBackward", f"input {i}", x)
        outs = tuple(self._cell(x) for x in inputs)
        return outs[0] if len(outs) == 1 else outs


# ---- checks --------------------------------------------------------------------------------------

def _summary(values, summarize):
    flat = values.asnumpy().reshape(-1)
    shown = np.array2string(flat[:summarize], separator=", ")
    return shown + (" ..." if flat.size > summarize else "")


class Assert(Primitive):
    """Assert(summarize=3)(condition, input_data): raises a RuntimeError showing the first
    `summarize` values of each tensor in input_data when the boolean condition (a bool or a
    one-element bool Tensor) is false. The condition is read on the host, so a jitted function
    breaks its graph there."""

    def __init__(self, summarize=3):
        summarize = plain(summarize)
        if isinstance(summarize, bool) or not isinstance(summarize, int) or summarize < 0:
            raise TypeError(f"Assert: summarize must be a non-negative int, got {summarize!r}")
        Primitive.__init__(self, summarize=summarize)

    def __call__(self, condition, input_data):
        if isinstance(condition, Tensor):
            if condition.dtype != bool_ or condition.size != 1:
                raise_error(TypeError, f"Assert: condition must be a bool or a one-element bool "
                                       f"Tensor, got {condition.dtype} of shape "
                                       f"{tuple(condition.shape)}")
        elif not isinstance(condition, (bool, np.bool_)):
            raise_error(TypeError, f"Assert: condition must be a bool or a bool Tensor, got "
                                   f"{type(condition).__name__}")
        if not isinstance(input_data, (tuple, list)):
            raise_error(TypeError, f"Assert: input_data must be a tuple or list of Tensors, got "
                                   f"{type(input_data).__name__}")
        for i, data in enumerate(input_data):
            check_tensor("Assert", f"input_data[{i}]", data)
        holds = bool(condition.asnumpy().reshape(-1)[0]) if isinstance(condition, Tensor) \
            else bool(condition)
        if not holds:
            shown = "; ".join(_summary(d, self.summarize) for d in input_data)
            raise RuntimeError(f"Assert: the condition is false. input_data: {shown}")


class CheckNumerics(Primitive):
    """CheckNumerics()(x): x, after checking on the host that it holds no NaN or infinity (a
    RuntimeError if it does)."""

    def __call__(self, x):
        check_tensor("CheckNumerics", "x", x)
        if x.dtype not in FLOAT_DTYPES:
            raise_error(TypeError, f"CheckNumerics: x must be a float Tensor, got {x.dtype}")
        values = x.astype(float32).asnumpy() if x.dtype == bfloat16 else x.asnumpy()
        if not np.isfinite(values).all():
            bad = "NaN" if np.isnan(values).any() else "Inf"
            raise RuntimeError(f"CheckNumerics: x holds {bad} values")
        return x


# ---- creation ------------------------------------------------------------------------------------

# The smallest positive normal number of each float dtype (MindSpore's Eps).
_SMALLEST_NORMAL = {float16: 2.0 ** -14, bfloat16: 2.0 ** -126, float32: 2.0 ** -126,
                    float64: 2.0 ** -1022}


class Eps(Primitive):
    """Eps()(x): a tensor shaped like x filled with the smallest positive normal number of its
    float dtype (6.1035e-05 for float16, 1.1755e-38 for float32, 2.2251e-308 for float64)."""

    def __call__(self, x):
        check_tensor("Eps", "x", x)
        if x.dtype not in _SMALLEST_NORMAL:
            raise_error(TypeError, f"Eps: x must be a float Tensor, got {x.dtype}")
        return _ops.full_like(x, _SMALLEST_NORMAL[x.dtype])


class FillV2(Primitive):
    """FillV2()(shape, value): a tensor of `shape` (a tuple of ints or a 1-D int Tensor)
    filled with the one-element Tensor `value`, in value's dtype."""

    def __call__(self, shape, value):
        if isinstance(shape, Tensor):
            if shape.ndim != 1 or shape.dtype not in (int32, int64):
                raise_error(TypeError, f"FillV2: shape must be a 1-D int Tensor or a tuple of "
                                       f"ints, got {shape.dtype} of rank {shape.ndim}")
            shape = tuple(int(n) for n in shape.asnumpy())
        shape = plain(shape)
        if not isinstance(shape, (tuple, list)) or any(
                isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in shape):
            raise_error(TypeError, f"FillV2: shape must be a tuple of non-negative ints, got "
                                   f"{shape!r}")
        check_tensor("FillV2", "value", value)
        if value.size != 1:
            raise_error(ValueError, f"FillV2: value must have one element, got shape "
                                    f"{tuple(value.shape)}")
        return _ops.broadcast_to(_ops.reshape(value, ()), tuple(shape)) + \
            _ops.zeros(tuple(shape), dtype=value.dtype)


# ---- connectionist temporal classification -------------------------------------------------------
# The extended label sequence of a target l is blank, l1, blank, l2, ..., blank (2S + 1 states).
# alpha[t, s] is the log probability of all paths through the first t + 1 frames that end in
# state s; a state is reached from itself, from s - 1, and from s - 2 when s is a label unlike
# the one two back. Unreachable states hold a large negative number rather than -inf, so that
# the log-sum-exp and its gradient stay finite; they become -inf (or an infinite loss) at the end.

_UNREACHABLE = -1e30
_UNREACHABLE_BELOW = -1e29


def _log_sum_exp3(a, b, c):
    top = _ops.maximum(_ops.maximum(a, b), c)
    return top + _ops.log(_ops.exp(a - top) + _ops.exp(b - top) + _ops.exp(c - top))


def _shift_states(alpha, by):
    """alpha moved `by` states to the right, the first `by` states unreachable."""
    pad = _ops.full((alpha.shape[0], by), _UNREACHABLE, dtype=alpha.dtype)
    return _ops.concat((pad, alpha[:, :alpha.shape[1] - by]), 1)


def _ctc_alpha(log_probs, targets, input_lengths, blank, merge_repeated=True):
    """(alpha of every frame, N x T x (2S + 1)) for log_probs (T, N, C) and targets (N, S)."""
    frames, batch, _ = log_probs.shape
    labels = targets.shape[1]
    targets = targets.astype(int64)
    blanks = _ops.full((batch, labels), blank, dtype=int64)
    extended = _ops.concat((_ops.reshape(_ops.stack((blanks, targets), 2), (batch, 2 * labels)),
                            _ops.full((batch, 1), blank, dtype=int64)), 1)
    states = 2 * labels + 1
    index = _ops.broadcast_to(_ops.reshape(extended, (batch, 1, states)), (batch, frames, states))
    emissions = gather_elements(_ops.transpose(log_probs, (1, 0, 2)), 2, index)  # N, T, states
    is_label = _ops.not_equal(extended, blank)
    two_back = _ops.concat((_ops.full((batch, 2), blank, dtype=int64), extended[:, :states - 2]), 1)
    can_skip = _ops.logical_and(is_label, _ops.not_equal(extended, two_back))
    can_stay = _ops.ones_like(is_label) if merge_repeated else _ops.logical_not(is_label)
    unreachable = _ops.full((batch, states), _UNREACHABLE, dtype=log_probs.dtype)
    first_two = _ops.less(_ops.reshape(_ops.arange(states), (1, states)), 2)
    alpha = _ops.where(first_two, emissions[:, 0, :], unreachable)
    lengths = _ops.reshape(input_lengths.astype(int64), (batch, 1))
    history = [alpha]
    for t in range(1, frames):
        stay = _ops.where(can_stay, alpha, unreachable)
        skip = _ops.where(can_skip, _shift_states(alpha, 2), unreachable)
        step = _log_sum_exp3(stay, _shift_states(alpha, 1), skip) + emissions[:, t, :]
        alpha = _ops.where(_ops.less(t, lengths), step, alpha)  # frozen past the input's end
        history.append(alpha)
    return _ops.stack(tuple(history), 1)


def _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank, merge_repeated=True):
    """(negative log likelihood per sample, possibly +inf; alpha with -inf where unreachable)."""
    alphas = _ctc_alpha(log_probs, targets, input_lengths, blank, merge_repeated)
    batch, frames, states = alphas.shape
    last_frame = _ops.reshape(_ops.clip(input_lengths.astype(int64) - 1, 0, frames - 1),
                              (batch, 1, 1))
    final = _ops.squeeze(gather_elements(
        alphas, 1, _ops.broadcast_to(last_frame, (batch, 1, states))), 1)  # N, states
    end = _ops.reshape(2 * target_lengths.astype(int64), (batch, 1))
    ends = _ops.concat((end, _ops.clip(end - 1, 0, states - 1)), 1)
    last_two = gather_elements(final, 1, ends)
    no_label = _ops.reshape(_ops.equal(target_lengths, 0), (batch, 1))
    last_two = _ops.where(_ops.logical_and(no_label, _ops.equal(
        _ops.reshape(_ops.arange(2), (1, 2)), 1)), _UNREACHABLE, last_two)
    top = _ops.max(last_two, 1, keepdims=True)
    nll = -_ops.squeeze(top + _ops.log(_ops.sum(_ops.exp(last_two - top), 1, keepdims=True)), 1)
    infinite = _ops.greater(nll, -_UNREACHABLE_BELOW)
    nll = _ops.where(infinite, float("inf"), nll)
    log_alpha = _ops.where(_ops.less(alphas, _UNREACHABLE_BELOW), float("-inf"), alphas)
    return nll, infinite, log_alpha


def _check_ctc_inputs(fname, log_probs, targets, input_lengths, target_lengths, blank):
    check_tensor(fname, "log_probs", log_probs)
    if log_probs.dtype not in FLOAT_DTYPES or log_probs.ndim != 3:
        raise_error(TypeError, f"{fname}: log_probs must be a float Tensor of shape (T, N, C), "
                               f"got {log_probs.dtype} of shape {tuple(log_probs.shape)}")
    frames, batch, classes = log_probs.shape
    check_tensor(fname, "targets", targets)
    if targets.ndim != 2 or targets.shape[0] != batch or targets.dtype not in (int32, int64):
        raise_error(TypeError, f"{fname}: targets must be an int Tensor of shape (N, S) with "
                               f"N = {batch}, got {targets.dtype} of shape "
                               f"{tuple(targets.shape)}")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        check_tensor(fname, name, lengths)
        if tuple(lengths.shape) != (batch,) or lengths.dtype not in (int32, int64):
            raise_error(TypeError, f"{fname}: {name} must be an int Tensor of shape ({batch},), "
                                   f"got {lengths.dtype} of shape {tuple(lengths.shape)}")
    if isinstance(blank, bool) or not isinstance(blank, int) or not 0 <= blank < classes:
        raise_error(ValueError, f"{fname}: blank must be an int in [0, {classes}), got {blank!r}")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """(loss, log_alpha): the CTC loss of log_probs (T, N, C; log-softmax outputs) against the
    padded targets (N, S), and the forward variables (N, T, 2S + 1). reduction: 'none' (one
    loss per sample), 'sum', or 'mean' (each loss divided by its target length, then the batch
    mean). zero_infinity: impossible alignments give 0 (and no gradient) instead of inf."""
    _check_ctc_inputs("ctc_loss", log_probs, targets, input_lengths, target_lengths, blank)
    if reduction not in ("none", "mean", "sum"):
        raise_error(ValueError, f"ctc_loss: reduction must be 'none', 'mean' or 'sum', got "
                                f"{reduction!r}")
    nll, infinite, log_alpha = _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank)
    if zero_infinity:
        nll = _ops.where(infinite, 0.0, nll)
    if reduction == "sum":
        return _ops.sum(nll), log_alpha
    if reduction == "mean":
        divisor = _ops.clip(target_lengths, 1, None).astype(nll.dtype)
        return _ops.mean(nll / divisor), log_alpha
    return nll, log_alpha


def _ctc_loss_v2(self, log_probs, targets, input_lengths, target_lengths):
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                    self.reduction, self.zero_infinity)


class CTCLossV2(Primitive):
    """CTCLossV2(blank=0, reduction='none', zero_infinity=False)(log_probs, targets,
    input_lengths, target_lengths): (neg_log_likelihood, log_alpha), as ctc_loss."""

    def __init__(self, blank=0, reduction="none", zero_infinity=False):
        if isinstance(blank, bool) or not isinstance(blank, int) or blank < 0:
            raise TypeError(f"CTCLossV2: blank must be a non-negative int, got {blank!r}")
        if reduction not in ("none", "mean", "sum"):
            raise ValueError(f"CTCLossV2: reduction must be 'none', 'mean' or 'sum', got "
                             f"{reduction!r}")
        Primitive.__init__(self, blank=blank, reduction=reduction,
                           zero_infinity=bool(zero_infinity))

    __call__ = _ctc_loss_v2


def _dense_labels(indices, values, batch, sequence_length, collapse_repeated, ignore_longer):
    """(targets (N, S), target lengths, samples whose labels outlast their input) from the
    sparse labels; read on the host, as the labels' lengths set the shapes."""
    indices, values = indices.asnumpy().astype(np.int64), values.asnumpy().astype(np.int64)
    per_sample = [[] for _ in range(batch)]
    for (row, _), value in sorted(zip(map(tuple, indices), values)):
        if not 0 <= row < batch:
            raise ValueError(f"CTCLoss: labels_indices names batch entry {row} of {batch}")
        if collapse_repeated and per_sample[row] and per_sample[row][-1] == value:
            continue
        per_sample[row].append(int(value))
    width = max([len(labels) for labels in per_sample] + [1])
    dense = np.zeros((batch, width), np.int64)
    for row, labels in enumerate(per_sample):
        dense[row, :len(labels)] = labels
    lengths = np.array([len(labels) for labels in per_sample], np.int64)
    too_long = lengths > sequence_length.asnumpy().astype(np.int64)
    if too_long.any() and not ignore_longer:
        raise ValueError(f"CTCLoss: the labels of batch entries {np.flatnonzero(too_long)} are "
                         f"longer than their sequence_length; set "
                         f"ignore_longer_outputs_than_inputs=True to give them a zero loss")
    return Tensor(dense), Tensor(lengths), too_long


class CTCLoss(Primitive):
    """CTCLoss(preprocess_collapse_repeated=False, ctc_merge_repeated=True,
    ignore_longer_outputs_than_inputs=False)(x, labels_indices, labels_values,
    sequence_length): (loss per batch entry, its gradient with respect to x).

    x holds unnormalised logits (max_time, batch, num_classes) and the last class is the
    blank; the labels are sparse ((M, 2) indices of (batch entry, position), M values).
    ctc_merge_repeated=False treats repeated labels as separate symbols (a label state cannot
    last more than one frame). The labels are read on the host, so a jitted function breaks
    its graph here."""

    def __init__(self, preprocess_collapse_repeated=False, ctc_merge_repeated=True,
                 ignore_longer_outputs_than_inputs=False):
        for name, value in (("preprocess_collapse_repeated", preprocess_collapse_repeated),
                            ("ctc_merge_repeated", ctc_merge_repeated),
                            ("ignore_longer_outputs_than_inputs",
                             ignore_longer_outputs_than_inputs)):
            if not isinstance(value, bool):
                raise TypeError(f"CTCLoss: {name} must be a bool, got {type(value).__name__}")
        Primitive.__init__(self, preprocess_collapse_repeated=preprocess_collapse_repeated,
                           ctc_merge_repeated=ctc_merge_repeated,
                           ignore_longer_outputs_than_inputs=ignore_longer_outputs_than_inputs)

    def __call__(self, x, labels_indices, labels_values, sequence_length):
        check_tensor("CTCLoss", "x", x)
        if x.dtype not in FLOAT_DTYPES or x.ndim != 3:
            raise TypeError(f"CTCLoss: x must be a float Tensor of shape (max_time, batch, "
                            f"num_classes), got {x.dtype} of shape {tuple(x.shape)}")
        for name, value in (("labels_indices", labels_indices), ("labels_values", labels_values),
                            ("sequence_length", sequence_length)):
            check_tensor("CTCLoss", name, value)
        if labels_indices.ndim != 2 or labels_indices.shape[1] != 2 or \
                labels_values.shape[0] != labels_indices.shape[0]:
            raise ValueError(f"CTCLoss: labels_indices must be (M, 2) and labels_values (M,), "
                             f"got {tuple(labels_indices.shape)} and "
                             f"{tuple(labels_values.shape)}")
        batch = x.shape[1]
        targets, target_lengths, too_long = _dense_labels(
            labels_indices, labels_values, batch, sequence_length,
            self.preprocess_collapse_repeated, self.ignore_longer_outputs_than_inputs)
        blank = x.shape[2] - 1
        keep = Tensor(np.logical_not(too_long)).astype(x.dtype)
        merge = self.ctc_merge_repeated

        def loss_of(logits):
            log_probs = _ops.log_softmax(logits, 2)
            nll, _, _ = _ctc_nll(log_probs, targets, sequence_length, target_lengths, blank, merge)
            return _ops.where(_ops.greater(keep, 0), nll, 0.0)

        loss, grads, _ = _autodiff.vjp(loss_of, (x,), (0,), None, keep)
        return loss, grads[0]


__all__ = ["Assert", "CTCLoss", "CTCLossV2", "CheckNumerics", "Eps", "FillV2", "HookBackward",
           "HyperMap", "InsertGradientOf", "Map", "MultitypeFuncGraph", "Partial", "ctc_loss"]
