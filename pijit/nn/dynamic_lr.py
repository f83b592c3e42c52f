"""Learning-rate lists (MindSpore's mindspore.nn.dynamic_lr): one rate per training step,
computed in Python before training, to give an optimizer as its learning_rate.

    lr = nn.cosine_decay_lr(0.001, 0.1, total_step=1000, step_per_epoch=100, decay_epoch=10)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)

The optimizer keeps the list in a float32 Parameter and reads the entry of its step counter
inside the update (the last entry once the list is used up), so a compiled training step
uses a new rate each step without recompiling.

With current_epoch = floor(i / step_per_epoch) for step i:
    piecewise_constant_lr   learning_rates[t] for milestone[t-1] <= i < milestone[t]
    exponential_decay_lr    learning_rate * decay_rate ** (current_epoch / decay_epoch)
    natural_exp_decay_lr    learning_rate * exp(-decay_rate * current_epoch)
    inverse_decay_lr        learning_rate / (1 + decay_rate * current_epoch / decay_epoch)
    cosine_decay_lr         min_lr + (max_lr - min_lr) / 2 * (1 + cos(pi * e / decay_epoch)),
                            e = min(current_epoch, decay_epoch)
    polynomial_decay_lr     (learning_rate - end_learning_rate) * (1 - e / d) ** power
                            + end_learning_rate
    warmup_lr               learning_rate * min(current_epoch, warmup_epoch) / warmup_epoch
is_stair floors current_epoch / decay_epoch (or, for natural_exp_decay_lr, current_epoch to a
multiple of decay_epoch)."""
import math
import numbers

from pijit._arg_checks import check_positive_int

__all__ = ["piecewise_constant_lr", "exponential_decay_lr", "natural_exp_decay_lr",
           "inverse_decay_lr", "cosine_decay_lr", "polynomial_decay_lr", "warmup_lr"]


def _float(function, name, value, positive=True):
    if not isinstance(value, float):
        raise TypeError(f"For '{function}', '{name}' must be a float, got "
                        f"{type(value).__name__}")
    if (positive and not value > 0) or (not positive and not value >= 0) or \
            not math.isfinite(value):
        raise ValueError(f"For '{function}', '{name}' must be {'> 0' if positive else '>= 0'} "
                         f"and finite, got {value}")
    return value


def _steps(function, total_step, step_per_epoch, epochs_name, epochs):
    check_positive_int(f"For '{function}', 'total_step'", total_step)
    check_positive_int(f"For '{function}', 'step_per_epoch'", step_per_epoch)
    check_positive_int(f"For '{function}', '{epochs_name}'", epochs)
    return [i // step_per_epoch for i in range(total_step)]


def _check_stair(function, is_stair):
    if not isinstance(is_stair, bool):
        raise TypeError(f"For '{function}', 'is_stair' must be a bool, got "
                        f"{type(is_stair).__name__}")


def piecewise_constant_lr(milestone, learning_rates):
    """learning_rates[t] for the steps from milestone[t-1] (0 for t = 0) up to milestone[t]:
    a list of milestone[-1] rates. `milestone` holds increasing positive ints, one per rate."""
    function = "piecewise_constant_lr"
    if not isinstance(milestone, (list, tuple)) or not isinstance(learning_rates, (list, tuple)):
        raise TypeError(f"For '{function}', 'milestone' and 'learning_rates' must be lists or "
                        f"tuples, got {type(milestone).__name__} and "
                        f"{type(learning_rates).__name__}")
    if len(milestone) != len(learning_rates) or not milestone:
        raise ValueError(f"For '{function}', 'milestone' and 'learning_rates' must have the same, "
                         f"non-zero length, got {len(milestone)} and {len(learning_rates)}")
    rates, last = [], 0
    for i, (end, rate) in enumerate(zip(milestone, learning_rates)):
        check_positive_int(f"For '{function}', 'milestone[{i}]'", end)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real):
            raise TypeError(f"For '{function}', 'learning_rates[{i}]' must be a float, got "
                            f"{type(rate).__name__}")
        if end < last:
            raise ValueError(f"For '{function}', 'milestone' must not decrease, but "
                             f"milestone[{i}] is {end} after {last}")
        rates += [float(rate)] * (end - last)
        last = end
    return rates


def _decay_arguments(function, learning_rate, decay_rate, total_step, step_per_epoch,
                     decay_epoch, is_stair):
    _float(function, "learning_rate", learning_rate)
    _float(function, "decay_rate", decay_rate)
    _check_stair(function, is_stair)
    return _steps(function, total_step, step_per_epoch, "decay_epoch", decay_epoch)


