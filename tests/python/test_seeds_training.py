"""The training example of shared/seeds/001 (MindSpore r1.6, 动态图与静态图): GradWrap, Momentum and
WithLossCell on an untrained LeNet-5, printing the loss 2.3025854. Only the import lines differ
from the document (`mindspore` -> `pijit`). It runs in a fresh interpreter, as a plain script
and under `python -m pijit`."""
import inspect
import textwrap

import pytest

import seed_lenet
from test_seeds import RUNNERS, run_example

# The document's text before and after its LeNet5 class; seed_lenet.py holds the class.
BEFORE_THE_NETWORK = '''
    import numpy as np
    import pijit.nn as nn
    from pijit import context, Tensor, ParameterTuple
    import pijit.ops as ops
    from pijit.common.initializer import Normal
    from pijit.nn import WithLossCell, Momentum

    # 设定为Graph模式,也可替换为PYNATIVE_MODE
    context.set_context(mode=context.GRAPH_MODE, device_target="Ascend")

'''
AFTER_THE_NETWORK = '''
    # 实例化网络
    net = LeNet5()

    class GradWrap(nn.Cell):
        """求函数输入梯度"""
        def __init__(self, network):
            super(GradWrap, self).__init__(auto_prefix=False)
            self.network = network
            # 用Tuple的形式包装weight
            self.weights = ParameterTuple(filter(lambda x: x.requires_grad, network.get_parameters()))

        def construct(self, x, label):
            weights = self.weights
            # 返回值为梯度
            return ops.GradOperation(get_by_list=True)(self.network, weights)(x, label)

    # 设定优化器、损失函数
    optimizer = Momentum(filter(lambda x: x.requires_grad, net.get_parameters()), 0.1, 0.9)
    criterion = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')

    # 通过WithLossCell获取Loss值
    net_with_criterion = WithLossCell(net, criterion)

    # 调用GradWrap
    train_network = GradWrap(net_with_criterion)
    train_network.set_train()

    # 产生输入数据
    input_data = Tensor(np.ones([32, 1, 32, 32]).astype(np.float32) * 0.01)
    label = Tensor(np.ones([32]).astype(np.int32))
    output = net(Tensor(input_data))

    # 利用前向网络计算loss
    loss_output = criterion(output, label)

    # 求得梯度
    grads = train_network(input_data, label)

    # 输出loss
    success = optimizer(grads)
    loss = loss_output.asnumpy()
    print(loss)
'''
SEED_001_TRAINING = (textwrap.dedent(BEFORE_THE_NETWORK) + inspect.getsource(seed_lenet.LeNet5)
                     + textwrap.dedent(AFTER_THE_NETWORK))


@pytest.mark.parametrize("runner", RUNNERS, ids=str)
def test_seed_001_training_example_prints_the_documented_loss(tmp_path, runner):
    assert "mindspore" not in SEED_001_TRAINING
    out = run_example(tmp_path, runner, SEED_001_TRAINING)
    assert abs(float(out.strip()) - 2.3025854) <= 1e-5, out
