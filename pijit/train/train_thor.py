"""Conversion to THOR (MindSpore's mindspore.train.train_thor): ConvertNetUtils replaces a
network's Dense, Conv2d and Embedding layers by DenseThor, Conv2dThor and EmbeddingThor
sharing their Parameters; ConvertModelUtils gives the Model that trains with the thor
optimizer."""
from pijit.nn.cell import Cell, _CellSequence
from pijit.nn.layers.basic import Dense, Embedding
from pijit.nn.layers.conv import Conv2d
from pijit.nn.layers.thor_layer import Conv2dThor, DenseThor, EmbeddingThor

__all__ = ["ConvertNetUtils", "ConvertModelUtils"]

_THOR_LAYERS = (DenseThor, Conv2dThor, EmbeddingThor)


def _prefix(param, own_name):
    """The path prefix of a layer's parameter ("fc1." for "fc1.weight")."""
    name = param.name or own_name
    return name[:-len(own_name)] if name.endswith(own_name) else ""


def _name_statistics(layer, prefix):
    """Gives the statistics the layer's path and lists them after the weight and bias (which
    were put back in place of the layer's own)."""
    params = layer._registry()[0]
    for key in ("matrix_a", "matrix_g", "a_normalizer"):
        if key in params:
            params[key].name = prefix + params[key].name
            params.move_to_end(key)


def _dense(old):
    new = DenseThor(old.in_channels, old.out_channels, has_bias=old.has_bias)
    new.weight = old.weight
    if old.has_bias:
        new.bias = old.bias
    new.activation, new.activation_flag = old.activation, old.activation_flag
    _name_statistics(new, _prefix(old.weight, "weight"))
    return new


def _conv2d(old):
    new = Conv2dThor(old.in_channels, old.out_channels, old.kernel_size, old.stride,
                     old.pad_mode, old.padding, old.dilation, old.group, old.has_bias)
    new.weight = old.weight
    if old.has_bias:
        new.bias = old.bias
    _name_statistics(new, _prefix(old.weight, "weight"))
    return new


def _embedding(old):
    new = EmbeddingThor(old.vocab_size, old.embedding_size, old.use_one_hot,
                        padding_idx=old.padding_idx)
    new.embedding_table = old.embedding_table
    _name_statistics(new, _prefix(old.embedding_table, "embedding_table"))
    return new


def _convertible(cell):
    """The converter for cell, or None: trainable Dense, Conv2d (group 1) and Embedding."""
    if type(cell) is Dense and cell.weight.requires_grad:
        return _dense
    if type(cell) is Conv2d and cell.weight.requires_grad and cell.group == 1:
        return _conv2d
    if type(cell) is Embedding and cell.embedding_table.requires_grad:
        return _embedding
    return None


def _replace_child(parent, name, new):
    """Puts `new` in place of parent's sub-cell `name` without renaming its Parameters (they
    already carry their path)."""
    parent._registry()[1][name] = new
    parent.__dict__[name] = new
    if isinstance(parent, _CellSequence):
        parent._sync()


class ConvertNetUtils:
    """Converts a network to THOR layers (MindSpore's ConvertNetUtils)."""

    def convert_to_thor_net(self, net):
        """Replaces, in place and recursively, every trainable Dense, Conv2d (group 1) and
        Embedding of net by its THOR layer, which shares the original weight and bias
        Parameters (so outputs and checkpoints are unchanged) and adds the statistic
        Parameters `<layer path>.matrix_a`, `.matrix_g` (and `.a_normalizer` for Conv2d).
        Layers already THOR are kept; exact subclasses of these layers are not converted."""
        if not isinstance(net, Cell):
            raise TypeError(f"convert_to_thor_net: net must be a Cell, got {type(net).__name__}")
        self._convert(net, set(), {})

    def _convert(self, cell, seen, converted):
        """converted maps a replaced layer's id to its THOR layer, so that a layer shared by
        several parents stays one layer."""
        if id(cell) in seen:
            return
        seen.add(id(cell))
        for name, child in list(cell.name_cells().items()):
            if isinstance(child, _THOR_LAYERS):
                continue
            convert = _convertible(child)
            if convert is None:
                self._convert(child, seen, converted)
                continue
            if id(child) not in converted:
                converted[id(child)] = (child, convert(child))  # the child kept alive for its id
                converted[id(child)][1].set_train(child.training)
            _replace_child(cell, name, converted[id(child)][1])


class ConvertModelUtils:
    """Gives the Model that trains with THOR (MindSpore's ConvertModelUtils)."""

    @staticmethod
    def convert_to_thor_model(model, network, loss_fn=None, optimizer=None, metrics=None,
                              amp_level="O0", loss_scale_manager=None, keep_batchnorm_fp32=False):
        """The Model that trains network with THOR's optimizer (thor()'s): pijit's THOR
        refreshes its inverses inside the ordinary training step, so this is `model` itself
        when it was built over network and optimizer (its mixed precision already applied),
        else an ordinary Model built with these arguments (a TrainOneStepCell network used as
        it is). With another optimizer, `model` unchanged."""
        from pijit.nn.optim_thor import Thor
        from pijit.nn.wrap import TrainOneStepCell
        from pijit.train.model import Model
        if not isinstance(optimizer, Thor):
            return model
        if isinstance(model, Model) and getattr(model, "_network", None) is network and \
                getattr(model, "_optimizer", None) is optimizer:
            return model
        if isinstance(network, TrainOneStepCell):
            return Model(network, metrics=metrics)
        kwargs = {"keep_batchnorm_fp32": keep_batchnorm_fp32}
        if loss_scale_manager is not None:
            kwargs["loss_scale_manager"] = loss_scale_manager
        return Model(network, loss_fn=loss_fn, optimizer=optimizer, metrics=metrics,
                     amp_level=amp_level, **kwargs)
