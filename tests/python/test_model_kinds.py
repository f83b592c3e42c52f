"""Networks of the kinds real MindSpore models are made of, written with MindSpore's API as a
user would: a MobileNetV3 block (depthwise convolution, squeeze-and-excite, HSwish), a ViT
block (patch embedding, TruncatedNormal init, MultiheadAttention), a BERT-style encoder
(Embedding, TransformerEncoder), a U-Net down/up block (Conv2dTranspose, GroupNorm,
interpolate), a DCGAN generator/discriminator pair (Conv2dTranspose, BatchNorm2d, LeakyReLU)
and an LSTM classifier. Each runs eagerly, under jit(capture_mode="bytecode") and in
GRAPH_MODE with equal results in one graph, and a jitted training step equals the eager one
and lowers the loss."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from pijit.common.initializer import TruncatedNormal


class SqueezeExcite(nn.Cell):
    def __init__(self, channels, reduced):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, reduced, 1, has_bias=True)
        self.expand = nn.Conv2d(reduced, channels, 1, has_bias=True)
        self.act = nn.ReLU()
        self.gate = nn.HSigmoid()

    def construct(self, x):
        return x * self.gate(self.expand(self.act(self.reduce(self.pool(x)))))


class MobileNetV3Block(nn.Cell):
    def __init__(self, cin=8, hidden=16, cout=8, classes=5):
        super().__init__()
        self.expand = nn.SequentialCell([nn.Conv2d(cin, hidden, 1), nn.BatchNorm2d(hidden),
                                         nn.HSwish()])
        self.depthwise = nn.SequentialCell([nn.Conv2d(hidden, hidden, 3, group=hidden),
                                            nn.BatchNorm2d(hidden), nn.HSwish()])
        self.se = SqueezeExcite(hidden, 4)
        self.project = nn.SequentialCell([nn.Conv2d(hidden, cout, 1), nn.BatchNorm2d(cout)])
        self.head = nn.Dense(cout, classes)

    def construct(self, x):
        y = self.project(self.se(self.depthwise(self.expand(x)))) + x
        return self.head(ops.mean(y, (2, 3)))


class ViTBlock(nn.Cell):
    def __init__(self, dim=16, heads=4, patch=4, classes=5):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch, has_bias=True,
                               weight_init=TruncatedNormal(0.02))
        self.cls = ms.Parameter(ms.Tensor(np.zeros((1, 1, dim), np.float32)), name="cls_token")
        self.norm1 = nn.LayerNorm((dim,), epsilon=1e-6)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm((dim,), epsilon=1e-6)
        self.mlp = nn.SequentialCell([nn.Dense(dim, 2 * dim, weight_init=TruncatedNormal(0.02)),
                                      nn.GELU(approximate=False), nn.Dense(2 * dim, dim)])
        self.head = nn.Dense(dim, classes)

    def construct(self, x):
        x = self.patch(x)
        b, d = x.shape[0], x.shape[1]
        x = ops.transpose(x.reshape((b, d, -1)), (0, 2, 1))
        x = ops.concat((ops.broadcast_to(self.cls, (b, 1, d)), x), 1)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.norm2(x))
        return self.head(x[:, 0])


class BertStyleEncoder(nn.Cell):
    def __init__(self, vocab=20, dim=16, heads=2, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=32, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.pooler = nn.Dense(dim, dim, activation="tanh")
        self.classifier = nn.Dense(dim, classes)

    def construct(self, ids):
        h = self.encoder(self.embed(ids))
        return self.classifier(self.pooler(h[:, 0]))


class UNetBlock(nn.Cell):
    def __init__(self, ch=4):
        super().__init__()
        self.down = nn.SequentialCell([nn.Conv2d(3, ch, 3, has_bias=True), nn.GroupNorm(2, ch),
                                       nn.ReLU(), nn.MaxPool2d(2, 2)])
        self.mid = nn.SequentialCell([nn.Conv2d(ch, 2 * ch, 3), nn.ReLU()])
        self.up = nn.Conv2dTranspose(2 * ch, ch, 2, stride=2, has_bias=True)
        self.out = nn.Conv2d(2 * ch, 1, 1, has_bias=True)

    def construct(self, x):
        d = self.down[0](x)
        skip = self.down[2](self.down[1](d))
        u = self.up(self.mid(self.down[3](skip)))
        u = ops.interpolate(u, size=skip.shape[2:], mode="bilinear")
        return self.out(ops.concat((u, skip), 1))


class Generator(nn.Cell):
    def __init__(self, latent=8, ch=8):
        super().__init__()
        self.net = nn.SequentialCell([
            nn.Conv2dTranspose(latent, 2 * ch, 4, stride=1, pad_mode="valid"),
            nn.BatchNorm2d(2 * ch), nn.ReLU(),
            nn.Conv2dTranspose(2 * ch, ch, 4, stride=2, pad_mode="pad", padding=1),
            nn.BatchNorm2d(ch), nn.ReLU(),
            nn.Conv2dTranspose(ch, 1, 4, stride=2, pad_mode="pad", padding=1), nn.Tanh()])

    def construct(self, z):
        return self.net(z)


class Discriminator(nn.Cell):
    def __init__(self, ch=8):
        super().__init__()
        self.net = nn.SequentialCell([
            nn.Conv2d(1, ch, 4, stride=2, pad_mode="pad", padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, 2 * ch, 4, stride=2, pad_mode="pad", padding=1),
            nn.BatchNorm2d(2 * ch), nn.LeakyReLU(0.2),
            nn.Conv2d(2 * ch, 1, 4, pad_mode="valid"), nn.Flatten()])

    def construct(self, x):
        return self.net(x)


class GanPair(nn.Cell):
    """D(G(z)): the generator's output scored by the discriminator."""

    def __init__(self):
        super().__init__()
        self.generator, self.discriminator = Generator(), Discriminator()

    def construct(self, z):
        return self.discriminator(self.generator(z))


