"""ops.isnan, isinf and isfinite (functions, Tensor methods and the IsNan/IsInf/IsFinite
primitives) against NumPy for every floating dtype and for integers, eagerly and jitted in
one graph."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

VALUES = np.array([1.5, np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, -7.0])


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16, ms.float32, ms.float64, ms.int32,
                                   ms.bool_])
def test_matches_numpy_eagerly_jitted_and_through_every_surface(name, dtype):
    x = ms.Tensor(VALUES).astype(dtype) if dtype != ms.int32 and dtype != ms.bool_ \
        else ms.Tensor(np.array([1, -2, 0, 7])).astype(dtype)
    reference = getattr(np, name)(x.astype(ms.float64).asnumpy())
    fn = getattr(ops, name)
    primitive = getattr(ops, {"isnan": "IsNan", "isinf": "IsInf", "isfinite": "IsFinite"}[name])()
    for got in (fn(x), getattr(x, name)(), primitive(x)):
        assert got.dtype == ms.bool_
        np.testing.assert_array_equal(got.asnumpy(), reference)

    def f(t):
        return fn(t)

    jf = ms.jit(f)
    ms.reset(jf)
    np.testing.assert_array_equal(jf(x).asnumpy(), reference)
    stats = ms.get_code_extra(jf)
    assert stats["total_break_count"] == 0 and stats["eager_count"] == 0, stats["all_reasons"]
