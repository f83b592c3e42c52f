"""THOR written independently of pijit, for test_thor.py: torch (float64 autograd) gives each
layer's input, output gradient and weight gradients; NumPy does THOR's algebra (the
statistics, the damped inverses refreshed every `frequency` steps and reused in between,
and the momentum update)."""
import numpy as np
import torch


def mlp_forward(params, x, target):
    """Dense(in, hidden) -> ReLU -> Dense(hidden, out), mean squared error. Returns the loss,
    {layer: (input rows, output-gradient rows, windows per sample)} and the gradients."""
    w1, b1, w2, b2 = (torch.tensor(params[k], dtype=torch.float64, requires_grad=True)
                      for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    xt = torch.tensor(x, dtype=torch.float64)
    z1 = xt @ w1.T
    z1.retain_grad()
    h = torch.relu(z1 + b1)
    z2 = h @ w2.T
    z2.retain_grad()
    loss = ((z2 + b2 - torch.tensor(target, dtype=torch.float64)) ** 2).mean()
    loss.backward()
    layers = {"0": (x, z1.grad.numpy(), 1), "2": (h.detach().numpy(), z2.grad.numpy(), 1)}
    grads = {"0.weight": w1.grad.numpy(), "0.bias": b1.grad.numpy(),
             "2.weight": w2.grad.numpy(), "2.bias": b2.grad.numpy()}
    return loss.item(), layers, grads


def conv_forward(params, x, target):
    """Conv2d(C, K, 3, pad 'same') -> ReLU -> flatten -> Dense, mean squared error."""
    wc, bc, wd, bd = (torch.tensor(params[k], dtype=torch.float64, requires_grad=True)
                      for k in ("conv.weight", "conv.bias", "fc.weight", "fc.bias"))
    xt = torch.tensor(x, dtype=torch.float64)
    z = torch.nn.functional.conv2d(xt, wc, padding=1)
    z.retain_grad()
    h = torch.relu(z + bc[None, :, None, None]).flatten(1)
    z2 = h @ wd.T
    z2.retain_grad()
    loss = ((z2 + bd - torch.tensor(target, dtype=torch.float64)) ** 2).mean()
    loss.backward()
    windows = torch.nn.functional.unfold(xt, 3, padding=1)  # (N, C * 9, L)
    count = windows.shape[2]
    patch_rows = windows.permute(0, 2, 1).reshape(-1, windows.shape[1]).numpy()
    dout_rows = z.grad.permute(0, 2, 3, 1).reshape(-1, z.shape[1]).numpy()
    layers = {"conv": (patch_rows, dout_rows, count),
              "fc": (h.detach().numpy(), z2.grad.numpy(), 1)}
    grads = {"conv.weight": wc.grad.numpy(), "conv.bias": bc.grad.numpy(),
             "fc.weight": wd.grad.numpy(), "fc.bias": bd.grad.numpy()}
    return loss.item(), layers, grads


def covariance(rows):
    rows = np.asarray(rows, np.float64).reshape(-1, np.shape(rows)[-1])
    return rows.T @ rows / rows.shape[0]


def inverses(a_rows, g_rows, count, damping, batch_size, loss_scale):
    """(A + sqrt(d / L) I)^-1 / sqrt(L) and (G * b^2 / s^2 + sqrt(d / L) I)^-1 / sqrt(L), L the
    windows per sample (1 for Dense)."""
    a, g = covariance(a_rows), covariance(g_rows) * batch_size ** 2 / loss_scale ** 2
    root = np.sqrt(damping / count)
    scale = np.sqrt(1.0 / count)
    return (np.linalg.inv(a + root * np.eye(len(a))) * scale,
            np.linalg.inv(g + root * np.eye(len(g))) * scale)


class ThorReference:
    """THOR over a dict of float64 parameters; `forward(params, x, target)` is one of the
    functions above. Per-step learning rates and dampings hold their last value after their
    list ends."""

    def __init__(self, params, forward, lrs, dampings, momentum, frequency, batch_size,
                 loss_scale=1.0, weight_decay=0.0, nesterov=False, clip=False):
        self.params = {k: np.asarray(v, np.float64) for k, v in params.items()}
        self.forward, self.lrs, self.dampings = forward, list(lrs), list(dampings)
        self.momentum, self.frequency, self.batch_size = momentum, frequency, batch_size
        self.loss_scale, self.weight_decay, self.nesterov = loss_scale, weight_decay, nesterov
        self.clip = clip  # each gradient scaled down to L2 norm 1 when larger
        self.moments = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.inverses = {}
        self.step_count = 0

    def step(self, x, target):
        k = self.step_count
        lr = self.lrs[min(k, len(self.lrs) - 1)]
        damping = self.dampings[min(k, len(self.dampings) - 1)]
        loss, layers, grads = self.forward(self.params, x, target)
        if k % self.frequency == 0:
            self.inverses = {name: inverses(a, g, count, damping, self.batch_size,
                                            self.loss_scale)
                             for name, (a, g, count) in layers.items()}
        for name, (a_inv, g_inv) in self.inverses.items():
            g = grads[f"{name}.weight"]
            grads[f"{name}.weight"] = (g_inv @ g.reshape(len(g), -1) @ a_inv).reshape(g.shape)
        for key, g in grads.items():
            g = g + self.weight_decay * self.params[key]
            if self.clip:
                g = g / max(np.linalg.norm(g), 1.0)
            self.moments[key] = self.momentum * self.moments[key] + g
            step = g + self.momentum * self.moments[key] if self.nesterov else self.moments[key]
            self.params[key] = self.params[key] - lr * step
        self.step_count += 1
        return loss
