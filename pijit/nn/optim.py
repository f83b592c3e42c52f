"""Optimizers (MindSpore's mindspore.nn.optim): SGD, Momentum and Adam.

`optimizer(grads)` takes one gradient per parameter (in the order of `optimizer.parameters`),
updates the parameters in place with ops.assign, and returns True. In-place updates are seen by
every later call, eager or compiled (captured graphs read parameters on each call).

Per-parameter state (momentum buffers, Adam's moments, the step counters) are Parameters of
the optimizer Cell, named "<state>.<parameter name>", so that they show up in
`optimizer.get_parameters()` as in MindSpore. Weight decay adds `weight_decay * param` to the
gradient before the update (MindSpore's Optimizer.decay_weight); without parameter groups, as
in MindSpore, parameters whose names contain 'beta' or 'gamma' are not decayed."""
import numbers

import numpy as np

from pijit import ops
from pijit._arg_checks import check_bool
from pijit._tensor import Parameter, ParameterTuple, Tensor, float32
from pijit.nn.cell import Cell

__all__ = ["Optimizer", "SGD", "Momentum", "Adam"]


def _check_number(cls, name, value, low=None, low_open=False, high=None, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{cls}: {name} must be a float, got {type(value).__name__}")
    value = float(value)
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{cls}: {name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{cls}: {name} must be {'<' if high_open else '<='} {high}, got {value}")
    return value


def _repr_fields(optimizer, *names):
    """`, name=value` for each named attribute, for extend_repr."""
    return "".join(f", {name}={getattr(optimizer, name)}" for name in names)


def _decays(param):
    name = getattr(param, "name", None) or ""
    return "beta" not in name and "gamma" not in name


class Optimizer(Cell):
    """Base class: holds the parameters (a ParameterTuple), the learning rate, the weight decay
    and a step counter (the float32 Parameter "global_step"). Subclasses define
    `_update(gradients)`, taking each parameter's rate from `_lrs()`.

    The learning rate is a number or a one-element Tensor (kept in the float32 Parameter
    "learning_rate", so set_data changes it for later steps); a list, tuple or 1-D Tensor of
    per-step rates (the last one holds after the list ends); or a LearningRateSchedule Cell
    called with the step counter. `parameters` may instead be groups, MindSpore's list of
    dicts: {"params": [...], "lr": ..., "weight_decay": ...} with the optimizer's arguments
    as defaults, and optionally {"order_params": [...]} giving the parameters' order.

    The update (ops.assign on each parameter and state) is captured like any construct:
    graphs whose effects are assigns run even when the function returns nothing."""

    def construct(self, gradients):
        return self._update(gradients)

    def _update(self, gradients):
        raise NotImplementedError(f"{type(self).__name__} must define _update(gradients)")

    def __init__(self, learning_rate, parameters, weight_decay=0.0, loss_scale=1.0):
        super().__init__(auto_prefix=False)
        cls = type(self).__name__
        if parameters is None:
            raise ValueError(f"{cls}: parameters must not be None")
        items = list(parameters)
        if not items:
            raise ValueError(f"{cls}: the parameter list is empty")
        self.weight_decay = _check_number(cls, "weight_decay", weight_decay, low=0.0)
        self.loss_scale = _check_number(cls, "loss_scale", loss_scale, low=0.0, low_open=True)
        # (parameter, index of its learning-rate source, weight decay) per parameter.
        sources, entries, order = [learning_rate], [], None
        if isinstance(items[0], dict):
            for group in items:
                if not isinstance(group, dict):
                    raise TypeError(f"{cls}: parameter groups must all be dicts, got "
                                    f"{type(group).__name__}")
                unknown = set(group) - {"params", "lr", "learning_rate", "weight_decay",
                                        "order_params"}
                if unknown:
                    raise ValueError(f"{cls}: unknown keys {sorted(unknown)} in a parameter "
                                     f"group (expected params, lr, weight_decay, order_params)")
                if "order_params" in group:
                    order = list(group["order_params"])
                    continue
                if "params" not in group:
                    raise ValueError(f"{cls}: a parameter group needs 'params'")
                lr_index = 0
                lr = group.get("lr", group.get("learning_rate"))
                if lr is not None:
                    sources.append(lr)
                    lr_index = len(sources) - 1
                wd = _check_number(cls, "weight_decay", group.get("weight_decay", weight_decay),
                                   low=0.0)
                entries += [(p, lr_index, wd) for p in group["params"]]
        else:
            # As MindSpore's Optimizer without groups: no decay for parameters whose names hold
            # 'beta' or 'gamma' (normalisation layers' shifts and scales).
            entries = [(p, 0, self.weight_decay if _decays(p) else 0.0) for p in items]
        for p, _, _ in entries:
            if not isinstance(p, Parameter):
                raise TypeError(f"{cls}: parameters must be Parameters, got {type(p).__name__}")
        if order is not None:
            by_id = {id(p): e for e in entries for p in (e[0],)}
            missing = [p for p in order if id(p) not in by_id]
            if missing or len(order) != len(entries):
                raise ValueError(f"{cls}: order_params must list exactly the grouped parameters")
            entries = [by_id[id(p)] for p in order]
        names = [p.name for p, _, _ in entries]
        if None not in names and len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"{cls}: parameter names must be unique, {dup} appear twice")
        self.__dict__["parameters"] = ParameterTuple([p for p, _, _ in entries])
        self.__dict__["_lr_index"] = tuple(i for _, i, _ in entries)
        self.__dict__["_weight_decays"] = tuple(wd for _, _, wd in entries)
        # float32: the schedules compute with it directly (exact up to 2**24 steps).
        self.global_step = Parameter(np.array(0, np.float32), name="global_step",
                                     requires_grad=False)
        lrs = [self._lr_source(cls, i, lr) for i, lr in enumerate(sources)]
        self.__dict__["_lr_sources"] = tuple(lrs)

    def _lr_source(self, cls, i, lr):
        """("fixed", scalar Parameter), ("table", 1-D Parameter) or ("schedule", Cell)."""
        from pijit.nn.learning_rate_schedule import LearningRateSchedule
        name = "learning_rate" if i == 0 else f"learning_rate.group{i}"
        if isinstance(lr, LearningRateSchedule):
            if i == 0:
                self.learning_rate = lr
            else:
                setattr(self, f"_group_lr{i}", lr)
            return "schedule", lr
        if isinstance(lr, (list, tuple)) or (isinstance(lr, Tensor) and lr.ndim == 1 and lr.size > 1):
            table = np.asarray(lr.asnumpy() if isinstance(lr, Tensor) else lr, np.float64)
            if table.ndim != 1 or table.size == 0 or not np.all(np.isfinite(table)) or \
                    np.any(table < 0):
                raise ValueError(f"{cls}: a learning-rate list must be a non-empty list of "
                                 f"non-negative floats, got {lr!r}")
            kind, value = "table", table.astype(np.float32)
        else:
            if isinstance(lr, Tensor):
                if lr.size != 1:
                    raise ValueError(f"{cls}: a learning_rate Tensor must have one element, or "
                                     f"be 1-D with one rate per step; got shape {tuple(lr.shape)}")
                lr = float(lr.asnumpy().reshape(()))
            kind, value = "fixed", np.array(_check_number(cls, "learning_rate", lr, low=0.0),
                                            np.float32)
        param = Parameter(value, name=name, requires_grad=False)
        if i == 0:
            self.learning_rate = param
        else:
            setattr(self, f"_group_lr{i}", param)
        return kind, param

    def get_lr(self):
        """The learning rate of the current step (of the first group's source, with groups):
        a scalar Tensor."""
        return self._rates()[0]

    def _rates(self):
        """The rate of each learning-rate source at the current step."""
        step = self.global_step
        rates = []
        for kind, src in self._lr_sources:
            if kind == "fixed":
                rates.append(src)
            elif kind == "table":  # the entry at min(step, n - 1), as a masked sum
                n = src.shape[0]
                at = ops.equal(ops.arange(n, dtype=float32), ops.minimum(step, float(n - 1)))
                rates.append(ops.sum(src * at))
            else:
                rates.append(src(step))
        return rates

    def _lrs(self):
        """Each parameter's learning rate for this step; advances the step counter (read
        everything that depends on it first)."""
        rates = self._rates()
        lrs = tuple([rates[i] for i in self._lr_index])
        ops.assign(self.global_step, self.global_step + 1)
        return lrs

    def _state(self, prefix, init="zeros"):
        """One new Parameter per parameter, shaped like it, registered on this Cell as
        "<prefix>.<parameter name>" (the same name as its ParameterTuple's clone)."""
        state = self.parameters.clone(prefix, init)
        params = self._registry()[0]
        for i, (orig, p) in enumerate(zip(self.parameters, state)):
            p.requires_grad = False
            if orig.name is None:
                p.name = f"{prefix}.{i}"
            params[p.name] = p
        self.__dict__[prefix] = state
        return state

    def _scalar_state(self, name, value):
        p = Parameter(np.array(value, np.float32), name=name, requires_grad=False)
        setattr(self, name, p)
        return p

    def _gradients(self, gradients):
        gradients = tuple(gradients)
        if len(gradients) != len(self.parameters):
            raise ValueError(f"{type(self).__name__}: {len(gradients)} gradients for "
                             f"{len(self.parameters)} parameters")
        for g, p in zip(gradients, self.parameters):
            if not isinstance(g, Tensor):
                raise TypeError(f"{type(self).__name__}: gradients must be Tensors, got "
                                f"{type(g).__name__}")
            if tuple(g.shape) != tuple(p.shape):
                raise ValueError(f"{type(self).__name__}: the gradient of {p.name!r} has shape "
                                 f"{tuple(g.shape)}, the parameter {tuple(p.shape)}")
        return gradients

    def decay_weight(self, gradients):
        decays = self._weight_decays
        if not any([wd != 0.0 for wd in decays]):
            return gradients
        return tuple([g + p * wd if wd != 0.0 else g
                      for g, p, wd in zip(gradients, self.parameters, decays)])

    def scale_grad(self, gradients):
        if self.loss_scale == 1.0:
            return gradients
        inv = 1.0 / self.loss_scale
        return tuple([g * inv for g in gradients])

    def extend_repr(self):
        lr = self.learning_rate
        lr = float(lr.asnumpy()) if isinstance(lr, Tensor) and lr.size == 1 else type(lr).__name__
        return f"learning_rate={lr}, weight_decay={self.weight_decay}"


def _momentum_step(p, g, lr, buffer, new_buffer, momentum, nesterov):
    """Stores a parameter's new momentum buffer and steps the parameter by it (by Nesterov's
    g + momentum * buffer when asked)."""
    ops.assign(buffer, new_buffer)
    step = g + new_buffer * momentum if nesterov else new_buffer
    ops.assign(p, p - lr * step)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
    weight decay (MindSpore's nn.SGD):

        g = grad + weight_decay * p
        accum = g                                   (first step)
        accum = momentum * accum + (1 - dampening) * g   (later steps)
        p -= lr * (g + momentum * accum)  if nesterov  else  lr * accum

    With momentum 0 there is no buffer and p -= lr * g."""

    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = _check_number("SGD", "momentum", momentum, low=0.0)
        self.dampening = _check_number("SGD", "dampening", dampening, low=0.0)
        check_bool("SGD: nesterov", nesterov)
        if nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening = 0")
        self.nesterov = nesterov
        if self.momentum > 0.0:
            self._state("accum")
            # 1 until the first step: the first step's buffer is the gradient itself.
            self._scalar_state("stat", 1.0)

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        lrs = self._lrs()
        if self.momentum == 0.0:
            for p, g, lr in zip(self.parameters, gradients, lrs):
                ops.assign(p, p - lr * g)
            return True
        mom, damp = self.momentum, 1.0 - self.dampening
        stat = self.stat
        for p, g, acc, lr in zip(self.parameters, gradients, self.accum, lrs):
            new_acc = stat * g + (1.0 - stat) * (acc * mom + g * damp)
            _momentum_step(p, g, lr, acc, new_acc, mom, self.nesterov)
        ops.assign(stat, stat * 0.0)
        return True

    def extend_repr(self):
        return super().extend_repr() + _repr_fields(self, "momentum", "dampening", "nesterov")


class Momentum(Optimizer):
    """Momentum (MindSpore's nn.Momentum, the ApplyMomentum update):

        g = grad + weight_decay * p
        moment = momentum * moment + g
        p -= lr * (g + momentum * moment)  if use_nesterov  else  lr * moment"""

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
                 use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = _check_number("Momentum", "momentum", momentum, low=0.0)
        check_bool("Momentum: use_nesterov", use_nesterov)
        self.use_nesterov = use_nesterov
        self._state("moments")

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        mom = self.momentum
        for p, g, m, lr in zip(self.parameters, gradients, self.moments, self._lrs()):
            _momentum_step(p, g, lr, m, m * mom + g, mom, self.use_nesterov)
        return True

    def extend_repr(self):
        return super().extend_repr() + _repr_fields(self, "momentum", "use_nesterov")


class Adam(Optimizer):
    """Adam (MindSpore's nn.Adam, the Adam kernel with bias correction folded into the step):

        g = grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        beta1_power *= beta1; beta2_power *= beta2
        p -= lr * sqrt(1 - beta2_power) / (1 - beta1_power) * m / (sqrt(v) + eps)

    use_nesterov replaces m in the step by beta1 * m + (1 - beta1) * g."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.beta1 = _check_number("Adam", "beta1", beta1, low=0.0, low_open=True, high=1.0,
                                   high_open=True)
        self.beta2 = _check_number("Adam", "beta2", beta2, low=0.0, low_open=True, high=1.0,
                                   high_open=True)
        self.eps = _check_number("Adam", "eps", eps, low=0.0, low_open=True)
        check_bool("Adam: use_nesterov", use_nesterov)
        self.use_nesterov = use_nesterov
        self._state("moment1")
        self._state("moment2")
        self._scalar_state("beta1_power", 1.0)
        self._scalar_state("beta2_power", 1.0)

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        b1, b2, eps = self.beta1, self.beta2, self.eps
        lrs = self._lrs()
        b1p = self.beta1_power * b1
        b2p = self.beta2_power * b2
        ops.assign(self.beta1_power, b1p)
        ops.assign(self.beta2_power, b2p)
        correction = ops.sqrt(1.0 - b2p) / (1.0 - b1p)
        for p, g, m, v, lr in zip(self.parameters, gradients, self.moment1, self.moment2, lrs):
            lr_t = lr * correction
            new_m = m * b1 + g * (1.0 - b1)
            new_v = v * b2 + g * g * (1.0 - b2)
            ops.assign(m, new_m)
            ops.assign(v, new_v)
            m_hat = new_m * b1 + g * (1.0 - b1) if self.use_nesterov else new_m
            ops.assign(p, p - lr_t * m_hat / (ops.sqrt(new_v) + eps))
        return True

    def extend_repr(self):
        return super().extend_repr() + _repr_fields(self, "beta1", "beta2", "eps")
