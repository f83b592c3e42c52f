"""More optimizers of mindspore.nn (ASGD, Rprop, Lamb, LARS, AdamOffload), on pijit's Optimizer
(parameter groups, learning-rate Parameters and schedules, the step counter). Each update is
made of pijit ops and written with ops.assign, so a jitted training step captures it with the
forward and backward as one graph."""
import numpy as np

from pijit import ops
from pijit._arg_checks import check_bool
from pijit._tensor import Parameter
from pijit.nn.cell import Cell
from pijit.nn.optim import Adam, Optimizer, _check_number, _repr_fields

__all__ = ["ASGD", "Rprop", "Lamb", "LARS", "AdamOffload"]


def _per_parameter_scalars(optimizer, prefix, value):
    """One float32 scalar Parameter per parameter, named "<prefix><parameter name>" as
    MindSpore names them, registered on the optimizer."""
    registry = optimizer._registry()[0]
    scalars = []
    for i, p in enumerate(optimizer.parameters):
        name = f"{prefix}{p.name if p.name is not None else i}"
        scalar = Parameter(np.array(value, np.float32), name=name, requires_grad=False)
        registry[name] = scalar
        scalars.append(scalar)
    return tuple(scalars)


def _this_step(optimizer):
    """The number of the step being taken (1 on the first): read before _lrs() advances the
    counter."""
    return optimizer.global_step + 1.0


