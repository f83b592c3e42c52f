"""Optimizers (MindSpore's mindspore.nn.optim): SGD, Momentum and Adam.

`optimizer(grads)` takes one gradient per parameter (in the order of `optimizer.parameters`),
updates the parameters in place with ops.assign, and returns True. In-place updates are seen by
every later call, eager or compiled (captured graphs read parameters on each call).

Per-parameter state (momentum buffers, Adam's moments, the step counters) are Parameters of
the optimizer Cell, named "<state>.<parameter name>", so that they show up in
`optimizer.get_parameters()` as in MindSpore. Weight decay adds `weight_decay * param` to the
gradient before the update (MindSpore's Optimizer.decay_weight)."""
import numbers

import numpy as np

from pijit import ops
from pijit._tensor import Parameter, ParameterTuple, Tensor
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


class Optimizer(Cell):
    """Base class: holds the parameters (a ParameterTuple), the learning rate (a scalar
    Parameter named "learning_rate", so set_data changes it for later steps) and the weight
    decay. Subclasses define `_update(gradients)`.

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
        params = list(parameters)
        if params and isinstance(params[0], dict):
            raise NotImplementedError(f"{cls}: parameter groups (a list of dicts) are not "
                                      f"supported; pass the Parameters")
        if not params:
            raise ValueError(f"{cls}: the parameter list is empty")
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(f"{cls}: parameters must be Parameters, got {type(p).__name__}")
        names = [p.name for p in params]
        if None not in names and len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"{cls}: parameter names must be unique, {dup} appear twice")
        self.__dict__["parameters"] = ParameterTuple(params)
        if isinstance(learning_rate, Tensor):
            if learning_rate.size != 1:
                raise ValueError(f"{cls}: a learning_rate Tensor must be a scalar; dynamic "
                                 f"learning rates (one per step) are not supported")
            learning_rate = float(learning_rate.asnumpy().reshape(()))
        lr = _check_number(cls, "learning_rate", learning_rate, low=0.0)
        self.learning_rate = Parameter(np.array(lr, np.float32), name="learning_rate",
                                       requires_grad=False)
        self.weight_decay = _check_number(cls, "weight_decay", weight_decay, low=0.0)
        self.loss_scale = _check_number(cls, "loss_scale", loss_scale, low=0.0, low_open=True)

    def get_lr(self):
        """The learning rate, a scalar Parameter."""
        return self.learning_rate

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
        if self.weight_decay == 0.0:
            return gradients
        wd = self.weight_decay
        return tuple([g + p * wd for g, p in zip(gradients, self.parameters)])

    def scale_grad(self, gradients):
        if self.loss_scale == 1.0:
            return gradients
        inv = 1.0 / self.loss_scale
        return tuple([g * inv for g in gradients])

    def extend_repr(self):
        return f"learning_rate={float(self.learning_rate.asnumpy())}, " \
               f"weight_decay={self.weight_decay}"


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
        if not isinstance(nesterov, bool):
            raise TypeError(f"SGD: nesterov must be a bool, got {type(nesterov).__name__}")
        if nesterov and (self.momentum <= 0.0 or self.dampening != 0.0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening = 0")
        self.nesterov = nesterov
        if self.momentum > 0.0:
            self._state("accum")
            # 1 until the first step: the first step's buffer is the gradient itself.
            self._scalar_state("stat", 1.0)

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        lr = self.learning_rate
        if self.momentum == 0.0:
            for p, g in zip(self.parameters, gradients):
                ops.assign(p, p - lr * g)
            return True
        mom, damp = self.momentum, 1.0 - self.dampening
        stat = self.stat
        for p, g, acc in zip(self.parameters, gradients, self.accum):
            new_acc = stat * g + (1.0 - stat) * (acc * mom + g * damp)
            ops.assign(acc, new_acc)
            step = g + new_acc * mom if self.nesterov else new_acc
            ops.assign(p, p - lr * step)
        ops.assign(stat, stat * 0.0)
        return True

    def extend_repr(self):
        return super().extend_repr() + f", momentum={self.momentum}, " \
               f"dampening={self.dampening}, nesterov={self.nesterov}"


class Momentum(Optimizer):
    """Momentum (MindSpore's nn.Momentum, the ApplyMomentum update):

        g = grad + weight_decay * p
        moment = momentum * moment + g
        p -= lr * (g + momentum * moment)  if use_nesterov  else  lr * moment"""

    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0,
                 use_nesterov=False):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = _check_number("Momentum", "momentum", momentum, low=0.0)
        if not isinstance(use_nesterov, bool):
            raise TypeError(f"Momentum: use_nesterov must be a bool, got "
                            f"{type(use_nesterov).__name__}")
        self.use_nesterov = use_nesterov
        self._state("moments")

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        lr, mom = self.learning_rate, self.momentum
        for p, g, m in zip(self.parameters, gradients, self.moments):
            new_m = m * mom + g
            ops.assign(m, new_m)
            step = g + new_m * mom if self.use_nesterov else new_m
            ops.assign(p, p - lr * step)
        return True

    def extend_repr(self):
        return super().extend_repr() + f", momentum={self.momentum}, " \
               f"use_nesterov={self.use_nesterov}"


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
        if not isinstance(use_nesterov, bool):
            raise TypeError(f"Adam: use_nesterov must be a bool, got {type(use_nesterov).__name__}")
        self.use_nesterov = use_nesterov
        self._state("moment1")
        self._state("moment2")
        self._scalar_state("beta1_power", 1.0)
        self._scalar_state("beta2_power", 1.0)

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        b1, b2, eps = self.beta1, self.beta2, self.eps
        b1p = self.beta1_power * b1
        b2p = self.beta2_power * b2
        ops.assign(self.beta1_power, b1p)
        ops.assign(self.beta2_power, b2p)
        lr_t = self.learning_rate * ops.sqrt(1.0 - b2p) / (1.0 - b1p)
        for p, g, m, v in zip(self.parameters, gradients, self.moment1, self.moment2):
            new_m = m * b1 + g * (1.0 - b1)
            new_v = v * b2 + g * g * (1.0 - b2)
            ops.assign(m, new_m)
            ops.assign(v, new_v)
            m_hat = new_m * b1 + g * (1.0 - b1) if self.use_nesterov else new_m
            ops.assign(p, p - lr_t * m_hat / (ops.sqrt(new_v) + eps))
        return True

    def extend_repr(self):
        return super().extend_repr() + f", beta1={self.beta1}, beta2={self.beta2}, eps={self.eps}"
