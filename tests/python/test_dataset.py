"""pijit.dataset (MindSpore's mindspore.dataset): sources, batch/shuffle/map/repeat/take/skip,
iterators, seeds and transforms, checked against plain Python and NumPy expectations."""
import numpy as np
import pytest

import pijit as ms
import pijit.dataset as ds
from pijit.dataset import transforms, vision


def rows(dataset, **kwargs):
    """One epoch of `dataset` as lists of NumPy arrays."""
    return [list(r) for r in dataset.create_tuple_iterator(output_numpy=True, num_epochs=1,
                                                           **kwargs)]


def column(dataset, index=0):
    return [r[index].tolist() for r in rows(dataset)]


# ---- NumpySlicesDataset ------------------------------------------------------------------------

def test_numpy_slices_column_names_from_dict_tuple_and_list():
    d = ds.NumpySlicesDataset({"x": [[1, 2], [3, 4]], "y": [5, 6]}, shuffle=False)
    assert d.get_col_names() == ["x", "y"]
    assert [[a.tolist(), b.tolist()] for a, b in rows(d)] == [[[1, 2], 5], [[3, 4], 6]]
    t = ds.NumpySlicesDataset(([1, 2, 3], [4.0, 5.0, 6.0]), shuffle=False)
    assert t.get_col_names() == ["column_0", "column_1"]
    assert column(t, 1) == [4.0, 5.0, 6.0]
    # A list is one column, sliced along its first axis.
    single = ds.NumpySlicesDataset([[1, 2], [3, 4], [5, 6]], shuffle=False)
    assert single.get_col_names() == ["column_0"]
    assert column(single) == [[1, 2], [3, 4], [5, 6]]
    named = ds.NumpySlicesDataset(np.arange(4), column_names=["n"], shuffle=False)
    assert named.get_col_names() == ["n"] and named.get_dataset_size() == 4


def test_numpy_slices_argument_errors():
    with pytest.raises(ValueError, match="NumpySlicesDataset.*column_names.*2 columns.*has 1"):
        ds.NumpySlicesDataset([1, 2], column_names=["a", "b"])
    with pytest.raises(ValueError, match="NumpySlicesDataset.*different lengths"):
        ds.NumpySlicesDataset(([1, 2], [1, 2, 3]))
    with pytest.raises(TypeError, match="NumpySlicesDataset.*'data'"):
        ds.NumpySlicesDataset(5)
    with pytest.raises(TypeError, match="NumpySlicesDataset.*'shuffle'"):
        ds.NumpySlicesDataset([1, 2], shuffle="yes")
    with pytest.raises(ValueError, match="NumpySlicesDataset.*twice"):
        ds.NumpySlicesDataset(([1], [2]), column_names=["a", "a"])
    with pytest.raises(NotImplementedError, match="sampler"):
        ds.NumpySlicesDataset([1, 2], sampler=object())
    with pytest.raises(ValueError, match="together"):
        ds.NumpySlicesDataset([1, 2], num_shards=2)
    with pytest.raises(ValueError, match="shard_id"):
        ds.NumpySlicesDataset([1, 2], num_shards=2, shard_id=2)
    with pytest.raises(TypeError, match="num_shards"):
        ds.NumpySlicesDataset([1, 2], num_shards=2.0, shard_id=0)


def test_numpy_slices_shuffles_by_default_and_the_seed_fixes_the_order():
    data = list(range(50))
    ds.config.set_seed(7)
    first = column(ds.NumpySlicesDataset(data, column_names=["v"]))
    ds.config.set_seed(7)
    again = column(ds.NumpySlicesDataset(data, column_names=["v"]))
    assert sorted(first) == data and first != data
    assert first == again
    ds.config.set_seed(8)
    assert column(ds.NumpySlicesDataset(data, column_names=["v"])) != first
    assert column(ds.NumpySlicesDataset(data, column_names=["v"], shuffle=False)) == data


def test_each_epoch_of_an_iterator_shuffles_anew():
    ds.config.set_seed(3)
    d = ds.NumpySlicesDataset(list(range(20)), column_names=["v"])
    iterator = d.create_tuple_iterator(num_epochs=2, output_numpy=True)
    epochs = [[int(r[0]) for r in iterator] for _ in range(2)]
    assert all(sorted(e) == list(range(20)) for e in epochs)
    assert epochs[0] != epochs[1]
    assert [int(r[0]) for r in iterator] == []  # two epochs only


