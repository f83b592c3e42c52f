"""RNNTLoss: the RNN-Transducer loss (Graves 2012) of joint-network activations, with its
gradient, as MindSpore's primitive returns both.

The forward-backward recursions over the (time, label) lattice run on the host in float64
(their data-dependent lengths make them sequential and small next to the joint network); the
costs' gradient reaches the activations through a bprop that scales the returned gradients,
so the loss trains a network like any other."""
import numpy as np

from pijit._tensor import Tensor, float16, float32, int32
from pijit.mint._checks import check_tensor, raise_error
from pijit.nn.cell import Cell
from pijit.ops import Primitive


def _log_softmax(acts):
    shifted = acts - acts.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _one_sequence(lp, labels, blank):
    """(cost, d cost / d log-probabilities) of one sequence: lp (T, U + 1, V), labels (U,)."""
    t_len, u_len = lp.shape[0], len(labels)
    alpha = np.full((t_len, u_len + 1), -np.inf)
    alpha[0, 0] = 0.0
    for t in range(t_len):
        for u in range(u_len + 1):
            if t == 0 and u == 0:
                continue
            stay = alpha[t - 1, u] + lp[t - 1, u, blank] if t > 0 else -np.inf
            emit = alpha[t, u - 1] + lp[t, u - 1, labels[u - 1]] if u > 0 else -np.inf
            alpha[t, u] = np.logaddexp(stay, emit)
    beta = np.full((t_len, u_len + 1), -np.inf)
    beta[t_len - 1, u_len] = lp[t_len - 1, u_len, blank]
    for t in range(t_len - 1, -1, -1):
        for u in range(u_len, -1, -1):
            if t == t_len - 1 and u == u_len:
                continue
            stay = beta[t + 1, u] + lp[t, u, blank] if t < t_len - 1 else -np.inf
            emit = beta[t, u + 1] + lp[t, u, labels[u]] if u < u_len else -np.inf
            beta[t, u] = np.logaddexp(stay, emit)
    log_likelihood = beta[0, 0]
    grad = np.zeros_like(lp)
    # d(-log P) / d lp[t, u, k] = -P(paths through that arc) / P.
    for t in range(t_len):
        for u in range(u_len + 1):
            after_blank = beta[t + 1, u] if t < t_len - 1 else (0.0 if u == u_len else -np.inf)
            grad[t, u, blank] = -np.exp(alpha[t, u] + lp[t, u, blank] + after_blank
                                        - log_likelihood)
            if u < u_len:
                grad[t, u, labels[u]] = -np.exp(alpha[t, u] + lp[t, u, labels[u]]
                                                + beta[t, u + 1] - log_likelihood)
    return -log_likelihood, grad


class _TransducerLoss(Cell):
    def __init__(self, blank):
        super().__init__()
        self.blank = blank

    def construct(self, acts, labels, input_lengths, label_lengths):
        values = acts.asnumpy()
        lp = _log_softmax(values.astype(np.float64))
        probs = np.exp(lp)
        label_values = labels.asnumpy()
        t_lens, u_lens = input_lengths.asnumpy(), label_lengths.asnumpy()
        costs = np.zeros((values.shape[0],))
        grads = np.zeros_like(lp)
        for b in range(values.shape[0]):
            t_len, u_len = int(t_lens[b]), int(u_lens[b])
            cost, g_lp = _one_sequence(lp[b, :t_len, :u_len + 1], label_values[b, :u_len],
                                       self.blank)
            costs[b] = cost
            # Through the log-softmax: g_acts = g_lp - softmax * sum(g_lp).
            p = probs[b, :t_len, :u_len + 1]
            grads[b, :t_len, :u_len + 1] = g_lp - p * g_lp.sum(axis=-1, keepdims=True)
        dtype = values.dtype
        return Tensor(costs.astype(dtype)), Tensor(grads.astype(dtype))

    def bprop(self, acts, labels, input_lengths, label_lengths, out, dout):
        from pijit import ops
        d_costs = dout[0]
        d_acts = out[1] * ops.reshape(d_costs, (-1, 1, 1, 1))
        return (d_acts, ops.zeros_like(labels), ops.zeros_like(input_lengths),
                ops.zeros_like(label_lengths))


class RNNTLoss(Primitive):
    """RNNTLoss(blank_label=0)(acts (B, T, U + 1, V) float, labels (B, U) Int32, input_lengths
    (B,) Int32, label_lengths (B,) Int32): (costs (B,), grads (B, T, U + 1, V)), the negative
    log-likelihood of each label sequence over all alignments and its gradient with respect to
    acts (zero beyond each sequence's lengths)."""

    def __init__(self, blank_label=0):
        if isinstance(blank_label, bool) or not isinstance(blank_label, int) or blank_label < 0:
            raise_error(ValueError, f"RNNTLoss: blank_label must be a non-negative int, got "
                                    f"{blank_label!r}")
        super().__init__(blank_label=blank_label)
        object.__setattr__(self, "_cell", _TransducerLoss(blank_label))

    def __call__(self, acts, labels, input_lengths, label_lengths):
        fname = "RNNTLoss"
        for name, t in (("acts", acts), ("labels", labels), ("input_lengths", input_lengths),
                        ("label_lengths", label_lengths)):
            check_tensor(fname, name, t)
        if acts.dtype not in (float16, float32) or acts.ndim != 4:
            raise_error(TypeError, f"RNNTLoss: acts must be a 4-D Float16 or Float32 Tensor, "
                                   f"got {acts.ndim}-D {acts.dtype}")
        batch, steps, label_slots, vocab = acts.shape
        if any(t.dtype != int32 for t in (labels, input_lengths, label_lengths)):
            raise_error(TypeError, "RNNTLoss: labels, input_lengths and label_lengths must be "
                                   "Int32")
        if tuple(labels.shape) != (batch, label_slots - 1) or \
                tuple(input_lengths.shape) != (batch,) or tuple(label_lengths.shape) != (batch,):
            raise_error(ValueError, f"RNNTLoss: with acts {tuple(acts.shape)} expected labels "
                                    f"({batch}, {label_slots - 1}) and lengths ({batch},)")
        t_lens, u_lens, values = (input_lengths.asnumpy(), label_lengths.asnumpy(),
                                  labels.asnumpy())
        if (t_lens < 1).any() or (t_lens > steps).any() or (u_lens < 0).any() or \
                (u_lens > label_slots - 1).any():
            raise_error(ValueError, f"RNNTLoss: input_lengths must lie in [1, {steps}] and "
                                    f"label_lengths in [0, {label_slots - 1}]")
        if self.blank_label >= vocab or (values < 0).any() or (values >= vocab).any():
            raise_error(ValueError, f"RNNTLoss: labels and blank_label must lie in [0, {vocab})")
        return self._cell(acts, labels, input_lengths, label_lengths)


__all__ = ["RNNTLoss"]
