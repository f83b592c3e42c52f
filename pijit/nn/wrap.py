"""Training wrappers (MindSpore's mindspore.nn.wrap): WithLossCell, TrainOneStepCell and
ForwardValueAndGrad.

Gradients are taken on pijit's eager tape (pijit/_autodiff.py): the forward runs once, recorded,
and the same run gives both the loss and the gradients."""
from pijit import _autodiff
from pijit import ops
from pijit._tensor import ParameterTuple, float32
from pijit.nn._checks import instance_of
from pijit.nn.cell import Cell

__all__ = ["WithLossCell", "TrainOneStepCell", "ForwardValueAndGrad", "WithEvalCell",
           "WithGradCell"]


class WithLossCell(Cell):
    """loss_fn(backbone(data), label)."""

    def __init__(self, backbone, loss_fn):
        super().__init__(auto_prefix=False)
        instance_of("WithLossCell", "backbone", backbone, Cell)
        if not callable(loss_fn):
            raise TypeError(f"WithLossCell: loss_fn must be callable, got {type(loss_fn).__name__}")
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data, label):
        out = self._backbone(data)
        return self._loss_fn(out, label)

    @property
    def backbone_network(self):
        return self._backbone


class TrainOneStepCell(Cell):
    """One training step: runs `network` (a Cell returning the loss, e.g. a WithLossCell) on the
    inputs, takes the gradients of the loss, scaled by `sens`, with respect to the optimizer's
    parameters, applies `optimizer` to them and returns the loss. Compiled (GRAPH_MODE, or
    called from jitted code), forward, backward and the update are one graph."""

    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        instance_of("TrainOneStepCell", "network", network, Cell)
        if not callable(optimizer) or not hasattr(optimizer, "parameters"):
            raise TypeError(f"TrainOneStepCell: optimizer must be an Optimizer, got "
                            f"{type(optimizer).__name__}")
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.__dict__["weights"] = optimizer.parameters
        self.sens = float(sens)
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        # Data-parallel training (set_auto_parallel_context(parallel_mode=DATA_PARALLEL)):
        # the gradients are all-reduced over the ranks before the update, as MindSpore does.
        from pijit.nn.distributed import DistributedGradReducer, broadcast_parameters
        from pijit.parallel_context import _data_parallel, get_auto_parallel_context
        reduce, mean, degree = _data_parallel()
        self.reducer_flag = reduce and degree > 1
        self.grad_reducer = DistributedGradReducer(self.weights, mean, degree) \
            if self.reducer_flag else None
        if self.reducer_flag and get_auto_parallel_context("parameter_broadcast"):
            broadcast_parameters(self.weights)

    def construct(self, *inputs):
        loss, _, grads = _autodiff.vjp(self.network, inputs, (), self.weights, self.sens)
        if self.reducer_flag:
            grads = self.grad_reducer(grads)
        self.optimizer(grads)
        return loss


class ForwardValueAndGrad(Cell):
    """The network's output and its gradients: with respect to the inputs (get_all: every
    Tensor input; otherwise the first, unless get_by_list), to `weights` (get_by_list), or
    both as (inputs' gradients, weights' gradients). With sens_param the last input is the
    sensitivity; otherwise it is ones."""

    def __init__(self, network, weights=None, get_all=False, get_by_list=False, sens_param=False):
        super().__init__(auto_prefix=False)
        instance_of("ForwardValueAndGrad", "network", network, Cell)
        if get_by_list and weights is None:
            raise ValueError("ForwardValueAndGrad: get_by_list=True needs the weights")
        self.network = network
        self.__dict__["weights"] = ParameterTuple(weights) if get_by_list else None
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param

    def construct(self, *inputs):
        sens = 1.0
        if self.sens_param:
            inputs, sens = _autodiff.split_sensitivity(inputs, "ForwardValueAndGrad", "input")
        positions = _autodiff.grad_positions(inputs, self.get_all, self.get_by_list)
        out, gi, gw = _autodiff.vjp(self.network, inputs, positions, self.weights, sens)
        return out, _autodiff.chosen_gradients(gi, gw, self.get_all, self.get_by_list)


class WithEvalCell(Cell):
    """(loss_fn(network(data), label), network(data), label): an evaluation step's loss and
    outputs. add_cast_fp32 computes the loss from the outputs and label cast to float32."""

    def __init__(self, network, loss_fn, add_cast_fp32=False):
        super().__init__(auto_prefix=False)
        instance_of("WithEvalCell", "network", network, Cell)
        self._network = network
        self._loss_fn = loss_fn
        self.add_cast_fp32 = bool(add_cast_fp32)

    def construct(self, data, label):
        outputs = self._network(data)
        if self.add_cast_fp32:
            label = ops.cast(label, float32)
            outputs = ops.cast(outputs, float32)
        return self._loss_fn(outputs, label), outputs, label


class WithGradCell(Cell):
    """The gradients, with respect to network's trainable parameters, of network's output (of
    loss_fn on it when given: WithLossCell(network, loss_fn)), seeded with `sens` (ones when
    None)."""

    def __init__(self, network, loss_fn=None, sens=None):
        super().__init__(auto_prefix=False)
        instance_of("WithGradCell", "network", network, Cell)
        self.network = network if loss_fn is None else WithLossCell(network, loss_fn)
        self.__dict__["weights"] = ParameterTuple(network.trainable_params())
        self.sens = sens

    def construct(self, *inputs):
        _, _, grads = _autodiff.vjp(self.network, inputs, (), self.weights, self.sens)
        return grads