def test_num_samples_limits_the_rows():
    d = ds.NumpySlicesDataset(list(range(10)), column_names=["v"], shuffle=False, num_samples=4)
    assert column(d) == [0, 1, 2, 3] and d.get_dataset_size() == 4


# ---- batch ---------------------------------------------------------------------------------------

def test_batch_stacks_rows_and_keeps_or_drops_the_remainder():
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    y = np.arange(7)
    d = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False)
    kept = d.batch(3)
    assert kept.get_dataset_size() == 3 and kept.get_batch_size() == 3
    batches = rows(kept)
    assert [b[0].shape for b in batches] == [(3, 2), (3, 2), (1, 2)]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), x)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)
    dropped = d.batch(3, drop_remainder=True)
    assert dropped.get_dataset_size() == 2
    assert [b[1].tolist() for b in rows(dropped)] == [[0, 1, 2], [3, 4, 5]]


def test_batch_of_different_shapes_and_bad_arguments():
    ragged = ds.GeneratorDataset([(np.zeros(2),), (np.zeros(3),)], ["r"], shuffle=False)
    with pytest.raises(RuntimeError, match="column 'r' have different shapes"):
        rows(ragged.batch(2))
    d = ds.NumpySlicesDataset([1, 2, 3])
    with pytest.raises(ValueError, match="batch.*'batch_size' must be in \\[1"):
        d.batch(0)
    with pytest.raises(TypeError, match="batch.*'batch_size' must be an int"):
        d.batch(2.0)
    with pytest.raises(TypeError, match="batch.*'drop_remainder' must be a bool"):
        d.batch(2, drop_remainder=1)
    with pytest.raises(NotImplementedError, match="per_batch_map"):
        d.batch(2, per_batch_map=lambda *a: a)


# ---- shuffle -------------------------------------------------------------------------------------

def test_shuffle_buffer_is_a_permutation_that_moves_rows_back_at_most_buffer_size():
    data = list(range(100))
    ds.config.set_seed(11)
    base = ds.NumpySlicesDataset(data, column_names=["v"], shuffle=False)
    for buffer_size in (2, 5, 100, 1000):
        out = column(base.shuffle(buffer_size))
        assert sorted(out) == data
        # A row enters the buffer when read and leaves on a later step: it can come out at most
        # buffer_size - 1 places before its input position.
        assert all(position >= value - (buffer_size - 1) for position, value in enumerate(out))
    assert column(base.shuffle(100)) != data
    assert base.shuffle(10).get_dataset_size() == 100


def test_shuffle_is_reproducible_with_the_seed():
    base = ds.NumpySlicesDataset(list(range(30)), column_names=["v"], shuffle=False)
    ds.config.set_seed(5)
    a = column(base.shuffle(8))
    ds.config.set_seed(5)
    b = column(base.shuffle(8))
    assert a == b
    with pytest.raises(ValueError, match="shuffle.*'buffer_size' must be in \\[2"):
        base.shuffle(1)


# ---- map -----------------------------------------------------------------------------------------

def test_map_applies_operations_in_turn_to_the_first_column_by_default():
    d = ds.NumpySlicesDataset(([1, 2, 3], [10, 20, 30]), column_names=["a", "b"], shuffle=False)
    mapped = d.map([lambda v: v + 1, lambda v: v * 10])
    assert mapped.get_col_names() == ["a", "b"]
    assert [(a.tolist(), b.tolist()) for a, b in rows(mapped)] == [(20, 10), (30, 20), (40, 30)]
    on_b = d.map(lambda v: -v, input_columns="b")
    assert column(on_b, 1) == [-10, -20, -30] and column(on_b, 0) == [1, 2, 3]


def test_map_with_several_input_and_output_columns_orders_the_columns():
    d = ds.NumpySlicesDataset(([1, 2], [3, 4], [5, 6]), column_names=["a", "b", "c"],
                              shuffle=False)
    # b and c become their sum and product, where b was; a keeps its place.
    out = d.map(lambda b, c: (b + c, b * c), input_columns=["b", "c"],
                output_columns=["sum", "product"])
    assert out.get_col_names() == ["a", "sum", "product"]
    assert [[v.tolist() for v in r] for r in rows(out)] == [[1, 8, 15], [2, 10, 24]]
    merged = d.map(lambda a, c: a + c, input_columns=["a", "c"], output_columns=["ac"])
    assert merged.get_col_names() == ["ac", "b"]
    assert [[v.tolist() for v in r] for r in rows(merged)] == [[6, 3], [8, 4]]


