"""More of MindSpore's optimizers on pijit's Optimizer (parameter groups, learning-rate
Parameters and schedules, step counter): AdamWeightDecay, Adagrad, RMSProp, AdaMax, Adadelta
and ProximalAdagrad, each the update of the ops primitive of its kind (ApplyAdagrad,
ApplyRMSProp, ...). Weight decay is added to the gradient first (Optimizer.decay_weight),
except in AdamWeightDecay, which decays the weights in its update."""
from pijit import ops
from pijit._arg_checks import check_bool
from pijit.common.initializer import Constant
from pijit.nn.optim import Adam, Optimizer, _check_number

__all__ = ["AdamWeightDecay", "Adagrad", "RMSProp", "AdaMax", "Adadelta", "ProximalAdagrad",
           "FTRL", "LazyAdam"]


def _beta(cls, name, value):
    return _check_number(cls, name, value, low=0.0, low_open=True, high=1.0, high_open=True)


class AdamWeightDecay(Optimizer):
    """Adam without bias correction and with decoupled weight decay:

        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        p -= lr * (m / (sqrt(v) + eps) + weight_decay * p)"""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6,
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay)
        self.beta1 = _beta("AdamWeightDecay", "beta1", beta1)
        self.beta2 = _beta("AdamWeightDecay", "beta2", beta2)
        self.eps = _check_number("AdamWeightDecay", "eps", eps, low=0.0, low_open=True)
        self._state("adam_m")
        self._state("adam_v")

    def _update(self, gradients):
        gradients = self.scale_grad(self._gradients(gradients))
        b1, b2, eps = self.beta1, self.beta2, self.eps
        for p, g, m, v, lr, wd in zip(self.parameters, gradients, self.adam_m, self.adam_v,
                                      self._lrs(), self._weight_decays):
            new_m = m * b1 + g * (1.0 - b1)
            new_v = v * b2 + g * g * (1.0 - b2)
            ops.assign(m, new_m)
            ops.assign(v, new_v)
            update = new_m / (ops.sqrt(new_v) + eps)
            if wd != 0.0:
                update = update + p * wd
            ops.assign(p, p - lr * update)
        return True


