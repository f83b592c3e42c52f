"""THOR, the second-order optimizer (MindSpore's mindspore.nn.thor): Momentum on gradients
preconditioned per layer by the inverse Kronecker factors of the Fisher information,

    g' = (G + sqrt(damping) I)^-1 @ g @ (A + sqrt(damping) I)^-1      (g as out x in matrix)

with A and G the layer's input and output-gradient covariances that DenseThor, Conv2dThor and
EmbeddingThor record (pijit.nn.layers.thor_layer). As MindSpore's GPU THOR: G is first
multiplied by batch_size^2 / loss_scale^2 (the layers see the gradient of a mean, and of the
scaled loss); a convolution's damping is damping / L and each of its inverses is scaled by
sqrt(1 / L), L the output positions per sample; an embedding's A is the diagonal id count
/ batch_size; a LayerNorm's gamma and beta gradients g become g / (g^2 / batch_size +
sqrt(damping)) (MindSpore's diagonal treatment); biases and every other parameter keep their
plain gradient. Every `frequency`
steps (the step counter at a multiple of frequency, from the first step on) the inverses are
recomputed from the statistics of that step and stored in matrix_a_inv_<i> / matrix_g_inv_<i>;
the steps in between reuse the stored ones. Then, as MindSpore: weight decay (for the
parameters decay_filter accepts), optional clipping of each gradient to norm 1, and
MindSpore's ApplyMomentum update (moment = momentum * moment + g; p -= lr * moment, or
lr * (g + momentum * moment) with Nesterov).

The statistics reach the optimizer as the gradients of the layers' statistic Parameters
(thor_layer's docstring says why), so those Parameters are among the optimizer's parameters:
TrainOneStepCell, value_and_grad(fn, None, optimizer.parameters) and Model hand them over with
the weights' gradients. The optimizer stores them at refresh steps and never steps them.

The refresh is chosen inside the step by an `if` on the step counter tensor, so the same step
function serves every mode: eagerly Python takes the branch, a whole-graph capture (bare
`jit`, GRAPH_MODE) compiles it as a cond that runs only the way taken, and bytecode capture
breaks the graph there. Only refresh steps compute the inverses."""
import numbers

import numpy as np

from pijit import ops
from pijit._arg_checks import check_bool
from pijit._tensor import Parameter, Tensor, float32
from pijit.nn.cell import Cell
from pijit.nn.layers.normalization import LayerNorm
from pijit.nn.optim import Optimizer, _check_number, _repr_fields

__all__ = ["thor"]

_CLIP_NORM = 1.0  # MindSpore's THOR clips each gradient to this L2 norm when asked


def _damping_table(damping):
    """damping as a float32 table of per-step values (one value: a table of one)."""
    if isinstance(damping, Tensor):
        values = damping.asnumpy()
    elif isinstance(damping, (list, tuple)):
        values = damping
    elif isinstance(damping, numbers.Real) and not isinstance(damping, bool):
        values = [damping]
    else:
        raise TypeError(f"thor: damping must be a float, a list of floats or a Tensor, got "
                        f"{type(damping).__name__}")
    try:
        table = np.asarray(values, np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"thor: damping must hold numbers, got {damping!r}") from None
    if table.size == 0 or not np.all(np.isfinite(table)) or np.any(table <= 0):
        raise ValueError(f"thor: damping must be positive finite values, got {damping!r}")
    return table.astype(np.float32)


def _check_frequency(frequency):
    if isinstance(frequency, bool) or not isinstance(frequency, numbers.Integral):
        raise TypeError(f"thor: frequency must be an int, got {type(frequency).__name__}")
    if frequency < 1:
        raise ValueError(f"thor: frequency must be at least 1, got {frequency}")
    return int(frequency)


def _check_split_indices(split_indices):
    if split_indices is None:
        return None
    if not isinstance(split_indices, (list, tuple)) or not all(
            isinstance(i, numbers.Integral) and not isinstance(i, bool) and i >= 0
            for i in split_indices):
        raise TypeError(f"thor: split_indices must be None or a list of non-negative ints, got "
                        f"{split_indices!r}")
    return list(split_indices)


def _thor_layers(net):
    """The THOR layers of net, each once, in traversal order."""
    from pijit.nn.layers.thor_layer import Conv2dThor, DenseThor, EmbeddingThor
    return [cell for _, cell in net.cells_and_names()
            if isinstance(cell, (DenseThor, Conv2dThor, EmbeddingThor))]


class _Preconditioner:
    """One layer's part of the step: its weight, statistics and stored inverses."""

    def __init__(self, layer, kind, weight, a_inv, g_inv):
        self.layer, self.kind, self.weight = layer, kind, weight
        self.a_inv, self.g_inv = a_inv, g_inv
        # A, G (and a convolution's windows per sample): their gradients carry the statistics.
        extra = (layer.a_normalizer,) if kind == "conv" else ()
        self.statistics = (layer.matrix_a, layer.matrix_g) + extra