class ASGD(Optimizer):
    """Averaged stochastic gradient descent:

        w = w * (1 - lambd * eta) - eta * g          (eta is the learning rate on step 1)
        ax += (w - ax) * mu                          (ax = w while mu is 1)
        eta = lr / (1 + lambd * lr * t) ** alpha;  mu = 1 / max(1, t - t0)

    with t the step number: from step t0 + 2 on, ax is the mean of the weights since then. States: "eta_<name>", "mu_<name>" and the average "ax_.<name>"."""

    def __init__(self, params, learning_rate=0.1, lambd=1e-4, alpha=0.75, t0=1e6,
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.lambd = _check_number("ASGD", "lambd", lambd)
        self.alpha = _check_number("ASGD", "alpha", alpha)
        self.t0 = _check_number("ASGD", "t0", t0)
        self.__dict__["mu"] = _per_parameter_scalars(self, "mu_", 1.0)
        self.__dict__["eta"] = _per_parameter_scalars(self, "eta_", 0.0)
        self.__dict__["ax"] = self._state("ax_")

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        step = _this_step(self)
        lrs = self._lrs()
        lambd = self.lambd
        for p, g, mu, eta, ax, lr in zip(self.parameters, gradients, self.mu, self.eta, self.ax,
                                         lrs):
            eta_now = ops.where(step == 1.0, lr, eta)
            new_p = p * (1.0 - lambd * eta_now) - eta_now * g
            ops.assign(p, new_p)
            ops.assign(ax, ops.where(mu == 1.0, new_p, ax + (new_p - ax) * mu))
            ops.assign(eta, lr / ops.pow(1.0 + lambd * lr * step, self.alpha))
            ops.assign(mu, 1.0 / ops.maximum(step - self.t0, 1.0))
        return True

    def extend_repr(self):
        return super().extend_repr() + _repr_fields(self, "lambd", "alpha", "t0")


def _pair(cls, name, value):
    if not isinstance(value, tuple):
        raise TypeError(f"{cls}: {name} must be a tuple, got {type(value).__name__}")
    if len(value) != 2:
        raise ValueError(f"{cls}: {name} must be a tuple of 2 floats, got {len(value)} items")
    return value


class Rprop(Optimizer):
    """Resilient backpropagation: each element's step size grows by etaplus while its
    gradient keeps its sign and shrinks by etaminus when the sign flips (then that element
    skips the step and forgets its gradient), clipped to step_sizes; w -= sign(g) * step.
    Step sizes start at the learning rate. States: "prev.<name>" and "step_size.<name>"."""

    def __init__(self, params, learning_rate=0.1, etas=(0.5, 1.2), step_sizes=(1e-6, 50.),
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        etaminus, etaplus = _pair("Rprop", "etas", etas)
        low, high = _pair("Rprop", "step_sizes", step_sizes)
        self.etaminus = _check_number("Rprop", "etaminus", etaminus, low=0.0, low_open=True,
                                      high=1.0, high_open=True)
        self.etaplus = _check_number("Rprop", "etaplus", etaplus, low=1.0, low_open=True)
        self.step_size_min = _check_number("Rprop", "min_step_sizes", low)
        self.step_size_max = _check_number("Rprop", "max_step_sizes", high)
        if self.step_size_min > self.step_size_max:
            raise ValueError(f"Rprop: the maximal step size must not be less than the minimal "
                             f"one, got {self.step_size_min} > {self.step_size_max}")
        self._state("prev")
        self._state("step_size")

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        first = _this_step(self) == 1.0
        lrs = self._lrs()
        for p, g, prev, size_param, lr in zip(self.parameters, gradients, self.prev,
                                              self.step_size, lrs):
            size = ops.where(first, ops.ones_like(size_param) * lr, size_param)
            agreement = g * prev
            ones = ops.ones_like(g)
            factor = ops.where(agreement > 0, ones * self.etaplus,
                               ops.where(agreement < 0, ones * self.etaminus, ones))
            size = ops.minimum(ops.maximum(size * factor, self.step_size_min),
                               self.step_size_max)
            g = ops.where(agreement < 0, 0.0, g)
            ops.assign(p, p - ops.sign(g) * size)
            ops.assign(prev, g)
            ops.assign(size_param, size)
        return True

    def extend_repr(self):
        return super().extend_repr() + f", etas=({self.etaminus}, {self.etaplus}), " \
               f"step_sizes=({self.step_size_min}, {self.step_size_max})"


class Lamb(Optimizer):
    """Layer-wise adaptive moments (LAMB): Adam's bias-corrected direction plus decoupled
    weight decay, scaled per parameter by the trust ratio |w| / |update| (1 when either norm
    is zero):

        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        update = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * w
        w -= lr * trust_ratio * update

    States: "lamb_m.<name>" and "lamb_v.<name>"."""

    def __init__(self, params, learning_rate, beta1=0.9, beta2=0.999, eps=1e-6,
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.beta1 = _check_number("Lamb", "beta1", beta1, low=0.0, low_open=True, high=1.0,
                                   high_open=True)
        self.beta2 = _check_number("Lamb", "beta2", beta2, low=0.0, low_open=True, high=1.0,
                                   high_open=True)
        self.eps = _check_number("Lamb", "eps", eps, low=0.0, low_open=True)
        self._state("lamb_m")
        self._state("lamb_v")

    def _update(self, gradients):
        gradients = self._gradients(gradients)
        step = _this_step(self)
        lrs = self._lrs()
        b1, b2, eps = self.beta1, self.beta2, self.eps
        correction1 = 1.0 - ops.pow(b1, step)
        correction2 = 1.0 - ops.pow(b2, step)
        for p, g, m, v, lr, wd in zip(self.parameters, gradients, self.lamb_m, self.lamb_v, lrs,
                                      self._weight_decays):
            new_m = m * b1 + g * (1.0 - b1)
            new_v = v * b2 + g * g * (1.0 - b2)
            ops.assign(m, new_m)
            ops.assign(v, new_v)
            update = (new_m / correction1) / (ops.sqrt(new_v / correction2) + eps)
            if wd != 0.0:
                update = update + p * wd
            w_norm = ops.sqrt(ops.sum(p * p))
            u_norm = ops.sqrt(ops.sum(update * update))
            both = ops.logical_and(w_norm > 0, u_norm > 0)
            ratio = ops.where(both, w_norm / ops.where(both, u_norm, 1.0), 1.0)
            ops.assign(p, p - lr * ratio * update)
        return True

    def extend_repr(self):
        return super().extend_repr() + _repr_fields(self, "beta1", "beta2", "eps")


def _default_lars_filter(param):
    return "LayerNorm" not in param.name and "bias" not in param.name


class LARS(Optimizer):
    """Layer-wise adaptive rate scaling around another optimizer: each gradient (of the
    parameters `lars_filter` accepts) becomes, by ops.LARSUpdate,

        g = (g + weight_decay * w) * coefficient * |w| / (|g| + weight_decay * |w| + epsilon)

    (with use_clip, the ratio over the current learning rate, at most 1), and `optimizer`
    takes the step. LARS takes over the wrapped optimizer's weight decay and loss scale, as
    MindSpore's does: the wrapped optimizer no longer applies them itself."""

    def __init__(self, optimizer, epsilon=1e-05, coefficient=0.001, use_clip=False,
                 lars_filter=_default_lars_filter):
        Cell.__init__(self, auto_prefix=False)
        if not isinstance(optimizer, Optimizer) or isinstance(optimizer, LARS):
            raise TypeError(f"LARS: optimizer must be an Optimizer, got "
                            f"{type(optimizer).__name__}")
        epsilon = _check_number("LARS", "epsilon", epsilon)
        coefficient = _check_number("LARS", "coefficient", coefficient)
        check_bool("LARS: use_clip", use_clip)
        if not callable(lars_filter):
            raise TypeError(f"LARS: lars_filter must be callable, got "
                            f"{type(lars_filter).__name__}")
        self.opt = optimizer
        self.use_clip = use_clip
        self.epsilon, self.coefficient = epsilon, coefficient
        self._lars = ops.LARSUpdate(epsilon, coefficient, use_clip)
        self.__dict__["parameters"] = optimizer.parameters
        self.__dict__["_lars_flags"] = tuple(bool(lars_filter(p)) for p in optimizer.parameters)
        scale = optimizer.loss_scale
        self.loss_scale = scale
        self.__dict__["_weight_decays"] = tuple(wd / scale for wd in optimizer._weight_decays)
        self.weight_decay = optimizer.weight_decay / scale
        optimizer.__dict__["_weight_decays"] = tuple(0.0 for _ in optimizer._weight_decays)
        optimizer.weight_decay = 0.0
        optimizer.loss_scale = 1.0

    @property
    def global_step(self):
        return self.opt.global_step

    @property
    def learning_rate(self):
        return self.opt.learning_rate

    def get_lr(self):
        return self.opt.get_lr()

    def _update(self, gradients):
        gradients = self.scale_grad(self.opt._gradients(gradients))
        if self.use_clip:
            rates = self.opt._rates()
            lrs = [rates[i] for i in self.opt._lr_index]
        else:
            lrs = [0.0] * len(gradients)
        scaled = []
        for p, g, wd, lr, flag in zip(self.parameters, gradients, self._weight_decays, lrs,
                                      self._lars_flags):
            if flag:
                g = self._lars(p, g, ops.sum(p * p), ops.sum(g * g), wd, lr)
            scaled.append(g)
        return self.opt(tuple(scaled))

    def extend_repr(self):
        return f"epsilon={self.epsilon}, coefficient={self.coefficient}, " \
               f"use_clip={self.use_clip}"


class AdamOffload(Adam):
    """Adam whose update MindSpore runs on the host CPU to save device memory. pijit runs on
    the CPU, so this is the Adam update itself (nn.Adam's rule, states and arguments)."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 use_locking=False, use_nesterov=False, weight_decay=0.0, loss_scale=1.0):
        # Checked here too, so that errors name AdamOffload rather than Adam.
        for name, beta in (("beta1", beta1), ("beta2", beta2)):
            _check_number("AdamOffload", name, beta, low=0.0, low_open=True, high=1.0,
                          high_open=True)
        _check_number("AdamOffload", "eps", eps, low=0.0, low_open=True)
        check_bool("AdamOffload: use_nesterov", use_nesterov)
        super().__init__(params, learning_rate, beta1, beta2, eps, use_locking, use_nesterov,
                         weight_decay, loss_scale)
