"""Greedy CTC decoding (ops.ctc_greedy_decoder and the CTCGreedyDecoder primitive).

The decoded length depends on the values, so the decoding runs on the host (a captured graph
breaks at the call and resumes after it). The result is MindSpore's sparse form: the
(batch, position) index and the class of every decoded label, the dense shape
(batch_size, longest decoding), and each sequence's negated sum of its best logits."""
import numpy as np

from pijit._tensor import Tensor, float32, float64, int32
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.ops import Primitive


def _check(fname, inputs, sequence_length, merge_repeated):
    check_tensor(fname, "inputs", inputs)
    check_tensor(fname, "sequence_length", sequence_length)
    check_bool(fname, "merge_repeated", merge_repeated)
    if inputs.dtype not in (float32, float64):
        raise_error(TypeError, f"{fname}: inputs must be Float32 or Float64, got {inputs.dtype}")
    if inputs.ndim != 3:
        raise_error(ValueError, f"{fname}: inputs must be (max_time, batch_size, num_classes), "
                                f"got {inputs.ndim} dimensions")
    if sequence_length.dtype != int32:
        raise_error(TypeError, f"{fname}: sequence_length must be Int32, got "
                               f"{sequence_length.dtype}")
    if tuple(sequence_length.shape) != (inputs.shape[1],):
        raise_error(ValueError, f"{fname}: sequence_length must be (batch_size={inputs.shape[1]},"
                                f"), got {tuple(sequence_length.shape)}")
    lengths = sequence_length.asnumpy()
    if lengths.size and (lengths.min() < 0 or lengths.max() > inputs.shape[0]):
        raise_error(ValueError, f"{fname}: sequence_length must lie in [0, max_time="
                                f"{inputs.shape[0]}], got values from {lengths.min()} to "
                                f"{lengths.max()}")
    return lengths


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True):
    """(decoded_indices (n, 2) Int64, decoded_values (n,) Int64, decoded_shape (2,) Int64,
    log_probability (batch_size, 1)): per sequence the best class at each of its first
    sequence_length steps (the first on ties), repeats merged when merge_repeated, the blank
    class num_classes - 1 dropped; log_probability is minus the sum of those best logits."""
    lengths = _check("ctc_greedy_decoder", inputs, sequence_length, merge_repeated)
    logits = inputs.asnumpy()
    max_time, batch, classes = logits.shape
    blank = classes - 1
    indices, values = [], []
    log_probability = np.zeros((batch, 1), dtype=logits.dtype)
    longest = 0
    for b in range(batch):
        steps = logits[:lengths[b], b, :]
        best = steps.argmax(axis=1) if classes else np.zeros((0,), np.int64)
        log_probability[b, 0] = -steps.max(axis=1).sum() if len(steps) else 0
        decoded, previous = [], None
        for label in best.tolist():
            if label != blank and not (merge_repeated and label == previous):
                decoded.append(label)
            previous = label
        indices.extend((b, position) for position in range(len(decoded)))
        values.extend(decoded)
        longest = max(longest, len(decoded))
    return (Tensor(np.array(indices, dtype=np.int64).reshape(-1, 2)),
            Tensor(np.array(values, dtype=np.int64)),
            Tensor(np.array([batch, longest], dtype=np.int64)), Tensor(log_probability))


class CTCGreedyDecoder(Primitive):
    """CTCGreedyDecoder(merge_repeated=True)(inputs, sequence_length): as
    ops.ctc_greedy_decoder."""

    def __init__(self, merge_repeated=True):
        check_bool("CTCGreedyDecoder", "merge_repeated", merge_repeated)
        super().__init__(merge_repeated=merge_repeated)

    def __call__(self, inputs, sequence_length):
        return ctc_greedy_decoder(inputs, sequence_length, self.merge_repeated)


__all__ = ["CTCGreedyDecoder", "ctc_greedy_decoder"]