class Thor(Optimizer):
    """The optimizer `thor(...)` returns; see the module's docstring and `thor`."""

    def __init__(self, net, learning_rate, damping, momentum, weight_decay=0.0, loss_scale=1.0,
                 batch_size=32, use_nesterov=False, decay_filter=lambda x: x.name not in [],
                 split_indices=None, enable_clip_grad=False, frequency=100):
        if not isinstance(net, Cell):
            raise TypeError(f"thor: net must be a Cell, got {type(net).__name__}")
        layers = _thor_layers(net)
        if not layers:
            raise ValueError("thor: the network has no Dense, Conv2d or Embedding layer to "
                             "precondition")
        super().__init__(learning_rate, [p for p in net.get_parameters() if p.requires_grad],
                         weight_decay, loss_scale)
        self.momentum = _check_number("thor", "momentum", momentum, low=0.0)
        check_bool("thor: use_nesterov", use_nesterov)
        check_bool("thor: enable_clip_grad", enable_clip_grad)
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or \
                batch_size < 1:
            raise ValueError(f"thor: batch_size must be a positive int, got {batch_size!r}")
        if not callable(decay_filter):
            raise TypeError(f"thor: decay_filter must be callable, got "
                            f"{type(decay_filter).__name__}")
        self.use_nesterov, self.enable_clip_grad = use_nesterov, enable_clip_grad
        self.batch_size, self.frequency = int(batch_size), _check_frequency(frequency)
        self.split_indices = _check_split_indices(split_indices)
        self.damping = Parameter(_damping_table(damping), name="damping", requires_grad=False)
        self.cov_step = Parameter(np.array(0, np.float32), name="cov_step", requires_grad=False)
        self._build_preconditioners(layers)
        statistic_ids = {id(p) for pre in self._preconditioners for p in pre.statistics}
        self.__dict__["_trained"] = tuple(id(p) not in statistic_ids for p in self.parameters)
        norm_ids = {id(p) for _, cell in net.cells_and_names() if isinstance(cell, LayerNorm)
                    for p in (cell.gamma, cell.beta)}
        self.__dict__["_layer_norm"] = tuple(id(p) in norm_ids for p in self.parameters)
        self.__dict__["_decay_flags"] = tuple(bool(decay_filter(p)) for p in self.parameters)
        self.__dict__["_moments"] = tuple(
            self._moment(p) if trained else None
            for p, trained in zip(self.parameters, self._trained))

    def _moment(self, param):
        moment = Parameter(np.zeros(param.shape, np.float32), name=f"moments.{param.name}",
                           requires_grad=False)
        self._registry()[0][moment.name] = moment
        return moment

    def _build_preconditioners(self, layers):
        from pijit.nn.layers.thor_layer import Conv2dThor, EmbeddingThor
        pres = []
        for i, layer in enumerate(layers):
            if isinstance(layer, EmbeddingThor):
                kind, weight = "embedding", layer.embedding_table
            else:
                kind, weight = ("conv" if isinstance(layer, Conv2dThor) else "dense"), layer.weight
            a_shape, g_shape = layer.matrix_a.shape, layer.matrix_g.shape
            a_inv = Parameter(np.zeros(a_shape, np.float32), name=f"matrix_a_inv_{i}",
                              requires_grad=False)
            g_inv = Parameter(np.zeros(g_shape, np.float32), name=f"matrix_g_inv_{i}",
                              requires_grad=False)
            setattr(self, a_inv.name, a_inv)
            setattr(self, g_inv.name, g_inv)
            pres.append(_Preconditioner(layer, kind, weight, a_inv, g_inv))
        self.__dict__["_preconditioners"] = tuple(pres)
        index = {id(p): k for k, p in enumerate(self.parameters)}
        for pre in pres:
            if id(pre.weight) not in index or any(id(p) not in index
                                                   for p in pre.statistics):
                raise ValueError(f"thor: the weight and statistics of {type(pre.layer).__name__} "
                                 f"must be trainable parameters of net")
        self.__dict__["_layout"] = tuple(
            (index[id(pre.weight)],) + tuple(index[id(p)] for p in pre.statistics)
            for pre in pres)

    def get_frequency(self):
        """How many steps the stored inverses serve (MindSpore's get_frequency)."""
        return self.frequency

    def _damping_now(self):
        """This step's damping: the table's entry at the step counter (its last after)."""
        n = self.damping.shape[0]
        at = ops.equal(ops.arange(n, dtype=float32), ops.minimum(self.cov_step, float(n - 1)))
        return ops.sum(self.damping * at)

    def _fresh_inverses(self, pre, layout, grads, damping):
        """(A^-1, G^-1) from this step's statistics (their gradients)."""
        stats = [grads[k] for k in layout[1:]]
        matrix_a, matrix_g = stats[0], stats[1]
        scale = float(self.batch_size) ** 2 / self.loss_scale ** 2
        matrix_g = matrix_g * scale
        g_eye = ops.eye(matrix_g.shape[0], matrix_g.shape[0], float32)
        if pre.kind == "embedding":
            a_inv = 1.0 / (matrix_a / float(self.batch_size) + ops.sqrt(damping))
            return a_inv, ops.inverse(matrix_g + ops.sqrt(damping) * g_eye)
        a_eye = ops.eye(matrix_a.shape[0], matrix_a.shape[0], float32)
        if pre.kind == "dense":
            root = ops.sqrt(damping)
            return ops.inverse(matrix_a + root * a_eye), ops.inverse(matrix_g + root * g_eye)
        positions = stats[2]
        root = ops.sqrt(damping / positions)
        feature = ops.sqrt(1.0 / positions)
        return (ops.inverse(matrix_a + root * a_eye) * feature,
                ops.inverse(matrix_g + root * g_eye) * feature)

    def _all_fresh_inverses(self, grads, damping):
        inverses = []
        for pre, layout in zip(self._preconditioners, self._layout):
            inverses.append(self._fresh_inverses(pre, layout, grads, damping))
        return tuple(inverses)

    def _stored_inverses(self):
        inverses = []
        for pre in self._preconditioners:
            inverses.append((pre.a_inv + 0.0, pre.g_inv + 0.0))
        return tuple(inverses)

    def _precondition(self, grads):
        """The gradients with each THOR weight's replaced by G^-1 g A^-1 and each LayerNorm
        parameter's rescaled; refreshes the stored inverses and statistics at refresh
        steps."""
        grads = list(grads)
        damping = self._damping_now()
        step = self.cov_step
        refresh = ops.equal(step - ops.floor(step / float(self.frequency)) * self.frequency, 0.0)
        # Only the way taken runs: eagerly a Python branch, in a whole-graph capture a cond.
        if refresh:
            inverses = self._all_fresh_inverses(grads, damping)
        else:
            inverses = self._stored_inverses()
        for pre, layout, (a_inv, g_inv) in zip(self._preconditioners, self._layout, inverses):
            ops.assign(pre.a_inv, a_inv)
            ops.assign(pre.g_inv, g_inv)
            for k, stat in zip(layout[1:], pre.statistics):
                ops.assign(stat, ops.where(refresh, grads[k], stat))
            g = grads[layout[0]]
            if pre.kind == "embedding":
                grads[layout[0]] = ops.matmul(ops.reshape(a_inv, (-1, 1)) * g, g_inv)
            else:
                flat = ops.reshape(g, (g.shape[0], -1))
                grads[layout[0]] = ops.reshape(ops.matmul(ops.matmul(g_inv, flat), a_inv),
                                               g.shape)
        for k, is_norm in enumerate(self._layer_norm):
            if is_norm:
                g = grads[k]
                grads[k] = g / (g * g / float(self.batch_size) + ops.sqrt(damping))
        ops.assign(self.cov_step, step + 1.0)
        return grads

    def _update(self, gradients):
        gradients = self._gradients(gradients)
        inv_scale = 1.0 / self.loss_scale
        # The statistics are not scaled gradients: only the trained parameters' are unscaled.
        grads = [g * inv_scale if trained and self.loss_scale != 1.0 else g
                 for g, trained in zip(gradients, self._trained)]
        grads = self._precondition(grads)
        lrs = self._lrs()
        mom = self.momentum
        for k, (p, g, lr) in enumerate(zip(self.parameters, grads, lrs)):
            if not self._trained[k]:
                continue
            if self.weight_decay > 0.0 and self._decay_flags[k]:
                g = g + p * self.weight_decay
            if self.enable_clip_grad:
                norm = ops.sqrt(ops.sum(g * g))
                g = g * _CLIP_NORM / ops.maximum(norm, _CLIP_NORM)
            moment = self._moments[k]
            new_moment = moment * mom + g
            ops.assign(moment, new_moment)
            ops.assign(p, p - lr * (g + new_moment * mom if self.use_nesterov else new_moment))
        return True

    def extend_repr(self):
        return super().extend_repr() + _repr_fields(self, "momentum", "frequency", "batch_size",
                                                    "use_nesterov")