def test_map_errors_name_the_problem():
    d = ds.NumpySlicesDataset(([1, 2], [3, 4]), column_names=["a", "b"], shuffle=False)
    with pytest.raises(ValueError, match="map: input_columns \\['z'\\] are not columns"):
        d.map(lambda v: v, input_columns="z")
    with pytest.raises(TypeError, match="map: 'operations' must be a callable"):
        d.map(5)
    with pytest.raises(ValueError, match="map: output_columns \\['b'\\] are already columns"):
        d.map(lambda v: v, input_columns="a", output_columns="b")
    wrong_count = d.map(lambda v: (v, v), input_columns="a")
    with pytest.raises(RuntimeError, match="return 2 columns, but output_columns names 1"):
        rows(wrong_count)


def test_map_accepts_tensors_returned_by_operations():
    d = ds.NumpySlicesDataset(np.ones((2, 3), np.float32), column_names=["x"], shuffle=False)
    out = d.map(lambda v: ms.Tensor(v) * 2.0)
    np.testing.assert_array_equal(np.stack(column(out)), np.full((2, 3), 2.0))


# ---- repeat, take, skip, project, rename -------------------------------------------------------

def test_repeat_take_and_skip_match_python_slicing():
    data = list(range(7))
    d = ds.NumpySlicesDataset(data, column_names=["v"], shuffle=False)
    assert column(d.repeat(3)) == data * 3 and d.repeat(3).get_dataset_size() == 21
    assert d.repeat(2).get_repeat_count() == 2
    assert column(d.take(3)) == data[:3] and d.take(3).get_dataset_size() == 3
    assert column(d.take(100)) == data and d.take(100).get_dataset_size() == 7
    assert column(d.take(-1)) == data
    assert column(d.skip(5)) == data[5:] and d.skip(5).get_dataset_size() == 2
    assert column(d.skip(10)) == [] and d.skip(10).get_dataset_size() == 0
    assert column(d.skip(2).take(3)) == data[2:5]
    endless = d.repeat()
    assert endless.get_dataset_size() == -1
    assert column(endless.take(17)) == (data * 3)[:17]
    assert d.batch(2).repeat(2).get_dataset_size() == 8
    assert [len(b[0]) for b in rows(d.repeat(2).batch(4))] == [4, 4, 4, 2]


def test_shuffle_before_repeat_shuffles_each_round_anew():
    ds.config.set_seed(2)
    d = ds.NumpySlicesDataset(list(range(12)), column_names=["v"], shuffle=False)
    out = column(d.shuffle(12).repeat(2))
    first, second = out[:12], out[12:]
    assert sorted(first) == sorted(second) == list(range(12))
    assert first != second


def test_repeat_take_skip_argument_errors():
    d = ds.NumpySlicesDataset([1, 2])
    with pytest.raises(ValueError, match="repeat: 'count' must be -1"):
        d.repeat(0)
    with pytest.raises(ValueError, match="take: 'count' must be in \\[-1"):
        d.take(-2)
    with pytest.raises(ValueError, match="skip: 'count' must be in \\[0"):
        d.skip(-1)
    with pytest.raises(TypeError, match="skip: 'count' must be an int"):
        d.skip("1")


def test_project_and_rename():
    d = ds.NumpySlicesDataset(([1], [2], [3]), column_names=["a", "b", "c"], shuffle=False)
    projected = d.project(["c", "a"])
    assert projected.get_col_names() == ["c", "a"]
    assert [[v.tolist() for v in r] for r in rows(projected)] == [[3, 1]]
    renamed = d.rename(["a", "c"], ["x", "z"])
    assert renamed.get_col_names() == ["x", "b", "z"]
    with pytest.raises(ValueError, match="project: \\['q'\\] are not columns"):
        d.project("q")
    with pytest.raises(ValueError, match="rename: .*same length"):
        d.rename(["a"], ["x", "y"])


# ---- iterators -----------------------------------------------------------------------------------

def test_iterators_yield_tensors_or_numpy_arrays():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([1, 0, 1], np.int32)
    d = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(2)
    first = next(d.create_tuple_iterator())
    assert isinstance(first, list) and all(isinstance(v, ms.Tensor) for v in first)
    assert first[0].dtype == ms.float32 and first[1].dtype == ms.int32
    np.testing.assert_array_equal(first[0].asnumpy(), x[:2])
    as_dict = next(d.create_dict_iterator())
    assert list(as_dict) == ["x", "y"] and isinstance(as_dict["y"], ms.Tensor)
    numpy_dict = next(d.create_dict_iterator(output_numpy=True))
    assert isinstance(numpy_dict["x"], np.ndarray)
    only_y = next(d.create_tuple_iterator(columns=["y"], output_numpy=True))
    assert len(only_y) == 1 and only_y[0].tolist() == [1, 0]
    # Iterating the dataset itself is one epoch of the tuple iterator.
    assert [len(b) for b in d] == [2, 2]
    assert sum(1 for _ in d) == 2


