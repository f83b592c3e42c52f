"""MindSpore's optimizer primitives (ApplyMomentum, ApplyAdagrad, ApplyRMSProp, Adam,
AdamWeightDecay, ...): each updates its Parameters in place with ops.assign, by the update
rule in MindSpore's documentation, and returns them, so custom optimizers written with them
run eagerly and capture like pijit's own optimizers. Scalars (learning rates, decays) may be
numbers or 0-d tensors."""
from pijit import _C
from pijit._primitives_more import _primitive
from pijit.ops import Primitive

_ops = _C.ops


def _set(*pairs):
    """Writes each (parameter, value) and returns the parameters (one alone, else a tuple)."""
    for param, value in pairs:
        _ops.assign(param, value)
    params = tuple(p for p, _ in pairs)
    return params[0] if len(params) == 1 else params


def _sqrt(value):
    return _ops.sqrt(value) if isinstance(value, _C.Tensor) else value ** 0.5


def _shrink(prox, step_l1, scale):
    """The proximal step: sign(v) * max(|v| - step_l1, 0) * scale."""
    return _ops.sign(prox) * _ops.relu(_ops.abs(prox) - step_l1) * scale


def _gradient_descent(self, var, alpha, delta):
    return _set((var, var - alpha * delta))


def _momentum(self, variable, accumulation, learning_rate, gradient, momentum):
    accum = accumulation * momentum + gradient * self.gradient_scale
    if self.use_nesterov:
        step = learning_rate * gradient + learning_rate * momentum * accum
    else:
        step = learning_rate * accum
    _ops.assign(accumulation, accum)
    return _set((variable, variable - step))


def _adagrad(self, var, accum, lr, grad):
    new_accum = accum + grad * grad if self.update_slots else accum
    return _set((var, var - lr * grad * _ops.rsqrt(new_accum)), (accum, new_accum))


def _adagrad_v2(self, var, accum, lr, grad):
    new_accum = accum + grad * grad if self.update_slots else accum
    return _set((var, var - lr * grad / (_ops.sqrt(new_accum) + self.epsilon)),
                (accum, new_accum))


def _rms_prop(self, var, mean_square, moment, learning_rate, grad, decay, momentum, epsilon):
    ms = decay * mean_square + (1.0 - decay) * grad * grad
    mom = momentum * moment + learning_rate * grad * _ops.rsqrt(ms + epsilon)
    _ops.assign(mean_square, ms)
    _ops.assign(moment, mom)
    return _set((var, var - mom))


def _centered_rms_prop(self, var, mean_gradient, mean_square, moment, grad, learning_rate,
                       decay, momentum, epsilon):
    mg = decay * mean_gradient + (1.0 - decay) * grad
    ms = decay * mean_square + (1.0 - decay) * grad * grad
    mom = momentum * moment + learning_rate * grad * _ops.rsqrt(ms - mg * mg + epsilon)
    _ops.assign(mean_gradient, mg)
    _ops.assign(mean_square, ms)
    _ops.assign(moment, mom)
    return _set((var, var - mom))


def _ada_max(self, var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad):
    new_m = beta1 * m + (1.0 - beta1) * grad
    new_v = _ops.maximum(beta2 * v, _ops.abs(grad))
    step = lr / (1.0 - beta1_power) * new_m / (new_v + epsilon)
    return _set((var, var - step), (m, new_m), (v, new_v))


def _adadelta(self, var, accum, accum_update, lr, rho, epsilon, grad):
    new_accum = rho * accum + (1.0 - rho) * grad * grad
    update = _ops.sqrt(accum_update + epsilon) * _ops.rsqrt(new_accum + epsilon) * grad
    new_update = rho * accum_update + (1.0 - rho) * update * update
    return _set((var, var - lr * update), (accum, new_accum), (accum_update, new_update))


def _add_sign(self, var, m, lr, alpha, sign_decay, beta, grad):
    new_m = beta * m + (1.0 - beta) * grad
    update = (alpha + sign_decay * _ops.sign(grad) * _ops.sign(new_m)) * grad
    return _set((var, var - lr * update), (m, new_m))


def _power_sign(self, var, m, lr, logbase, sign_decay, beta, grad):
    new_m = beta * m + (1.0 - beta) * grad
    update = _ops.exp(logbase * sign_decay * _ops.sign(grad) * _ops.sign(new_m)) * grad
    return _set((var, var - lr * update), (m, new_m))


def _proximal_gradient_descent(self, var, alpha, l1, l2, delta):
    prox = var - alpha * delta
    return _set((var, _shrink(prox, alpha * l1, 1.0 / (1.0 + alpha * l2))))


def _proximal_adagrad(self, var, accum, lr, l1, l2, grad):
    new_accum = accum + grad * grad
    prox = var - lr * grad * _ops.rsqrt(new_accum)
    return _set((var, _shrink(prox, lr * l1, 1.0 / (1.0 + lr * l2))), (accum, new_accum))


