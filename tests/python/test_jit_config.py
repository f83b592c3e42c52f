"""JitConfig (MindSpore's compile settings) and Cell.set_jit_config: jit_level "O0" runs a
GRAPH_MODE cell's graph as captured, other levels optimise; the values are checked as
MindSpore checks them."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops


class Chain(nn.Cell):
    def construct(self, x, y):
        return ops.relu(x * y + x) - y * 0.5


def inputs():
    rng = np.random.default_rng(0)
    return (ms.Tensor(rng.standard_normal((4, 5)).astype(np.float32)),
            ms.Tensor(rng.standard_normal((4, 5)).astype(np.float32)))


@pytest.fixture
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def stats_of(net):
    """What was compiled for the class's construct, at every level (one code object)."""
    compiled = type(net).__dict__["_pijit_graph_constructs"][1]
    return ms.get_code_extra(next(iter(compiled.values())))


def test_defaults_and_dict_are_mindspores():
    cfg = ms.JitConfig()
    assert cfg.jit_config_dict == {"jit_level": "", "exc_mode": "auto", "jit_syntax_level": "",
                                   "debug_level": "RELEASE", "infer_boost": "off"}
    cfg = ms.JitConfig(jit_level="O1", exc_mode="no_sink", custom=3)
    assert cfg.jit_config_dict["jit_level"] == "O1"
    assert cfg.jit_config_dict["exc_mode"] == "no_sink"
    assert cfg.jit_config_dict["custom"] == 3
    assert "O1" in repr(cfg)


@pytest.mark.parametrize("name, value", [("jit_level", "O3"), ("exc_mode", "fast"),
                                         ("jit_syntax_level", "strict"),
                                         ("debug_level", "INFO"), ("infer_boost", "yes")])
def test_bad_values_name_the_setting(name, value):
    with pytest.raises(ValueError, match=f"JitConfig: {name} must be one of"):
        ms.JitConfig(**{name: value})


def test_o0_cell_runs_unoptimised_graph_with_eager_values(graph_mode):
    x, y = inputs()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    want = Chain()(x, y).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    plain, optimised = Chain(), Chain()
    plain.set_jit_config(ms.JitConfig(jit_level="O0"))
    np.testing.assert_array_equal(plain(x, y).asnumpy(), want)
    (unfused,) = stats_of(plain)["graphs"]
    assert "fused" not in unfused and "relu" in unfused
    np.testing.assert_array_equal(optimised(x, y).asnumpy(), want)
    graphs = stats_of(optimised)["graphs"]
    assert len(graphs) == 2 and unfused in graphs
    assert any("fused" in g for g in graphs)
    # Each instance keeps running its own level's graph: no recompiles on further calls.
    compiles = stats_of(plain)["compile_count"]
    for _ in range(2):
        np.testing.assert_array_equal(plain(x, y).asnumpy(), want)
        np.testing.assert_array_equal(optimised(x, y).asnumpy(), want)
    assert stats_of(plain)["compile_count"] == compiles
    assert plain._jit_config_dict["jit_level"] == "O0"


def test_only_the_first_setting_counts(graph_mode):
    net = Chain()
    net.set_jit_config({"jit_level": "O0"})
    with pytest.warns(RuntimeWarning, match="set once"):
        net.set_jit_config(ms.JitConfig(jit_level="O1"))
    assert net._jit_config_dict["jit_level"] == "O0"


def test_jit_takes_a_jit_config_object():
    def chain(x, y):
        return ops.relu(x * y + x) - y * 0.5

    x, y = inputs()
    jf = ms.jit(chain, capture_mode="bytecode", jit_config=ms.JitConfig(jit_level="O0"))
    ms.reset(jf)
    np.testing.assert_array_equal(jf(x, y).asnumpy(), chain(x, y).asnumpy())
    assert "fused" not in ms.get_code_extra(jf)["graphs"][0]
    with pytest.raises(TypeError, match="jit_config must be a JitConfig"):
        ms.jit(chain, jit_config="O0")
    with pytest.raises(TypeError, match="jit_config must be a JitConfig"):
        Chain().set_jit_config(3)