def test_iterator_epochs_and_errors():
    d = ds.NumpySlicesDataset(list(range(3)), column_names=["v"], shuffle=False)
    iterator = d.create_tuple_iterator(num_epochs=3, output_numpy=True)
    seen = [[int(r[0]) for r in iterator] for _ in range(4)]
    assert seen == [[0, 1, 2], [0, 1, 2], [0, 1, 2], []]
    endless = d.create_dict_iterator(output_numpy=True)
    assert [[int(r["v"]) for r in endless] for _ in range(5)] == [[0, 1, 2]] * 5
    stopped = d.create_tuple_iterator()
    stopped.stop()
    assert list(stopped) == []
    with pytest.raises(ValueError, match="'num_epochs' must be -1 or a positive int"):
        d.create_tuple_iterator(num_epochs=0)
    with pytest.raises(ValueError, match="\\['w'\\] are not columns"):
        d.create_tuple_iterator(columns=["w"])
    assert d.output_shapes() == [[]] and d.output_types() == [np.dtype(np.int64)]


# ---- GeneratorDataset ----------------------------------------------------------------------------

def test_generator_dataset_from_a_generator_function():
    def source():
        for i in range(5):
            yield np.array([i, i * i]), np.int32(i)

    d = ds.GeneratorDataset(source, column_names=["pair", "i"])
    assert d.get_dataset_size() == 5 and d.get_col_names() == ["pair", "i"]
    got = rows(d)
    assert [r[0].tolist() for r in got] == [[i, i * i] for i in range(5)]
    assert [r[1].dtype for r in got] == [np.dtype(np.int32)] * 5
    assert column(d.repeat(2), 1) == list(range(5)) * 2  # the function is called again
    with pytest.raises(ValueError, match="shuffle=True needs a random-access source"):
        ds.GeneratorDataset(source, ["pair", "i"], shuffle=True)


def test_generator_dataset_from_random_access_and_iterable_sources():
    class RandomAccess:
        def __init__(self):
            self.data = np.arange(10, dtype=np.float32)

        def __getitem__(self, index):
            return self.data[index], np.int64(index)

        def __len__(self):
            return len(self.data)

    ordered = ds.GeneratorDataset(RandomAccess(), ["x", "i"], shuffle=False)
    assert column(ordered, 1) == list(range(10))
    ds.config.set_seed(1)
    shuffled = column(ds.GeneratorDataset(RandomAccess(), ["x", "i"]), 1)
    assert sorted(shuffled) == list(range(10)) and shuffled != list(range(10))

    class Iterable:
        def __iter__(self):
            return iter([(np.array(i),) for i in range(4)])

    assert column(ds.GeneratorDataset(Iterable(), "v")) == [0, 1, 2, 3]
    generator = (np.array(i) for i in range(3))
    once = ds.GeneratorDataset(generator, ["v"])
    assert column(once) == [0, 1, 2] and column(once) == [0, 1, 2]  # replayed
    typed = ds.GeneratorDataset([(1,), (2,)], ["v"], column_types=[ms.float32], shuffle=False)
    assert rows(typed)[0][0].dtype == np.float32
    limited = ds.GeneratorDataset(Iterable(), ["v"], num_samples=2)
    assert column(limited) == [0, 1] and limited.get_dataset_size() == 2


def test_generator_dataset_errors():
    with pytest.raises(ValueError, match="GeneratorDataset: 'column_names' is required"):
        ds.GeneratorDataset([(1,)])
    with pytest.raises(TypeError, match="GeneratorDataset: 'source' must be"):
        ds.GeneratorDataset(5, ["v"])
    wrong = ds.GeneratorDataset([(1, 2)], ["v"], shuffle=False)
    with pytest.raises(RuntimeError, match="yielded 2 columns, but column_names names 1"):
        rows(wrong)
    with pytest.raises(ValueError, match="'column_types' must list one dtype per column"):
        ds.GeneratorDataset([(1,)], ["v"], column_types=[ms.int32, ms.int32])


# ---- transforms ----------------------------------------------------------------------------------