def thor(net, learning_rate, damping, momentum, weight_decay=0.0, loss_scale=1.0, batch_size=32,
         use_nesterov=False, decay_filter=lambda x: x.name not in [], split_indices=None,
         enable_clip_grad=False, frequency=100):
    """THOR (MindSpore's nn.thor): converts net's Dense, Conv2d and Embedding layers to their
    THOR forms in place (ConvertNetUtils, keeping their Parameters) and returns the optimizer
    over net's trainable parameters; see the module's docstring for the update.

    learning_rate is what Momentum takes (a number, a per-step list or Tensor, or a schedule);
    damping a positive number or a per-step list or 1-D Tensor (its last value holds after
    the list ends); momentum >= 0; frequency >= 1 steps between refreshes of the inverses;
    batch_size the batch the loss averages over; loss_scale the factor the loss was scaled
    by; split_indices is accepted for compatibility (one process: nothing to fuse)."""
    from pijit.train.train_thor import ConvertNetUtils
    if not isinstance(net, Cell):
        raise TypeError(f"thor: net must be a Cell, got {type(net).__name__}")
    _damping_table(damping)
    _check_frequency(frequency)
    ConvertNetUtils().convert_to_thor_net(net)
    return Thor(net, learning_rate, damping, momentum, weight_decay, loss_scale, batch_size,
                use_nesterov, decay_filter, split_indices, enable_clip_grad, frequency)
