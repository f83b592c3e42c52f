"""BatchNorm1d, GroupNorm and InstanceNorm1d/2d/3d (MindSpore's names, defaults and parameter
names gamma and beta), composed of pijit ops so that they capture and differentiate like
them."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import Parameter, float32
from pijit.common.initializer import initializer
from pijit.nn.cell import Cell
from pijit.nn.layers.normalization import BatchNorm2d
from pijit.nn._checks import positive_int


def _eps(name, eps):
    eps = plain(eps)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise ValueError(f"{name}: eps must be a positive number, got {eps!r}")
    return float(eps)


def _add_scale_and_shift(cell, channels, gamma_init, beta_init, dtype):
    """The per-channel gamma and beta of `cell`, trained when cell.affine."""
    cell.gamma = Parameter(initializer(gamma_init, (channels,), dtype), name="gamma",
                           requires_grad=cell.affine)
    cell.beta = Parameter(initializer(beta_init, (channels,), dtype), name="beta",
                          requires_grad=cell.affine)


def _channel_view(v, ndim):
    """A per-channel vector shaped to broadcast against (N, C, ...) data of rank ndim."""
    return v.reshape((1, v.shape[0]) + (1,) * (ndim - 2))


def _normalize_groups(x, groups, eps, gamma, beta):
    """Each sample's channels normalised in `groups` groups (mean and biased variance over a
    group's channels and positions), then scaled and shifted per channel: the group_norm op,
    one fused kernel with its own backward. Parameters of another dtype than x's take
    layer_norm's statistics and a separate scale and shift, which promote as ops do."""
    if gamma.dtype == x.dtype and beta.dtype == x.dtype:
        return ops.group_norm(x, groups, gamma, beta, eps)
    shape = x.shape
    g = x.reshape((shape[0], groups, -1))
    y = ops.layer_norm(g, (g.shape[2],), None, None, eps).reshape(shape)
    return y * _channel_view(gamma, len(shape)) + _channel_view(beta, len(shape))


class BatchNorm1d(BatchNorm2d):
    """Batch normalisation of (N, C) or (N, C, L) data per channel, as BatchNorm2d (the same
    statistics, moving averages and parameters)."""

    def construct(self, x):
        if len(x.shape) not in (2, 3):
            raise ValueError(f"BatchNorm1d: expects (N, C) or (N, C, L) input, got shape "
                             f"{tuple(x.shape)}")
        shape = x.shape
        y = BatchNorm2d.construct(self, x.reshape((shape[0], shape[1], -1, 1)))
        return y.reshape(shape)


class GroupNorm(Cell):
    """Normalises each sample's channels in num_groups groups (mean and biased variance over
    the group's channels and spatial positions), then scales by gamma and shifts by beta per
    channel."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, gamma_init="ones",
                 beta_init="zeros", dtype=float32):
        super().__init__()
        self.num_groups = positive_int("GroupNorm", "num_groups", num_groups)
        self.num_channels = positive_int("GroupNorm", "num_channels", num_channels)
        if self.num_channels % self.num_groups:
            raise ValueError(f"GroupNorm: num_channels ({self.num_channels}) must be divisible "
                             f"by num_groups ({self.num_groups})")
        self.eps, self.affine = _eps("GroupNorm", eps), bool(affine)
        _add_scale_and_shift(self, self.num_channels, gamma_init, beta_init, dtype)

    def construct(self, x):
        shape = x.shape
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expects (N, {self.num_channels}, ...) input, got shape "
                             f"{tuple(shape)}")
        return _normalize_groups(x, self.num_groups, self.eps, self.gamma, self.beta)

    def extend_repr(self):
        return f"num_groups={self.num_groups}, num_channels={self.num_channels}"


class _InstanceNorm(Cell):
    """Normalises each sample's channels separately over their spatial positions (mean and
    biased variance), then scales by gamma and shifts by beta per channel."""
    _spatial = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, gamma_init="ones",
                 beta_init="zeros", dtype=float32):
        super().__init__()
        name = type(self).__name__
        self.num_features = positive_int(name, "num_features", num_features)
        self.eps, self.affine = _eps(name, eps), bool(affine)
        momentum = plain(momentum)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) \
                or not 0 <= momentum <= 1:
            raise ValueError(f"{name}: momentum must be in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        _add_scale_and_shift(self, self.num_features, gamma_init, beta_init, dtype)
        c = (self.num_features,)
        # MindSpore's InstanceNorm carries running statistics too (its checkpoints hold them);
        # the output always uses each instance's own statistics, so pijit keeps them for
        # checkpoints only and does not update them.
        self.moving_mean = Parameter(initializer("zeros", c, dtype), name="moving_mean",
                                     requires_grad=False)
        self.moving_variance = Parameter(initializer("ones", c, dtype), name="moving_variance",
                                         requires_grad=False)

    def construct(self, x):
        rank = self._spatial + 2
        if len(x.shape) != rank or x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expects a {rank}-D input (N, "
                             f"{self.num_features}, ...), got shape {tuple(x.shape)}")
        return _normalize_groups(x, self.num_features, self.eps, self.gamma, self.beta)

    def extend_repr(self):
        return f"num_features={self.num_features}, eps={self.eps}, affine={self.affine}"


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


__all__ = ["BatchNorm1d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