def _ftrl(self, var, accum, linear, grad, lr, l1, l2, lr_power):
    new_accum = accum + grad * grad
    sigma = (_ops.pow(new_accum, -lr_power) - _ops.pow(accum, -lr_power)) / lr
    new_linear = linear + grad - sigma * var
    quadratic = _ops.pow(new_accum, -lr_power) / lr + 2.0 * l2
    new_var = _ops.where(_ops.greater(_ops.abs(new_linear), l1),
                         (_ops.sign(new_linear) * l1 - new_linear) / quadratic, 0.0)
    _ops.assign(accum, new_accum)
    _ops.assign(linear, new_linear)
    return _set((var, new_var))


def _adam(self, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, gradient):
    new_m = beta1 * m + (1.0 - beta1) * gradient
    new_v = beta2 * v + (1.0 - beta2) * gradient * gradient
    lr_t = lr * _sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
    direction = beta1 * new_m + (1.0 - beta1) * gradient if self.use_nesterov else new_m
    step = lr_t * direction / (_ops.sqrt(new_v) + epsilon)
    return _set((var, var - step), (m, new_m), (v, new_v))


def _adam_weight_decay(self, var, m, v, lr, beta1, beta2, epsilon, decay, gradient):
    new_m = beta1 * m + (1.0 - beta1) * gradient
    new_v = beta2 * v + (1.0 - beta2) * gradient * gradient
    update = new_m / (_ops.sqrt(new_v) + epsilon) + decay * var
    return _set((var, var - lr * update), (m, new_m), (v, new_v))


ApplyGradientDescent = _primitive("ApplyGradientDescent", {}, _gradient_descent,
                                  "ApplyGradientDescent()(var, alpha, delta): var -= alpha * "
                                  "delta.")
ApplyMomentum = _primitive(
    "ApplyMomentum", {"use_locking": False, "use_nesterov": False, "gradient_scale": 1.0},
    _momentum, "ApplyMomentum()(variable, accumulation, learning_rate, gradient, momentum).")
ApplyAdagrad = _primitive("ApplyAdagrad", {"update_slots": True}, _adagrad,
                          "ApplyAdagrad(update_slots=True)(var, accum, lr, grad).")
ApplyAdagradV2 = _primitive("ApplyAdagradV2", {"epsilon": 1e-6, "update_slots": True},
                            _adagrad_v2, "ApplyAdagradV2(epsilon, update_slots=True)(var, accum, "
                                         "lr, grad).")
ApplyRMSProp = _primitive("ApplyRMSProp", {"use_locking": False}, _rms_prop,
                          "ApplyRMSProp()(var, mean_square, moment, learning_rate, grad, decay, "
                          "momentum, epsilon).")
ApplyCenteredRMSProp = _primitive("ApplyCenteredRMSProp", {"use_locking": False},
                                  _centered_rms_prop,
                                  "ApplyCenteredRMSProp()(var, mean_gradient, mean_square, moment, "
                                  "grad, learning_rate, decay, momentum, epsilon).")
ApplyAdaMax = _primitive("ApplyAdaMax", {}, _ada_max,
                         "ApplyAdaMax()(var, m, v, beta1_power, lr, beta1, beta2, epsilon, grad).")
ApplyAdadelta = _primitive("ApplyAdadelta", {}, _adadelta,
                           "ApplyAdadelta()(var, accum, accum_update, lr, rho, epsilon, grad).")
ApplyAddSign = _primitive("ApplyAddSign", {}, _add_sign,
                          "ApplyAddSign()(var, m, lr, alpha, sign_decay, beta, grad).")
ApplyPowerSign = _primitive("ApplyPowerSign", {}, _power_sign,
                            "ApplyPowerSign()(var, m, lr, logbase, sign_decay, beta, grad).")
ApplyProximalGradientDescent = _primitive(
    "ApplyProximalGradientDescent", {}, _proximal_gradient_descent,
    "ApplyProximalGradientDescent()(var, alpha, l1, l2, delta).")
ApplyProximalAdagrad = _primitive("ApplyProximalAdagrad", {"use_locking": False},
                                  _proximal_adagrad,
                                  "ApplyProximalAdagrad()(var, accum, lr, l1, l2, grad).")
ApplyFtrl = _primitive("ApplyFtrl", {"use_locking": False}, _ftrl,
                       "ApplyFtrl()(var, accum, linear, grad, lr, l1, l2, lr_power).")
Adam = _primitive("Adam", {"use_locking": False, "use_nesterov": False}, _adam,
                  "Adam()(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, "
                  "gradient): (var, m, v).")
AdamWeightDecay = _primitive("AdamWeightDecay", {"use_locking": False}, _adam_weight_decay,
                             "AdamWeightDecay()(var, m, v, lr, beta1, beta2, epsilon, decay, "
                             "gradient): (var, m, v).")

__all__ = sorted(name for name, value in dict(globals()).items()
                 if isinstance(value, type) and issubclass(value, Primitive)
                 and value is not Primitive)
