"""BatchNorm2d and LayerNorm."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import Parameter, float32
from pijit.common.initializer import initializer
from pijit.nn.cell import Cell


class BatchNorm2d(Cell):
    """Batch normalisation of NCHW data over N, H and W per channel.

    Evaluation mode normalises with the moving statistics. Training mode (set_train(), or
    use_batch_statistics=True) normalises with the batch's statistics and updates the moving
    ones in place: moving = momentum * moving + (1 - momentum) * batch (the variance's update
    uses the unbiased batch variance). The update is part of the op, so it also happens when
    construct is captured, and later calls (eager or compiled) see the new values."""

    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init="ones",
                 beta_init="zeros", moving_mean_init="zeros", moving_var_init="ones",
                 use_batch_statistics=None, data_format="NCHW", dtype=float32):
        super().__init__()
        num_features, eps, momentum = plain(num_features), plain(eps), plain(momentum)
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(f"BatchNorm2d: num_features must be a positive int, got {num_features!r}")
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNorm2d: momentum must be in [0, 1], got {momentum}")
        if data_format != "NCHW":
            raise ValueError(f"BatchNorm2d: only data_format='NCHW' is supported, got {data_format!r}")
        self.num_features, self.eps, self.momentum = num_features, float(eps), float(momentum)
        self.affine, self.use_batch_statistics = affine, use_batch_statistics
        c = (num_features,)
        self.moving_mean = Parameter(initializer(moving_mean_init, c, dtype), name="moving_mean",
                                     requires_grad=False)
        self.moving_variance = Parameter(initializer(moving_var_init, c, dtype), name="moving_variance",
                                         requires_grad=False)
        self.gamma = Parameter(initializer(gamma_init, c, dtype), name="gamma", requires_grad=affine)
        self.beta = Parameter(initializer(beta_init, c, dtype), name="beta", requires_grad=affine)

    def construct(self, x):
        use_batch = self.training if self.use_batch_statistics is None else self.use_batch_statistics
        if use_batch:
            return ops.batch_norm(x, self.moving_mean, self.moving_variance, self.gamma, self.beta,
                                  training=True, momentum=1.0 - self.momentum, eps=self.eps)
        return ops.batch_norm(x, self.moving_mean, self.moving_variance, self.gamma, self.beta,
                              eps=self.eps)

    def extend_repr(self):
        return (f"num_features={self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"gamma={self.gamma}, beta={self.beta}, moving_mean={self.moving_mean}, "
                f"moving_variance={self.moving_variance}")


class LayerNorm(Cell):
    """Normalises over the axes from begin_norm_axis on; gamma and beta have
    `normalized_shape`, the trailing axes from begin_params_axis on."""

    def __init__(self, normalized_shape, begin_norm_axis=-1, begin_params_axis=-1,
                 gamma_init="ones", beta_init="zeros", epsilon=1e-7, dtype=float32):
        super().__init__()
        normalized_shape, epsilon = plain(normalized_shape), plain(epsilon)
        begin_norm_axis, begin_params_axis = plain(begin_norm_axis), plain(begin_params_axis)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape:
            raise TypeError(f"LayerNorm: normalized_shape must be a non-empty tuple of ints, got "
                            f"{normalized_shape!r}")
        self.normalized_shape = tuple(normalized_shape)
        self.begin_norm_axis, self.begin_params_axis = begin_norm_axis, begin_params_axis
        self.epsilon = float(epsilon)
        self.gamma = Parameter(initializer(gamma_init, self.normalized_shape, dtype), name="gamma")
        self.beta = Parameter(initializer(beta_init, self.normalized_shape, dtype), name="beta")

    def construct(self, x):
        nd = x.ndim
        begin = self.begin_norm_axis % nd
        if nd - begin == len(self.normalized_shape):
            return ops.layer_norm(x, self.normalized_shape, self.gamma, self.beta, self.epsilon)
        # The parameters cover fewer axes than are normalised: normalise, then scale/shift.
        axes = tuple(range(begin, nd))
        mean = ops.mean(x, axes, keepdims=True)
        centered = x - mean
        var = ops.mean(centered * centered, axes, keepdims=True)
        return centered * ops.rsqrt(var + self.epsilon) * self.gamma + self.beta

    def extend_repr(self):
        return (f"normalized_shape={self.normalized_shape}, begin_norm_axis="
                f"{self.begin_norm_axis}, begin_params_axis={self.begin_params_axis}, "
                f"gamma={self.gamma}, beta={self.beta}")