class LSTMClassifier(nn.Cell):
    def __init__(self, vocab=12, dim=8, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Dense(2 * dim, classes)

    def construct(self, ids):
        out, (h, _) = self.lstm(self.embed(ids))
        return self.head(ops.concat((h[-2], h[-1]), 1))


def _inputs(name, rng):
    if name in ("bert", "lstm"):
        return ms.Tensor(rng.integers(0, 12, (4, 6)).astype(np.int32))
    shape = {"mobilenet": (4, 8, 8, 8), "vit": (4, 3, 8, 8), "unet": (2, 3, 10, 10),
             "gan": (4, 8, 1, 1)}[name]
    return ms.Tensor(rng.standard_normal(shape).astype(np.float32))


MODELS = {"mobilenet": MobileNetV3Block, "vit": ViTBlock, "bert": BertStyleEncoder,
          "unet": UNetBlock, "gan": GanPair, "lstm": LSTMClassifier}


def _build(name, seed=0):
    ms.set_seed(seed)
    return MODELS[name]()


@pytest.fixture
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("name", MODELS)
def test_forward_eager_equals_bytecode_jit_in_one_graph(name):
    net = _build(name)
    x = _inputs(name, np.random.default_rng(1))
    eager = net(x).asnumpy()
    jf = ms.jit(net.construct, capture_mode="bytecode")
    for _ in range(2):
        np.testing.assert_allclose(jf(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]


@pytest.mark.parametrize("name", MODELS)
def test_graph_mode_equals_eager(name, graph_mode):
    x = _inputs(name, np.random.default_rng(2))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = _build(name)(x).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    np.testing.assert_allclose(_build(name)(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def _train(name, jitted, steps=8):
    net = _build(name, seed=3)
    net.set_train()
    rng = np.random.default_rng(4)
    x = _inputs(name, rng)
    probe = net(x)
    target = ms.Tensor(rng.standard_normal(probe.shape).astype(np.float32))
    opt = nn.Adam(net.trainable_params(), learning_rate=0.01)

    def loss_fn(x, target):
        return ops.mse_loss(net(x), target)

    grad_fn = ms.value_and_grad(loss_fn, None, opt.parameters)

    def step(x, target):
        loss, grads = grad_fn(x, target)
        opt(grads)
        return loss

    step = ms.jit(step, capture_mode="bytecode") if jitted else step
    return [float(step(x, target).asnumpy()) for _ in range(steps)]


@pytest.mark.parametrize("name", MODELS)
def test_training_step_jitted_equals_eager_and_learns(name):
    eager, jitted = _train(name, False), _train(name, True)
    np.testing.assert_allclose(jitted, eager, rtol=2e-3, atol=1e-5)
    assert eager[-1] < eager[0], eager