def exponential_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                         is_stair=False):
    """learning_rate * decay_rate ** (current_epoch / decay_epoch) for each of total_step
    steps (the exponent floored with is_stair)."""
    epochs = _decay_arguments("exponential_decay_lr", learning_rate, decay_rate, total_step,
                              step_per_epoch, decay_epoch, is_stair)
    return [learning_rate * decay_rate ** (e // decay_epoch if is_stair else e / decay_epoch)
            for e in epochs]


def natural_exp_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                         is_stair=False):
    """learning_rate * exp(-decay_rate * current_epoch) for each of total_step steps
    (current_epoch floored to a multiple of decay_epoch with is_stair)."""
    epochs = _decay_arguments("natural_exp_decay_lr", learning_rate, decay_rate, total_step,
                              step_per_epoch, decay_epoch, is_stair)
    return [learning_rate * math.e ** (-decay_rate * ((e // decay_epoch) * decay_epoch
                                                      if is_stair else e))
            for e in epochs]


def inverse_decay_lr(learning_rate, decay_rate, total_step, step_per_epoch, decay_epoch,
                     is_stair=False):
    """learning_rate / (1 + decay_rate * current_epoch / decay_epoch) for each of total_step
    steps (the ratio floored with is_stair)."""
    epochs = _decay_arguments("inverse_decay_lr", learning_rate, decay_rate, total_step,
                              step_per_epoch, decay_epoch, is_stair)
    return [learning_rate / (1 + decay_rate * (e // decay_epoch if is_stair
                                               else e / decay_epoch))
            for e in epochs]


def cosine_decay_lr(min_lr, max_lr, total_step, step_per_epoch, decay_epoch):
    """From max_lr down to min_lr along half a cosine over decay_epoch epochs, then min_lr,
    for each of total_step steps."""
    function = "cosine_decay_lr"
    _float(function, "min_lr", min_lr, positive=False)
    _float(function, "max_lr", max_lr)
    if min_lr >= max_lr:
        raise ValueError(f"For '{function}', 'max_lr' must be greater than 'min_lr', got max_lr "
                         f"{max_lr} and min_lr {min_lr}")
    epochs = _steps(function, total_step, step_per_epoch, "decay_epoch", decay_epoch)
    half = 0.5 * (max_lr - min_lr)
    return [min_lr + half * (1 + math.cos(math.pi * min(e, decay_epoch) / decay_epoch))
            for e in epochs]


def polynomial_decay_lr(learning_rate, end_learning_rate, total_step, step_per_epoch,
                        decay_epoch, power, update_decay_epoch=False):
    """(learning_rate - end_learning_rate) * (1 - e / d) ** power + end_learning_rate with
    e = min(current_epoch, decay_epoch) and d = decay_epoch; with update_decay_epoch, e is
    current_epoch and d the next multiple of decay_epoch (at least decay_epoch)."""
    function = "polynomial_decay_lr"
    _float(function, "learning_rate", learning_rate)
    _float(function, "end_learning_rate", end_learning_rate, positive=False)
    _float(function, "power", power)
    if not isinstance(update_decay_epoch, bool):
        raise TypeError(f"For '{function}', 'update_decay_epoch' must be a bool, got "
                        f"{type(update_decay_epoch).__name__}")
    epochs = _steps(function, total_step, step_per_epoch, "decay_epoch", decay_epoch)
    rates, delta = [], learning_rate - end_learning_rate
    for e in epochs:
        if update_decay_epoch:
            d, e_used = decay_epoch * max(math.ceil(e / decay_epoch), 1), e
        else:
            d, e_used = decay_epoch, min(e, decay_epoch)
        rates.append(delta * (1 - e_used / d) ** power + end_learning_rate)
    return rates


def warmup_lr(learning_rate, total_step, step_per_epoch, warmup_epoch):
    """learning_rate * min(current_epoch, warmup_epoch) / warmup_epoch for each of total_step
    steps: 0 in the first epoch, learning_rate from epoch warmup_epoch on."""
    function = "warmup_lr"
    _float(function, "learning_rate", learning_rate, positive=False)
    epochs = _steps(function, total_step, step_per_epoch, "warmup_epoch", warmup_epoch)
    return [learning_rate * min(e, warmup_epoch) / warmup_epoch for e in epochs]