def test_type_cast_and_compose():
    d = ds.NumpySlicesDataset([1.7, 2.2], column_names=["v"], shuffle=False)
    cast = d.map(transforms.TypeCast(ms.int32))
    out = rows(cast)
    assert [r[0].dtype for r in out] == [np.dtype(np.int32)] * 2 and column(cast) == [1, 2]
    assert transforms.TypeCast(np.float16)(np.array([1, 2])).dtype == np.float16
    composed = transforms.Compose([lambda v: v * 2, transforms.TypeCast(ms.int64)])
    assert column(d.map(composed)) == [3, 4]
    with pytest.raises(TypeError, match="TypeCast: 'data_type'"):
        transforms.TypeCast("not a type")
    with pytest.raises(TypeError, match="Compose: 'transforms'"):
        transforms.Compose([])


def test_vision_transforms_match_numpy():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (4, 5, 3)).astype(np.uint8)
    rescaled = vision.Rescale(1.0 / 255, -0.5)(image)
    np.testing.assert_allclose(rescaled, image / 255.0 - 0.5, rtol=1e-6, atol=1e-6)
    assert rescaled.dtype == np.float32
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.25, 2.0]
    normalized = vision.Normalize(mean, std)(rescaled)
    np.testing.assert_allclose(normalized, (rescaled - mean) / np.array(std), rtol=1e-5)
    chw = vision.HWC2CHW()(normalized)
    assert chw.shape == (3, 4, 5)
    np.testing.assert_array_equal(chw, normalized.transpose(2, 0, 1))
    np.testing.assert_allclose(vision.Normalize(mean, std, is_hwc=False)(chw),
                               (chw - np.reshape(mean, (3, 1, 1))) / np.reshape(std, (3, 1, 1)),
                               rtol=1e-5)
    gray = np.ones((4, 5))
    assert vision.HWC2CHW()(gray).shape == (4, 5)
    pipeline = ds.NumpySlicesDataset(image[None], column_names=["image"], shuffle=False).map(
        [vision.Rescale(1.0 / 255, 0.0), vision.HWC2CHW()])
    assert rows(pipeline)[0][0].shape == (3, 4, 5)
    with pytest.raises(ValueError, match="Normalize: every 'std' must be > 0"):
        vision.Normalize([0.0], [0.0])
    with pytest.raises(ValueError, match="Normalize: the image has 3 channels"):
        vision.Normalize([0.0], [1.0])(image)
    with pytest.raises(TypeError, match="Rescale: 'rescale' must be a number"):
        vision.Rescale("1", 0)


# ---- config --------------------------------------------------------------------------------------

def test_config_seed_and_settings():
    ds.config.set_seed(123)
    assert ds.config.get_seed() == 123
    # set_seed also seeds numpy.random, as MindSpore's does.
    a = np.random.rand()
    ds.config.set_seed(123)
    assert np.random.rand() == a
    with pytest.raises(ValueError, match="set_seed: 'seed' must be in \\[0, 4294967295\\]"):
        ds.config.set_seed(-1)
    with pytest.raises(TypeError, match="set_seed: 'seed' must be an int"):
        ds.config.set_seed(1.5)
    ds.config.set_num_parallel_workers(4)
    assert ds.config.get_num_parallel_workers() == 4
    with pytest.raises(ValueError, match="set_num_parallel_workers"):
        ds.config.set_num_parallel_workers(0)


@pytest.mark.parametrize("num_shards", [1, 2, 3, 4])
def test_shards_take_strided_rows_wrapping_around_as_mindspore(num_shards):
    # MindSpore 2.10, NumpySlicesDataset(np.arange(10), shuffle=False, num_shards=3,
    # shard_id=k): [0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1].
    rows = 10
    per_shard = -(-rows // num_shards)
    seen = []
    for k in range(num_shards):
        d = ds.NumpySlicesDataset(np.arange(rows), column_names=["v"], shuffle=False,
                                  num_shards=num_shards, shard_id=k)
        got = column(d)
        assert got == [(k + num_shards * j) % rows for j in range(per_shard)]
        assert d.get_dataset_size() == per_shard
        seen += got
    assert set(seen) == set(range(rows))


def test_shuffled_shards_split_one_permutation():
    ds.config.set_seed(3)
    shards = [column(ds.NumpySlicesDataset(list(range(12)), column_names=["v"], num_shards=3,
                                           shard_id=k)) for k in range(3)]
    assert sorted(v for s in shards for v in s) == list(range(12))
