"""mint.optim: AdamW with torch's signature, on pijit's Optimizer (parameter groups,
learning-rate Parameters and schedules, a step counter), so its update is captured like
any optimizer's."""
from pijit import ops
from pijit.nn.optim import Optimizer


def _beta(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(f"AdamW: each of betas must be a number in [0, 1), got {value!r}")
    return float(value)


class AdamW(Optimizer):
    """Adam with decoupled weight decay: each step, for gradient g (negated with maximize),

        p *= 1 - lr * weight_decay
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1^t);  v_hat = v / (1 - beta2^t)   (v_hat: its running maximum
                                                                  with amsgrad)
        p -= lr * m_hat / (sqrt(v_hat) + eps)

    Called with the gradients, as MindSpore's optimizers are: `optimizer(grads)`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        super().__init__(lr, params, weight_decay)
        betas = tuple(betas)
        if len(betas) != 2:
            raise ValueError(f"AdamW: betas must be a pair, got {betas!r}")
        self.beta1, self.beta2 = _beta(betas[0]), _beta(betas[1])
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps < 0:
            raise ValueError(f"AdamW: eps must be a non-negative number, got {eps!r}")
        for name, flag in (("amsgrad", amsgrad), ("maximize", maximize)):
            if not isinstance(flag, bool):
                raise TypeError(f"AdamW: {name} must be a bool, got {type(flag).__name__}")
        self.eps, self.amsgrad, self.maximize = float(eps), amsgrad, maximize
        self._state("exp_avg")
        self._state("exp_avg_sq")
        if amsgrad:
            self._state("max_exp_avg_sq")
        self._scalar_state("beta1_power", 1.0)
        self._scalar_state("beta2_power", 1.0)

    def _update(self, gradients):
        gradients = self._gradients(gradients)
        b1, b2 = self.beta1, self.beta2
        lrs = self._lrs()
        b1p = self.beta1_power * b1
        b2p = self.beta2_power * b2
        ops.assign(self.beta1_power, b1p)
        ops.assign(self.beta2_power, b2p)
        max_sq = self.max_exp_avg_sq if self.amsgrad else (None,) * len(gradients)
        for p, g, m, v, top, lr, wd in zip(self.parameters, gradients, self.exp_avg,
                                           self.exp_avg_sq, max_sq, lrs, self._weight_decays):
            if self.maximize:
                g = -g
            decayed = p * (1.0 - lr * wd) if wd != 0.0 else p
            new_m = m * b1 + g * (1.0 - b1)
            new_v = v * b2 + g * g * (1.0 - b2)
            ops.assign(m, new_m)
            ops.assign(v, new_v)
            v_hat = new_v / (1.0 - b2p)
            if self.amsgrad:
                v_hat = ops.maximum(top, v_hat)
                ops.assign(top, v_hat)
            step = lr * (new_m / (1.0 - b1p)) / (ops.sqrt(v_hat) + self.eps)
            ops.assign(p, decayed - step)
        return True

    def extend_repr(self):
        return super().extend_repr() + f", betas=({self.beta1}, {self.beta2}), eps={self.eps}"
