"""More optimizer primitives of mindspore.ops: SGD, LARSUpdate, ApplyAdagradDA and the sparse
(row-indexed) optimizer updates.

Like pijit/_primitives_optim.py, each primitive writes its Parameters in place with ops.assign
and returns them, so a custom optimizer made of them captures as one graph.

The sparse updates touch only the rows of `var` named by `indices` (a 1-D integer Tensor, one
row of `grad` per index). Repeated indices have their gradient rows summed first, and indices
outside [0, var.shape[0]) are skipped, as MindSpore's CPU kernels do. They are computed densely:
the gradient rows are scattered into a zero tensor shaped like var (a one-hot matmul, which
captures like any op), the dense rule is applied, and only the touched rows are written back."""
from pijit import _C
from pijit._arg_checks import check_bool
from pijit.numpy._utils import raise_error
from pijit._primitives_more import _primitive as _shared_primitive
from pijit._primitives_optim import _set, _shrink
from pijit._tensor import Parameter

_ops = _C.ops
_Tensor = _C.Tensor
_REQUIRED = object()
_INT64 = _C.dtype.i64
_INT_DTYPES = (_C.dtype.i8, _C.dtype.i16, _C.dtype.i32, _INT64, _C.dtype.u8)


def _check_float(prim, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{prim}: {name} must be a float, got {type(value).__name__}")
    return float(value)


def _primitive(name, attributes, call, doc, validate=None):
    """A Primitive class (pijit/_primitives_more.py's factory) whose constructor also requires
    the _REQUIRED attributes, checks bool attributes' types, turns numbers into floats, then
    checks them with `validate(name, values)`."""

    def check(prim, values):
        missing = [n for n, v in values.items() if v is _REQUIRED]
        if missing:
            raise TypeError(f"{prim}: missing the attributes {missing}")
        for attr, value in values.items():
            if isinstance(attributes[attr], bool):
                check_bool(f"{prim}: {attr}", value)
            else:
                values[attr] = _check_float(prim, attr, value)
        if validate is not None:
            validate(prim, values)

    return _shared_primitive(name, attributes, call, doc, check)


def _check_params(prim, var, *slots):
    """var and its state slots are Parameters of one shape."""
    for label, value in (("var", var),) + slots:
        if not isinstance(value, Parameter):
            raise_error(TypeError, f"{prim}: {label} must be a Parameter, got "
                                   f"{type(value).__name__}")
        if tuple(value.shape) != tuple(var.shape):
            raise_error(ValueError, f"{prim}: {label} must have var's shape {tuple(var.shape)}, "
                                    f"got {tuple(value.shape)}")


def _check_grad(prim, var, grad, indices=None):
    if not isinstance(grad, _Tensor):
        raise_error(TypeError, f"{prim}: grad must be a Tensor, got {type(grad).__name__}")
    if indices is None:
        if tuple(grad.shape) != tuple(var.shape):
            raise_error(ValueError, f"{prim}: grad must have var's shape {tuple(var.shape)}, "
                                    f"got {tuple(grad.shape)}")
        return
    if not isinstance(indices, _Tensor) or indices.dtype not in _INT_DTYPES:
        raise_error(TypeError, f"{prim}: indices must be an integer Tensor, got "
                               f"{getattr(indices, 'dtype', type(indices).__name__)}")
    if indices.ndim != 1:
        raise_error(ValueError, f"{prim}: indices must be 1-D, got shape {tuple(indices.shape)}")
    if var.ndim == 0:
        raise_error(ValueError, f"{prim}: var must have at least one dimension to index rows")
    want = (indices.shape[0],) + tuple(var.shape[1:])
    if tuple(grad.shape) != want:
        raise_error(ValueError, f"{prim}: grad must have shape {want} (one row of var per "
                                f"index), got {tuple(grad.shape)}")


def _rows(var, grad, indices):
    """(the gradient scattered densely onto var's rows, a mask of the touched rows shaped to
    broadcast against var)."""
    rows = var.shape[0]
    hits = _ops.one_hot(indices.astype(_INT64), rows, 1.0, 0.0).astype(var.dtype)
    flat = _ops.reshape(grad.astype(var.dtype), (indices.shape[0], -1))
    dense = _ops.reshape(_ops.matmul(_ops.transpose(hits, (1, 0)), flat), var.shape)
    touched = _ops.reshape(_ops.sum(hits, 0) > 0, (rows,) + (1,) * (var.ndim - 1))
    return dense, touched


def _sparse_set(touched, *pairs):
    """_set of each (parameter, new value) on the touched rows only."""
    return _set(*[(p, _ops.where(touched, value, p)) for p, value in pairs])


def _ftrl_rule(var, accum, linear, grad, lr, l1, l2, lr_power, l2_shrinkage=0.0):
    """The FTRL-proximal update (the shrinkage term enters the linear term only)."""
    new_accum = accum + grad * grad
    new_power = _ops.pow(new_accum, -lr_power)
    shrunk = grad + 2.0 * l2_shrinkage * var if l2_shrinkage != 0.0 else grad
    new_linear = linear + shrunk - (new_power - _ops.pow(accum, -lr_power)) / lr * var
    quadratic = new_power / lr + 2.0 * l2
    new_var = _ops.where(_ops.abs(new_linear) > l1,
                         (_ops.sign(new_linear) * l1 - new_linear) / quadratic, 0.0)
    return new_var, new_accum, new_linear


def _select(condition, if_true, if_false):
    """where() for a Tensor condition; the branch itself for a Python one (a number
    hyperparameter)."""
    if isinstance(condition, _Tensor):
        return _ops.where(condition, if_true, if_false)
    return if_true if condition else if_false


def _sgd(self, parameters, gradient, learning_rate, accum, momentum, stat):
    _check_params("SGD", parameters, ("accum", accum))
    _check_grad("SGD", parameters, gradient)
    if not isinstance(stat, Parameter):
        raise_error(TypeError, f"SGD: stat must be a Parameter, got {type(stat).__name__}")
    grad = gradient
    if self.weight_decay > 0.0:
        grad = grad + parameters * self.weight_decay
    # stat > 0 marks the first step: the buffer starts as the gradient itself.
    first = stat > 0
    use_momentum = momentum > 0
    new_accum = _ops.where(first, grad, accum * momentum + (1.0 - self.dampening) * grad)
    step = grad + new_accum * momentum if self.nesterov else new_accum
    _ops.assign(accum, _select(use_momentum, new_accum, accum))
    _ops.assign(stat, _select(use_momentum, _ops.where(first, 0.0, stat), stat))
    return _set((parameters, parameters - learning_rate * _select(use_momentum, step, grad)))


def _sgd_checks(name, values):
    if values["nesterov"] and values["dampening"] != 0.0:
        raise ValueError(f"{name}: nesterov needs dampening = 0, got {values['dampening']}")
    if values["weight_decay"] < 0.0:
        raise ValueError(f"{name}: weight_decay must be >= 0, got {values['weight_decay']}")


def _lars_update(self, weight, gradient, norm_weight, norm_gradient, weight_decay, learning_rate):
    for label, value in (("weight", weight), ("gradient", gradient), ("norm_weight", norm_weight),
                         ("norm_gradient", norm_gradient)):
        if not isinstance(value, _Tensor):
            raise_error(TypeError, f"LARSUpdate: {label} must be a Tensor, got "
                                   f"{type(value).__name__}")
    if tuple(gradient.shape) != tuple(weight.shape):
        raise_error(TypeError, f"LARSUpdate: gradient must have weight's shape "
                               f"{tuple(weight.shape)}, got {tuple(gradient.shape)}")
    w_norm = _ops.sqrt(norm_weight)
    g_norm = _ops.sqrt(norm_gradient)
    coefficient = self.hyperpara * w_norm / (g_norm + weight_decay * w_norm + self.epsilon)
    if self.use_clip:
        coefficient = _ops.minimum(coefficient / learning_rate, 1.0)
    # A zero weight or gradient leaves the gradient's scale alone.
    both = _ops.logical_and(w_norm > 0, g_norm > 0)
    coefficient = _ops.where(both, coefficient, 1.0)
    return (gradient + weight_decay * weight) * coefficient


def _adagrad_da(self, var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2,
                global_step):
    _check_params("ApplyAdagradDA", var, ("gradient_accumulator", gradient_accumulator),
                  ("gradient_squared_accumulator", gradient_squared_accumulator))
    _check_grad("ApplyAdagradDA", var, grad)
    accum = gradient_accumulator + grad
    squared = gradient_squared_accumulator + grad * grad
    step = global_step.astype(var.dtype) if isinstance(global_step, _Tensor) else global_step
    shrunk = _ops.sign(accum) * _ops.relu(_ops.abs(accum) - l1 * step)
    numerator = _select(l1 > 0, shrunk, accum)
    new_var = -lr * numerator / (l2 * step * lr + _ops.sqrt(squared))
    return _set((var, new_var), (gradient_accumulator, accum),
                (gradient_squared_accumulator, squared))


def _sparse_adagrad_v2(self, var, accum, grad, indices):
    _check_params("SparseApplyAdagradV2", var, ("accum", accum))
    _check_grad("SparseApplyAdagradV2", var, grad, indices)
    dense, touched = _rows(var, grad, indices)
    new_accum = accum + dense * dense if self.update_slots else accum
    new_var = var - self.lr * dense / (_ops.sqrt(new_accum) + self.epsilon)
    return _sparse_set(touched, (var, new_var), (accum, new_accum))


def _sparse_ftrl_rows(prim, self, var, accum, linear, grad, indices, shrinkage):
    _check_params(prim, var, ("accum", accum), ("linear", linear))
    _check_grad(prim, var, grad, indices)
    dense, touched = _rows(var, grad, indices)
    new_var, new_accum, new_linear = _ftrl_rule(var, accum, linear, dense, self.lr, self.l1,
                                                self.l2, self.lr_power, shrinkage)
    return _sparse_set(touched, (var, new_var), (accum, new_accum), (linear, new_linear))


def _sparse_ftrl(self, var, accum, linear, grad, indices):
    return _sparse_ftrl_rows("SparseApplyFtrl", self, var, accum, linear, grad, indices, 0.0)


def _sparse_ftrl_v2(self, var, accum, linear, grad, indices):
    return _sparse_ftrl_rows("SparseApplyFtrlV2", self, var, accum, linear, grad, indices,
                             self.l2_shrinkage)


def _ftrl_checks(name, values):
    if values["lr"] <= 0.0:
        raise ValueError(f"{name}: lr must be > 0, got {values['lr']}")
    for key in ("l1", "l2"):
        if values[key] < 0.0:
            raise ValueError(f"{name}: {key} must be >= 0, got {values[key]}")
    if values["lr_power"] > 0.0:
        raise ValueError(f"{name}: lr_power must be <= 0, got {values['lr_power']}")


def _sparse_proximal_adagrad(self, var, accum, lr, l1, l2, grad, indices):
    _check_params("SparseApplyProximalAdagrad", var, ("accum", accum))
    _check_grad("SparseApplyProximalAdagrad", var, grad, indices)
    dense, touched = _rows(var, grad, indices)
    new_accum = accum + dense * dense
    # Untouched rows may hold a zero accumulator; their (discarded) value must stay finite.
    safe = _ops.where(touched, new_accum, 1.0)
    prox = var - lr * dense * _ops.rsqrt(safe)
    new_var = _shrink(prox, lr * l1, 1.0 / (1.0 + lr * l2))
    return _sparse_set(touched, (var, new_var), (accum, new_accum))


SGD = _primitive(
    "SGD", {"dampening": 0.0, "weight_decay": 0.0, "nesterov": False}, _sgd,
    "SGD(dampening=0.0, weight_decay=0.0, nesterov=False)(parameters, gradient, learning_rate, "
    "accum, momentum, stat): stochastic gradient descent with momentum; stat > 0 marks the "
    "first step (the buffer starts as the gradient) and is cleared. Returns parameters.",
    _sgd_checks)
LARSUpdate = _primitive(
    "LARSUpdate", {"epsilon": 1e-05, "hyperpara": 0.001, "use_clip": False}, _lars_update,
    "LARSUpdate(epsilon=1e-05, hyperpara=0.001, use_clip=False)(weight, gradient, norm_weight, "
    "norm_gradient, weight_decay, learning_rate): the layer-wise scaled gradient "
    "(gradient + weight_decay * weight) * hyperpara * |w| / (|g| + weight_decay * |w| + "
    "epsilon), from the sums of squares norm_weight and norm_gradient.")
ApplyAdagradDA = _primitive(
    "ApplyAdagradDA", {"use_locking": False}, _adagrad_da,
    "ApplyAdagradDA()(var, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2, "
    "global_step): Adagrad dual averaging. Returns (var, gradient_accumulator, "
    "gradient_squared_accumulator).")
SparseApplyAdagradV2 = _primitive(
    "SparseApplyAdagradV2", {"lr": _REQUIRED, "epsilon": _REQUIRED, "use_locking": False,
                             "update_slots": True}, _sparse_adagrad_v2,
    "SparseApplyAdagradV2(lr, epsilon, use_locking=False, update_slots=True)(var, accum, grad, "
    "indices): Adagrad with epsilon on the rows of indices. Returns (var, accum).")
SparseApplyFtrl = _primitive(
    "SparseApplyFtrl", {"lr": _REQUIRED, "l1": _REQUIRED, "l2": _REQUIRED,
                        "lr_power": _REQUIRED, "use_locking": False}, _sparse_ftrl,
    "SparseApplyFtrl(lr, l1, l2, lr_power, use_locking=False)(var, accum, linear, grad, "
    "indices): FTRL-proximal on the rows of indices. Returns (var, accum, linear).",
    _ftrl_checks)
SparseApplyFtrlV2 = _primitive(
    "SparseApplyFtrlV2", {"lr": _REQUIRED, "l1": _REQUIRED, "l2": _REQUIRED,
                          "l2_shrinkage": _REQUIRED, "lr_power": _REQUIRED,
                          "use_locking": False}, _sparse_ftrl_v2,
    "SparseApplyFtrlV2(lr, l1, l2, l2_shrinkage, lr_power, use_locking=False)(var, accum, "
    "linear, grad, indices): SparseApplyFtrl whose linear term also takes "
    "2 * l2_shrinkage * var. Returns (var, accum, linear).",
    _ftrl_checks)
SparseApplyProximalAdagrad = _primitive(
    "SparseApplyProximalAdagrad", {"use_locking": False}, _sparse_proximal_adagrad,
    "SparseApplyProximalAdagrad(use_locking=False)(var, accum, lr, l1, l2, grad, indices): "
    "Adagrad and the l1/l2 proximal step on the rows of indices. Returns (var, accum).")

__all__ = ["SGD", "LARSUpdate", "ApplyAdagradDA", "SparseApplyAdagradV2", "SparseApplyFtrl",
           "SparseApplyFtrlV2", "SparseApplyProximalAdagrad"]