class Adagrad(Optimizer):
    """accum += g * g (update_slots); p -= lr * g / sqrt(accum). The accumulators start at
    `accum`."""

    def __init__(self, params, accum=0.1, learning_rate=0.001, update_slots=True,
                 loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.initial_accum = _check_number("Adagrad", "accum", accum, low=0.0)
        check_bool("Adagrad: update_slots", update_slots)
        self.update_slots = update_slots
        self._state("accum", Constant(self.initial_accum))
        self._apply = ops.ApplyAdagrad(update_slots=update_slots)

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        for p, g, acc, lr in zip(self.parameters, gradients, self.accum, self._lrs()):
            self._apply(p, acc, lr, g)
        return True


class RMSProp(Optimizer):
    """RMSProp: mean_square = decay * mean_square + (1 - decay) * g * g (centered: minus the
    square of the running mean gradient in the denominator); moment = momentum * moment +
    lr * g / sqrt(mean_square + epsilon); p -= moment. mean_square starts at ones."""

    def __init__(self, params, learning_rate=0.1, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.decay = _check_number("RMSProp", "decay", decay, low=0.0)
        self.momentum = _check_number("RMSProp", "momentum", momentum, low=0.0)
        self.epsilon = _check_number("RMSProp", "epsilon", epsilon, low=0.0, low_open=True)
        check_bool("RMSProp: centered", centered)
        self.centered = centered
        if centered:
            self._state("mean_grad")
        self._state("mean_square", "ones")
        self._state("moment")
        self._apply = ops.ApplyCenteredRMSProp() if centered else ops.ApplyRMSProp()

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        lrs = self._lrs()
        if self.centered:
            for p, g, mg, ms, mom, lr in zip(self.parameters, gradients, self.mean_grad,
                                             self.mean_square, self.moment, lrs):
                self._apply(p, mg, ms, mom, g, lr, self.decay, self.momentum, self.epsilon)
            return True
        for p, g, ms, mom, lr in zip(self.parameters, gradients, self.mean_square, self.moment,
                                     lrs):
            self._apply(p, ms, mom, lr, g, self.decay, self.momentum, self.epsilon)
        return True


class AdaMax(Optimizer):
    """AdaMax: m = beta1 * m + (1 - beta1) * g; v = max(beta2 * v, |g|);
    p -= lr / (1 - beta1^t) * m / (v + eps)."""

    def __init__(self, params, learning_rate=0.001, beta1=0.9, beta2=0.999, eps=1e-08,
                 weight_decay=0.0, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.beta1 = _beta("AdaMax", "beta1", beta1)
        self.beta2 = _beta("AdaMax", "beta2", beta2)
        self.eps = _check_number("AdaMax", "eps", eps, low=0.0, low_open=True)
        self._state("moment1")
        self._state("moment2")
        self._scalar_state("beta1_power", 1.0)
        self._apply = ops.ApplyAdaMax()

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        b1p = self.beta1_power * self.beta1
        ops.assign(self.beta1_power, b1p)
        for p, g, m, v, lr in zip(self.parameters, gradients, self.moment1, self.moment2,
                                  self._lrs()):
            self._apply(p, m, v, b1p, lr, self.beta1, self.beta2, self.eps, g)
        return True


class Adadelta(Optimizer):
    """Adadelta: accum = rho * accum + (1 - rho) * g * g; update = sqrt(accum_update + eps) /
    sqrt(accum + eps) * g; accum_update = rho * accum_update + (1 - rho) * update^2;
    p -= lr * update."""

    def __init__(self, params, learning_rate=1.0, rho=0.9, epsilon=1e-6, loss_scale=1.0,
                 weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.rho = _check_number("Adadelta", "rho", rho, low=0.0, high=1.0)
        self.epsilon = _check_number("Adadelta", "epsilon", epsilon, low=0.0, low_open=True)
        self._state("accum")
        self._state("accum_update")
        self._apply = ops.ApplyAdadelta()

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        for p, g, acc, upd, lr in zip(self.parameters, gradients, self.accum, self.accum_update,
                                      self._lrs()):
            self._apply(p, acc, upd, lr, self.rho, self.epsilon, g)
        return True


class ProximalAdagrad(Optimizer):
    """Adagrad followed by the proximal step of l1 and l2 regularisation:
    accum += g * g; v = p - lr * g / sqrt(accum);
    p = sign(v) * max(|v| - lr * l1, 0) / (1 + lr * l2)."""

    def __init__(self, params, accum=0.1, learning_rate=0.001, l1=0.0, l2=0.0,
                 use_locking=False, loss_scale=1.0, weight_decay=0.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.initial_accum = _check_number("ProximalAdagrad", "accum", accum, low=0.0)
        self.l1 = _check_number("ProximalAdagrad", "l1", l1, low=0.0)
        self.l2 = _check_number("ProximalAdagrad", "l2", l2, low=0.0)
        self._state("accum", Constant(self.initial_accum))
        self._apply = ops.ApplyProximalAdagrad()

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        for p, g, acc, lr in zip(self.parameters, gradients, self.accum, self._lrs()):
            self._apply(p, acc, lr, self.l1, self.l2, g)
        return True


class FTRL(Optimizer):
    """Follow-the-regularized-leader (the ApplyFtrl update), with accumulators starting at
    initial_accum and linear terms at zero. The learning rate is one fixed number."""

    def __init__(self, params, initial_accum=0.1, learning_rate=0.001, lr_power=-0.5, l1=0.0,
                 l2=0.0, use_locking=False, loss_scale=1.0, weight_decay=0.0):
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool):
            raise TypeError("FTRL: learning_rate must be a number (schedules are not "
                            "supported, as in MindSpore)")
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.initial_accum = _check_number("FTRL", "initial_accum", initial_accum, low=0.0)
        self.lr_power = _check_number("FTRL", "lr_power", lr_power, high=0.0)
        self.l1 = _check_number("FTRL", "l1", l1, low=0.0)
        self.l2 = _check_number("FTRL", "l2", l2, low=0.0)
        self._state("moments", Constant(self.initial_accum))
        self._state("linear")
        self._apply = ops.ApplyFtrl()

    def _update(self, gradients):
        gradients = self.scale_grad(self.decay_weight(self._gradients(gradients)))
        for p, g, acc, lin, lr in zip(self.parameters, gradients, self.moments, self.linear,
                                      self._lrs()):
            self._apply(p, acc, lin, g, lr, self.l1, self.l2, self.lr_power)
        return True


class LazyAdam(Adam):
    """Adam, as nn.Adam computes it: with dense gradients, which are all pijit has, the lazy
    update (only the rows a sparse gradient touches) is the full one."""
